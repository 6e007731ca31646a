#!/usr/bin/env bash
# The side-by-side report in one run: ofbench (emulated OpenFlow 1.3 switches) against
#   - sdnator with CPAM in `sharded`, `cooperative` and `cooperative` + yield runtime modes,
#     same CPAM config, on the paper's campus (the Ryu pathology and the fix on one chart);
#   - sdnator's learning switch vs ovs-testcontroller, latency and throughput modes;
#   - the RFC 8456 metrics against sdnator (loss-free rate, control sessions capacity,
#     forwarding table capacity, topology discovery, exception handling, DoS handling).
# Writes OUT/report.json, the figures, report.html and report.md (scripts/ofbench_report.py).
#
#   bash scripts/ofbench_compare.sh [--out DIR] [--hosts N] [--interval-ms T] [--duration S]
#        [--lambda L] [--batch B] [--quick] [--skip cpam,learning,rfc] [--shard-counts 4,8]
#        [--nice N]
# Default: 500 hosts (19 switches), T = 10 s, Table 1 batches (20 hosts, 150 ms apart), 40 s per
# CPAM run. --quick: seconds per run. --nice N: also sharded and cooperative + yield with
# [controller] shard_nice = N (the shard threads ahead of ofbench; needs root for N < 0).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

ARGS="$*"  # for the report's Command line (the loop below shifts them away)
OUT="$SDN_ROOT/docs/ofbench"
HOSTS=500 INTERVAL_MS=10000 DURATION=40 LAMBDA=50 BATCH=20 QUICK=0 SKIP="" EXTRA_CPAM="" SHARD_COUNTS="" NICE=""
while (($#)); do
  case $1 in
    --out) OUT=$2; shift 2 ;;
    --hosts) HOSTS=$2; shift 2 ;;
    --interval-ms) INTERVAL_MS=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --lambda) LAMBDA=$2; shift 2 ;;
    --batch) BATCH=$2; shift 2 ;;
    --cpam-extra) EXTRA_CPAM=$2; shift 2 ;;   # more [cpam] TOML lines, e.g. 'vip_range = "10.128.0.0/11"'
    --quick) QUICK=1; shift ;;
    --shard-counts) SHARD_COUNTS=$2; shift 2 ;;  # e.g. 4,8: more sharded runs with that many shards
    --nice) NICE=$2; shift 2 ;;
    --skip) SKIP=$2; shift 2 ;;
    -h|--help) sed -n 2,15p "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
BIN="$SDN_ROOT/build/bin"
[[ -x $BIN/ofbench && -x $BIN/sdnator ]] || die "build first (scripts/setup.sh)"
command -v ovs-testcontroller >/dev/null || warn "ovs-testcontroller missing (apt-get install openvswitch-testcontroller): learning comparison skipped"
PY=/usr/bin/python3  # Debian's python3 has matplotlib
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/ofbench-compare.XXXXXX)
CTRL_PID=""
cleanup() {
  [[ -z $CTRL_PID ]] || { kill "$CTRL_PID" 2>/dev/null || true; wait "$CTRL_PID" 2>/dev/null || true; }
  rm -rf "$WORK"
}
trap cleanup EXIT
RUNS="$WORK/runs.jsonl"
: >"$RUNS"

LDUR=5 LWARM=1 SW=16 MACS=100
if ((QUICK)); then
  HOSTS=60 INTERVAL_MS=3000 DURATION=8 LAMBDA=20 LDUR=1.5 SW=4 MACS=20
fi
EDGES=12 AGGS=6
((HOSTS >= 100)) || { EDGES=4; AGGS=2; }

# start_ctl NAME CMD... : starts a controller in the background, waits for its port.
start_ctl() {
  local name=$1 port=$2; shift 2
  "$@" >"$WORK/$name.log" 2>&1 &
  CTRL_PID=$!
  local t0; t0=$(now_ms)
  until [[ -n $(ss -Hltn "( sport = :$port )") ]]; do
    kill -0 "$CTRL_PID" 2>/dev/null || { tail -5 "$WORK/$name.log" >&2; die "$name exited at start-up"; }
    (($(now_ms) - t0 < 10000)) || die "$name not listening after 10 s"
    sleep 0.1
  done
}
stop_ctl() {
  [[ -n $CTRL_PID ]] || return 0
  kill "$CTRL_PID" 2>/dev/null || true
  wait "$CTRL_PID" 2>/dev/null || true
  CTRL_PID=""
}
# add_run LABEL GROUP CONTROLLER JSON
add_run() {
  "$PY" -c 'import json,sys; print(json.dumps({"label": sys.argv[1], "group": sys.argv[2], "controller": sys.argv[3], "result": json.load(open(sys.argv[4]))}))' \
    "$1" "$2" "$3" "$4" >>"$RUNS"
}
skip() { [[ ",$SKIP," == *",$1,"* ]]; }

