#!/usr/bin/env bash
# Switch reconnects: with traffic working through sdnator, (1) drop and restore a leaf's controller
# connection (del-controller / set-controller: same switch, flows kept) and (2) "reboot" the leaf
# (delete and re-create the bridge with the same dpid and ports: a new connection and an empty flow
# table). After each, the switch must reconnect and pings across it must resume within a bound.
source "$(dirname "$0")/lib.sh" "$@"
BOUND_S=${RESTART_BOUND_S:-10}

start_controller
up_tree
"${TB[@]}" --count 3 --quiet pingall || fail "pingall failed before any restart"
accepted0=$(stat_sum 'connections\.accepted$')

# wait_connected_again: all 3 switches connected again (TCP to the controller port) within BOUND_S.
wait_connected_again() {
  "${TB[@]}" wait-connected "$BOUND_S" || fail "switches did not reconnect within ${BOUND_S}s"
  wait_stats_switches 3 "$BOUND_S"
}

step "phase 1: controller connection of ${IT_PREFIX}s2 dropped and restored"
ovs-vsctl --timeout=10 del-controller "${IT_PREFIX}s2"
wait_stats_switches 2 5   # the controller must notice the closed connection
step "controller dropped s2 from its switch list"
ovs-vsctl --timeout=10 -- --id=@c create controller target="\"tcp:127.0.0.1:$IT_PORT\"" max_backoff=1000 \
  -- set bridge "${IT_PREFIX}s2" controller=@c >/dev/null
t0=$(now_ms)
wait_connected_again
step "s2 reconnected in $(fmt_ms $(($(now_ms) - t0))); h1 -> h3 resumed after $(ping_resumes h1 10.0.0.3 "$BOUND_S")"

step "phase 2: ${IT_PREFIX}s2 deleted and re-created (flow table lost)"
"${TB[@]}" restart-switch s2 1
t0=$(now_ms)
wait_connected_again
step "s2 reconnected in $(fmt_ms $(($(now_ms) - t0)))"
step "h1 -> h3 (across s2, s1, s3) resumed after $(ping_resumes h1 10.0.0.3 "$BOUND_S")"
step "h4 -> h2 (into s2) resumed after $(ping_resumes h4 10.0.0.2 "$BOUND_S")"
"${TB[@]}" --count 3 --quiet pingall || fail "pingall failed after the switch restart"
n=$(nonmiss_flows "${IT_PREFIX}s2")
((n > 0)) || fail "no flows on the re-created ${IT_PREFIX}s2"

wait_stats_fresh
accepted1=$(stat_sum 'connections\.accepted$')
if [[ -n $accepted0 && -n $accepted1 ]]; then
  ((accepted1 >= accepted0 + 2)) || fail "controller accepted $accepted0 then $accepted1 connections; want 2 more"
  step "controller accepted $accepted0 -> $accepted1 connections"
else
  fail "stats file has no connections.accepted counter"
fi
stop_controller
step "PASS"
