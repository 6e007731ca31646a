#!/usr/bin/env bash
# CPAM across a three-instance cluster on Open vSwitch (docs/cluster.md, "CPAM sessions across
# instances"): scripts/cluster.sh with apps topology, cpam and forwarding, and the tree testbed
# (s1 root; s2, s3, s4 leaves, 3 hosts each) pointed at all three. Two leaves with different
# masters are picked (A and B), so the sessions between them cross instances:
#   - every host resolves the others through CPAM's in-band DNS, whichever instance answers it;
#   - long-lived TCP sessions A1 -> B1 and B2 -> A2 keep echoing (no stall over 1 s) while the
#     leader rotates every 4 s;
#   - new connections A3 -> B3 (each a fresh DNS lookup), spread over the rotations, all succeed;
#   - the instances handed bindings over through Redis (handoffs_out and handoffs_in), and no
#     hand-off failed or dropped a packet;
#   - followers polled fast while a rotation was reserved (their epoch lag is printed).
source "$(dirname "$0")/lib.sh" "$@"
SESSION=${SDNATOR_SESSION:-$(dirname "$SDNATOR")/sdnator-session}
[[ -x $SESSION ]] || fail "sdnator-session not found: $SESSION"
need_cmds redis-server redis-cli curl
HOLD_S=${CLUSTER_CPAM_HOLD_S:-16}
INTERVAL_MS=4000
CLUSTER_SWITCHES=4   # s1 and three leaves
CL=(env SDNATOR="$SDNATOR" CLUSTER_DATA=redis CLUSTER_APPS=topology,cpam,forwarding
    CLUSTER_EXTRA="$IT_WORK/cpam.toml" bash "$IT_ROOT/scripts/cluster.sh" --dir "$IT_WORK/cluster")
CTRL_LOG="$IT_WORK/cluster/i1/sdnator.log"   # what it_cleanup shows on failure

cl_cleanup() {
  local rc=$?
  set +e
  if ((rc != 0)); then
    for f in "$IT_WORK"/cluster/i*/sdnator.log; do echo "---- $f (last 15) ----" >&2; tail -n 15 "$f" >&2; done
    # What each instance knew (kept with IT_KEEP=1): topology, and CPAM's state and sessions.
    for i in 1 2 3; do
      p=$(env_of "API_PORT_$i" 2>/dev/null) || continue
      for r in topology cpam "cpam/sessions?limit=1000"; do
        curl -sf --max-time 2 "http://127.0.0.1:$p/api/v1/$r" >"$IT_WORK/api-i$i-${r%%\?*}.json" 2>/dev/null || true
      done
    done
  fi
  "${CL[@]}" down >/dev/null 2>&1 || true
  (exit $rc)
  it_cleanup
}
trap cl_cleanup EXIT

[[ -x /usr/bin/python3 ]] && python3() { /usr/bin/python3 "$@"; }
hx() { ip netns exec "${IT_PREFIX}$1" "${@:2}"; }
env_of() { grep "^$1=" "$IT_WORK/cluster/env" | cut -d= -f2; }
cpam_sum() {   # cpam_sum COUNTER: summed over the three instances' stats files
  local i t=0 v
  for i in 1 2 3; do
    v=$(python3 "$STATS_PY" get "$IT_WORK/cluster/i$i/stats.json" "apps.cpam.$1" 2>/dev/null || echo 0)
    t=$((t + ${v%.*}))
  done
  echo "$t"
}

# The testbed's host addresses are fixed (h<N> = 10.0.0.<N>): the protected-host list is known
# before the instances start.
for n in $(seq 1 9); do echo "h$n 10.0.0.$n"; done >"$IT_WORK/hosts.txt"
cat >"$IT_WORK/cpam.toml" <<EOF
[cpam]
rotation_interval_ms = $INTERVAL_MS
rotation_batch = 2
vip_range = "10.0.128.0/24"
vip_pool = 250
tcp_idle_timeout_s = 10
session_linger_ms = 3000
quarantine_ms = 60000
stats_interval_ms = 500
hosts_file = "$IT_WORK/hosts.txt"
EOF

