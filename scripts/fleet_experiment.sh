#!/usr/bin/env bash
# The fleet case study's experiments in one command: every scheduler (decentralized, baseline,
# fcfs, dynamic) x scenario (normal, anomalies, ppe) x fleet size x seed, each a full run of the
# emulated fleet, driver, twins, job creator and scheduler over DUE; then the report
# (docs/fleet.md, docs/img/fleet-fig11..14.png) from the results JSON.
#
# usage: scripts/fleet_experiment.sh [--sizes 5,10,20,50] [--seeds 1,2,3] [--factor F]
#                                    [--out DIR] [--no-build]
#   results in DIR (default build/fleet): results.json and one archive per run
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$SDN_ROOT"

SIZES=5,10,20,50 SEEDS=1,2,3 FACTOR=20000 OUT=build/fleet BUILD=1 SCENARIOS=normal,anomalies,ppe
while (($#)); do
  case $1 in
    --sizes) SIZES=$2; shift 2 ;;
    --seeds) SEEDS=$2; shift 2 ;;
    --scenarios) SCENARIOS=$2; shift 2 ;;
    --factor) FACTOR=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) die "unknown argument $1" ;;
  esac
done
if ((BUILD)); then
  bash scripts/setup.sh --no-build
  cmake --preset release -B build >/dev/null
  cmake --build build -j "${JOBS:-2}" --target sdnator
fi
mkdir -p "$OUT"
T0=$(now_ms)
log "fleet experiment: sizes $SIZES, seeds $SEEDS, scenarios $SCENARIOS, factor $FACTOR"
rc=0
build/bin/sdnator fleet experiment --sizes "$SIZES" --seeds "$SEEDS" --scenarios "$SCENARIOS" \
  --factor "$FACTOR" --dir "$OUT/runs" --json "$OUT/results.json" || rc=$?
log "fleet experiment: runs took $(fmt_ms $(($(now_ms) - T0)))"
/usr/bin/python3 scripts/fleet_report.py "$OUT/results.json" --md docs/fleet.md --img docs/img
exit "$rc"
