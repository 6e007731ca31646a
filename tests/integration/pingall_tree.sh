#!/usr/bin/env bash
# All-pairs ping through sdnator on the 3-switch tree (s1 root; s2, s3 leaves with 2 hosts each):
# every ordered pair must answer, flows must have been installed on every switch, the controller
# must have counted packet-ins, and it must exit cleanly on SIGTERM.
source "$(dirname "$0")/lib.sh" "$@"

start_controller
up_tree

step "pingall"
"${TB[@]}" pingall --json "$IT_WORK/pingall.json" || fail "not every host pair could ping (matrix above)"

total=0
for sw in s1 s2 s3; do
  n=$(nonmiss_flows "${IT_PREFIX}$sw")
  step "${IT_PREFIX}$sw: $n flows besides the table-miss"
  ((n > 0)) || { ovs-ofctl -O OpenFlow13 dump-flows "${IT_PREFIX}$sw" >&2; fail "no flows installed on ${IT_PREFIX}$sw"; }
  total=$((total + n))
done

wait_stats_fresh
pin=$(stat_sum 'rx\.packet_in$')
[[ -n $pin ]] || fail "stats file has no packet_in counter (keys: $(python3 "$STATS_PY" summary "$STATS" | head -20))"
((pin > 0)) || fail "controller counted $pin packet-ins"
step "controller: $pin packet-ins, $(stat_sum 'tx\.flow_mod$') flow-mods, $(stat_sum 'tx\.packet_out$') packet-outs; $total flows on the switches"

stop_controller
step "PASS"