t0=$(now_ms)
"${CL[@]}" up || fail "scripts/cluster.sh up failed"
for i in 1 2 3; do track_pid "$(cat "$IT_WORK/cluster/i$i/pid")"; done
API=($(env_of API_PORT_1) $(env_of API_PORT_2) $(env_of API_PORT_3))
step "cluster up in $(fmt_ms $(($(now_ms) - t0))) (Redis + Sentinel, 3 instances with topology, cpam, forwarding)"

"${TB[@]}" --controllers "$("${CL[@]}" controllers)" --resolver 10.0.255.253 --hosts 3 up tree 3 \
  || fail "testbed up failed"
"${TB[@]}" wait-connected 20 || fail "switches did not connect to all three instances"
# Leaves A and B: the first pair with different masters (leaf k = s<k> holds h<3k-5>..h<3k-3>).
# The first instance to see the switches takes them all; balancing hands some over once the
# others have been members for a lease, a lease per step: the pick waits until the masters have
# not changed for 2.5 s (four leases), so the two leaves keep their masters during the sessions.
pick_leaves() {
  python3 - "$1" <<'PY'
import json, sys
m = {int(k, 16): v[0] for k, v in json.loads(sys.argv[1]).items()}
pairs = [(a, b) for a in (2, 3, 4) for b in (2, 3, 4) if a < b and m.get(a) != m.get(b)]
print(*(pairs[0] if pairs else ("", "")))
PY
}
t0=$(now_ms) A="" last="" since=0
while :; do
  m=$(wait_one_master_each 20 "${API[@]}")
  [[ $m == "$last" ]] || { last=$m since=$(now_ms); }
  read -r A B < <(pick_leaves "$m")
  [[ -n $A ]] && (($(now_ms) - since >= 2500)) && break
  (($(now_ms) - t0 < 30000)) || fail "after 30 s no two leaves with different masters held still for 2.5 s: $m"
  sleep 0.2
done
a1=$((3 * A - 5)) a2=$((3 * A - 4)) a3=$((3 * A - 3)) b1=$((3 * B - 5)) b2=$((3 * B - 4)) b3=$((3 * B - 3))
step "one master per switch: $m; leaves s$A (h$a1-h$a3) and s$B (h$b1-h$b3) have different masters"

for n in $(seq 1 9); do
  hx "h$n" "$SESSION" serve --tcp 5000 >"$IT_WORK/serve$n.log" 2>&1 &
  BG_PIDS+=($!); track_pid $!
done
# The first lookups also teach topology where each host is; the first epoch may still be on its way.
for n in $(seq 1 9); do
  t0=$(now_ms)
  until hx "h$n" "$SESSION" resolve "h$(((n + 3) % 9 + 1)).cpam.lan" >/dev/null 2>&1; do
    (($(now_ms) - t0 < 20000)) || fail "h$n cannot resolve a peer through CPAM's DNS"
    sleep 0.3
  done
done
step "every host resolves a peer through the in-band DNS responder"
# Each instance's CPAM finds a host through the topology records on the shared bus (the union of
# what every instance's switches show); sessions start once every instance sees all nine hosts.
hosts_seen() {   # hosts_seen PORT: hosts present (up or moved) in that instance's topology
  curl -sf --max-time 2 "http://127.0.0.1:$1/api/v1/topology" |
    python3 -c 'import json,sys; print(len({h["mac"] for h in json.load(sys.stdin)["hosts"] if h["state"] in ("up", "moved")}))' \
    2>/dev/null || echo 0
}
t0=$(now_ms)
for p in "${API[@]}"; do
  until (($(hosts_seen "$p") >= 9)); do
    (($(now_ms) - t0 < 20000)) || fail "the instance with API :$p sees $(hosts_seen "$p") of the 9 hosts after 20 s"
    sleep 0.2
  done
done
step "every instance sees the 9 hosts ($(fmt_ms $(($(now_ms) - t0))))"