# ---- CPAM: three runtime modes, same config -------------------------------------------------
if ! skip cpam; then
  "$BIN/ofbench" --mode cpam --topology campus --hosts "$HOSTS" --edges "$EDGES" --aggs "$AGGS" --write-hosts "$WORK/hosts.txt" >/dev/null
  # sharded: replies to another shard's switch leave from the thread that read the PacketIn
  # (cross_shard = direct); sharded-post: the old hop to the owner's thread; sharded-xN: N shards
  # on this machine's cores (--shard-counts).
  variants=(sharded sharded-post cooperative cooperative-yield)
  for n in ${SHARD_COUNTS//,/ }; do variants+=("sharded-x$n"); done
  [[ -z $NICE ]] || variants+=(sharded-nice cooperative-yield-nice)
  for variant in "${variants[@]}"; do
    nice=0; [[ $variant == *-nice ]] && nice=$NICE
    runtime=${variant%-nice}
    runtime=${runtime%-yield}
    runtime=${runtime%-post}
    runtime=${runtime%-x*}
    yield=false; [[ ${variant%-nice} == *-yield ]] && yield=true
    cross=direct; [[ $variant == *-post ]] && cross=post
    shard_args=(); [[ $variant == *-x* ]] && shard_args=(--shards "${variant##*-x}")
    port=$(free_port)
    cat >"$WORK/cpam-$variant.toml" <<EOF
[controller]
apps = ["topology", "cpam", "forwarding"]
shard_nice = $nice
[sqlite]
path = "$WORK/archive-$variant.db"
[cpam]
runtime = "$runtime"
yield_between_batches = $yield
rotation_interval_ms = $INTERVAL_MS
rotation_batch = $BATCH
hosts_file = "$WORK/hosts.txt"
$EXTRA_CPAM
[southbound]
cross_shard = "$cross"
EOF
    log "ofbench_compare: cpam $variant ($HOSTS hosts, T = $INTERVAL_MS ms, $DURATION s, lambda $LAMBDA/s)"
    start_ctl "cpam-$variant" "$port" "$BIN/sdnator" run -c "$WORK/cpam-$variant.toml" --listen "127.0.0.1:$port" \
      --stats-file "$WORK/stats-$variant.json" --log-level warn "${shard_args[@]}"
    "$BIN/ofbench" --mode cpam --topology campus --hosts "$HOSTS" --edges "$EDGES" --aggs "$AGGS" -c "127.0.0.1:$port" \
      --lambda "$LAMBDA" -d "$DURATION" -w 1 --pid "$CTRL_PID" --controller-stats "$WORK/stats-$variant.json" --max-samples 20000 \
      --json "$WORK/cpam-$variant.json" -q | sed 's/^/  /'
    stop_ctl
    add_run "sdnator $variant" cpam "sdnator (topology, cpam, forwarding)" "$WORK/cpam-$variant.json"
  done
fi

# ---- learning switch: sdnator vs ovs-testcontroller --------------------------------------
if ! skip learning; then
  cat >"$WORK/learning.toml" <<EOF
[controller]
apps = ["forwarding"]
[forwarding]
mode = "learning"
EOF
  for ctl in sdnator ovs-testcontroller; do
    [[ $ctl == sdnator ]] || command -v ovs-testcontroller >/dev/null || continue
    for mode in latency throughput; do
      port=$(free_port)
      if [[ $ctl == sdnator ]]; then
        start_ctl "learn-$ctl" "$port" "$BIN/sdnator" run -c "$WORK/learning.toml" --listen "127.0.0.1:$port" --log-level warn
      else
        start_ctl "learn-$ctl" "$port" ovs-testcontroller -O OpenFlow13 "ptcp:$port:127.0.0.1"
      fi
      log "ofbench_compare: $ctl $mode ($SW switches x $MACS MACs, $LDUR s)"
      "$BIN/ofbench" --mode "$mode" -c "127.0.0.1:$port" -s "$SW" -M "$MACS" -d "$LDUR" -w "$LWARM" --pid "$CTRL_PID" --max-samples 2000 \
        --json "$WORK/learn-$ctl-$mode.json" -q | sed 's/^/  /'
      stop_ctl
      add_run "$ctl" "learning-$mode" "$ctl" "$WORK/learn-$ctl-$mode.json"
    done
  done
fi

# ---- RFC 8456 metrics against sdnator --------------------------------------------------------
if ! skip rfc; then
  rfc() {  # rfc LABEL CONFIG OFBENCH-ARGS...
    local label=$1 cfg=$2; shift 2
    local port; port=$(free_port)
    start_ctl "rfc-$label" "$port" "$BIN/sdnator" run -c "$cfg" --listen "127.0.0.1:$port" --log-level warn
    log "ofbench_compare: rfc8456 $label"
    "$BIN/ofbench" -c "127.0.0.1:$port" --pid "$CTRL_PID" --max-samples 2000 --json "$WORK/rfc-$label.json" -q "$@" | sed 's/^/  /'
    stop_ctl
    add_run "$label" rfc8456 "sdnator" "$WORK/rfc-$label.json"
  }
  cat >"$WORK/fabric.toml" <<EOF
[controller]
apps = ["topology", "forwarding"]
EOF
  if ((QUICK)); then
    rfc lossfree "$WORK/learning.toml" --mode lossfree -s 4 -M 20 --trial 1 --rate-lo 2000 --rate-hi 16000
    rfc sessions "$WORK/learning.toml" --mode sessions -s 40 --session-step 20
    rfc table "$WORK/learning.toml" --mode table -s 4 -M 20 --max-flows 5000 -d 10
  else
    rfc lossfree "$WORK/learning.toml" --mode lossfree -s "$SW" -M "$MACS" --trial 3 --rate-lo 10000 --rate-hi 640000
    rfc sessions "$WORK/learning.toml" --mode sessions -s 2000 --session-step 500
    rfc table "$WORK/learning.toml" --mode table -s "$SW" -M "$MACS" --max-flows 1000000 -d 60
  fi
  rfc discovery "$WORK/fabric.toml" --mode discovery --topology campus --hosts "$HOSTS" --edges "$EDGES" --aggs "$AGGS" -d 30
  rfc path "$WORK/fabric.toml" --mode path --topology campus --hosts "$HOSTS" --edges "$EDGES" --aggs "$AGGS" -d "$LDUR"
  rfc exception "$WORK/learning.toml" --mode throughput -s "$SW" -M "$MACS" -d "$LDUR" --malformed 0.1
  rfc dos-baseline "$WORK/learning.toml" --mode latency -s "$SW" -M "$MACS" -d "$LDUR"
  rfc dos "$WORK/learning.toml" --mode latency -s "$SW" -M "$MACS" -d "$LDUR" --dos-rate 50000
fi

commit=$(git -C "$SDN_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
"$PY" - "$RUNS" "$OUT/report.json" "$commit" "$ARGS" "$HOSTS" "$INTERVAL_MS" "$DURATION" "$LAMBDA" <<'EOF'
import json, platform, sys, time, os
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
cpus = os.cpu_count()
title = (f"ofbench side-by-side: CPAM {sys.argv[5]} hosts, T = {int(sys.argv[6]) / 1000:g} s, "
         f"{sys.argv[7]} s per run, lambda {sys.argv[8]}/s; learning switch vs ovs-testcontroller; RFC 8456")
json.dump({"title": title, "generated_unix": time.time(),
           "machine": f"{platform.node()} ({cpus} CPUs, {platform.system()} {platform.release()}); controller and ofbench share them",
           "commit": sys.argv[3], "command": "bash scripts/ofbench_compare.sh " + sys.argv[4], "runs": runs},
          open(sys.argv[2], "w"), indent=1)
EOF
"$PY" "$SDN_ROOT/scripts/ofbench_report.py" "$OUT/report.json" "$OUT"
log "ofbench_compare: report in $OUT/report.html ($OUT/report.md)"
