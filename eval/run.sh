#!/usr/bin/env bash
# The paper's evaluation end to end, in one command: installs and builds what it needs
# (scripts/setup.sh), starts Open vSwitch (userspace), runs eval/eval.py with the given arguments
# and renders the report (eval/report.py) into the output directory.
#
# usage: eval/run.sh [--scale small|paper] [--modes sharded,cooperative] [--runs N] [--out DIR]
#                    [--publish DIR] [--no-setup] [eval.py options...]   (eval/README.md lists them all)
#   eval/run.sh                       # small: 16 hosts, 1 run per mode, a few minutes (what CI runs)
#   eval/run.sh --scale paper --publish docs/eval   # 500 hosts, 60 s rotation, 10 runs per mode
# --publish DIR copies what is worth keeping (report.md/.json, figures, params.json, effect.json,
# every run's result.json) from the output directory into DIR; the raw per-pair logs stay behind.
# Exit status: 0 every run and effectiveness config was measured without a problem (eval.py's
# correctness checks: every phase produced numbers, no setup failure, no mid-session break, ...).
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib/common.sh"
cd "$SDN_ROOT"
SETUP=1 ARGS=() OUT="" PUBLISH=""
while (($#)); do
  case $1 in
    --no-setup) SETUP=0; shift ;;
    --publish) PUBLISH=$2; shift 2 ;;
    --out) OUT=$2; ARGS+=("$1" "$2"); shift 2 ;;
    -h|--help) sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exec /usr/bin/python3 eval/eval.py --help ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
need_root "eval/run.sh"
((SETUP)) && bash scripts/setup.sh
need_cmds ip ovs-vsctl ovs-ofctl iperf3 nmap ping
bash scripts/ovs.sh start >/dev/null
if [[ -z $OUT ]]; then
  OUT="$SDN_ROOT/eval/out/$(date +%Y%m%d-%H%M%S)"
  ARGS+=(--out "$OUT")
fi
rc=0
/usr/bin/python3 eval/eval.py "${ARGS[@]}" || rc=$?
if [[ -f $OUT/params.json ]]; then
  /usr/bin/python3 eval/report.py "$OUT" || { warn "report failed"; rc=1; }
  log "eval: report in $OUT/report.md"
  if [[ -n $PUBLISH ]]; then
    mkdir -p "$PUBLISH"
    cp "$OUT"/report.md "$OUT"/report.json "$OUT"/params.json "$PUBLISH"/
    for f in "$OUT"/*.png "$OUT"/effect.json; do [[ -f $f ]] && cp "$f" "$PUBLISH"/; done
    for r in "$OUT"/*/run-*/result.json; do
      d="$PUBLISH/runs/$(basename "$(dirname "$(dirname "$r")")")-$(basename "$(dirname "$r")").json"
      mkdir -p "$PUBLISH/runs"; cp "$r" "$d"
    done
    log "eval: published to $PUBLISH"
  fi
fi
exit $rc