epoch0=$(curl -sf --max-time 5 "http://127.0.0.1:${API[0]}/api/v1/cpam" | grep -o '"epoch":[0-9]*' | head -n 1 | cut -d: -f2)
HOLDS=()
for pair in "$a1 $b1" "$b2 $a2"; do
  read -r c s <<<"$pair"
  hx "h$c" "$SESSION" hold "h$s.cpam.lan" 5000 --duration "$HOLD_S" --interval-ms 100 --max-stall-ms 1000 \
    --timeout-ms 10000 --json "$IT_WORK/hold$c.json" >"$IT_WORK/hold$c.log" 2>&1 &
  HOLDS+=($!); BG_PIDS+=($!); track_pid $!
done
hx "h$a3" "$SESSION" churn "h$b3.cpam.lan" 5000 --count $((HOLD_S * 3)) --rate 4 --concurrency 4 --timeout-ms 3000 \
  --json "$IT_WORK/churn.json" >"$IT_WORK/churn.log" 2>&1 &
CHURN=$!; BG_PIDS+=($!); track_pid $!
step "sessions h$a1 -> h$b1 and h$b2 -> h$a2 echoing for ${HOLD_S} s, h$a3 -> h$b3 churning at 4/s (epoch ${epoch0:-?})"
for i in 0 1; do
  wait "${HOLDS[$i]}" || { cat "$IT_WORK"/hold*.log >&2; fail "session $((i + 1)) failed (lost or stalled > 1 s)"; }
done
wait "$CHURN" || true
epoch1=$(curl -sf --max-time 5 "http://127.0.0.1:${API[0]}/api/v1/cpam" | grep -o '"epoch":[0-9]*' | head -n 1 | cut -d: -f2)
python3 - "$IT_WORK" "$a1" "$b2" <<'PY' | tee "$IT_WORK/sessions.txt"
import json, sys
w = sys.argv[1]
for c in sys.argv[2:]:
    h = json.load(open(f"{w}/hold{c}.json"))
    print(f"session h{c}: ok={h['ok']} echoes {h['echoes']} max gap {h['max_gap_ms']:.0f} ms error {h['error']}")
c = json.load(open(f"{w}/churn.json"))
su = c.get("setup_ms", {})
print(f"churn: {c['succeeded']} ok, {c['failed']} failed, outcomes {c['outcomes']}; connect across instances "
      f"p50 {su.get('p50', 0):.2f} ms p90 {su.get('p90', 0):.2f} ms max {su.get('max', 0):.2f} ms")
PY
python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["failed"] == 0 else 1)' "$IT_WORK/churn.json" \
  || fail "churned connections failed (see $IT_WORK/churn.json)"
((epoch1 >= epoch0 + 3)) || fail "only $((epoch1 - epoch0)) rotations during the sessions (epoch $epoch0 -> $epoch1)"

sleep 1   # the stats files are rewritten every second
out=$(cpam_sum handoffs_out) in=$(cpam_sum handoffs_in) misses=$(cpam_sum handoff_misses)
errors=$(cpam_sum handoff_errors) dropped=$(cpam_sum handoff_dropped) onward=$(cpam_sum onward)
step "hand-offs: out $out, in $in, misses $misses, errors $errors, dropped $dropped; first packets sent on: $onward"
((out >= 3 && in >= 3)) || fail "too few sessions handed over between instances (out $out, in $in)"
((errors == 0 && dropped == 0)) || fail "hand-offs failed ($errors) or dropped packets ($dropped)"
# Followers poll fast while a rotation is reserved and apply its publication a few ms after it.
lags="" fast=$(cpam_sum cluster.fast_polls)
for i in 1 2 3; do
  lags+=" i$i $(python3 "$STATS_PY" get "$IT_WORK/cluster/i$i/stats.json" apps.cpam.cluster.epoch_lag_max_ms 2>/dev/null || echo '?')"
done
step "epoch lag, leader's write to a follower's apply, largest per instance (ms, -1: leader):$lags; fast polls $fast; ARP refused $(cpam_sum arp_refused)"
((fast > 0)) || fail "no follower polled fast during a reserved rotation"
step "PASS: $((epoch1 - epoch0)) rotations, both sessions kept, every new connection made, across instances"
