#!/usr/bin/env bash
# The ids case study's experiment, one command: installs and builds (scripts/setup.sh), starts
# Open vSwitch, runs scripts/ids_experiment.py (both modes: detection only, detection +
# mitigation) and writes the report (scripts/ids_report.py: docs/ids.md, docs/img/ids-*.png).
# About 12 minutes. Options after the flags below go to ids_experiment.py (see its --help).
#
# usage: scripts/ids_experiment.sh [--no-setup] [--no-report] [ids_experiment.py options]
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$SDN_ROOT"
need_root
SETUP=1 REPORT=1 ARGS=()
for a in "$@"; do
  case $a in
    --no-setup) SETUP=0 ;;
    --no-report) REPORT=0 ;;
    *) ARGS+=("$a") ;;
  esac
done
((SETUP)) && bash scripts/setup.sh
OVS_STARTED=0
bash scripts/ovs.sh status >/dev/null 2>&1 || OVS_STARTED=1
bash scripts/ovs.sh start
trap '((OVS_STARTED)) && bash scripts/ovs.sh stop' EXIT
OUT=build/ids-experiment
python3 scripts/ids_experiment.py --out "$OUT" "${ARGS[@]+"${ARGS[@]}"}"
# Debian's python3 has matplotlib (python3-matplotlib); a python3 earlier on PATH may not.
((REPORT)) && /usr/bin/python3 scripts/ids_report.py --in "$OUT" --docs docs
