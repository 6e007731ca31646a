#!/usr/bin/env bash
# A three-instance sdnator cluster on Open vSwitch (docs/cluster.md): Redis master + 2 replicas +
# 3 sentinels + 3 instances from scripts/cluster.sh, the tree testbed (s1 root, s2 and s3 leaves,
# 3 hosts each) pointed at all three, apps topology + forwarding. With long-lived TCP sessions
# echoing (h1 -> h4, h2 -> h5) and new connections churning (h1 -> h6):
#   (a) kill -9 of the instance that masters the most switches (ties: the one mastering s2): every
#       switch it mastered gets a new master from the survivors; a new host pair (h3 -> h4,
#       never used before, so it needs the controller) is re-provisioned; no session is lost;
#   (b) kill -9 of the Redis master: Sentinel promotes a replica, every switch has one master
#       again, another new pair (h2 -> h6) is provisioned; no session is lost;
#   after both, the two survivors' masters differ by at most one (balance ran again).
# Measured (printed, and in $IT_WORK/figures.json with IT_KEEP=1): failover (kill -> the survivors'
# /api/v1/cluster name a new master for each of the killed instance's switches, polled every
# 20 ms), re-provisioning (kill -> first reply of a 20 ms ping over the new pair, ARP entries
# pre-set so the first packet is the flow's), the sessions' longest echo gap, churn outcomes.
source "$(dirname "$0")/lib.sh" "$@"
SESSION=${SDNATOR_SESSION:-$(dirname "$SDNATOR")/sdnator-session}
[[ -x $SESSION ]] || fail "sdnator-session not found: $SESSION"
need_cmds redis-server redis-cli curl
HOLD_S=${CLUSTER_HOLD_S:-30}
FAILOVER_BOUND_MS=${CLUSTER_FAILOVER_BOUND_MS:-3000}   # the target is 1 s; the test fails at 3 s
CL=(env SDNATOR="$SDNATOR" CLUSTER_DATA="${CLUSTER_DATA:-redis}" bash "$IT_ROOT/scripts/cluster.sh" --dir "$IT_WORK/cluster")
CTRL_LOG="$IT_WORK/cluster/i1/sdnator.log"   # what it_cleanup shows on failure
STATS="$IT_WORK/cluster/i1/stats.json"

cl_cleanup() {
  local rc=$?
  set +e   # (under set -e, the "(exit $rc)" below would end the shell before it_cleanup)
  if ((rc != 0)); then
    "${CL[@]}" --testbed "$IT_PREFIX" status >&2 2>&1 || true
    for f in "$IT_WORK"/cluster/i*/sdnator.log; do echo "---- $f (last 15) ----" >&2; tail -n 15 "$f" >&2; done
  fi
  "${CL[@]}" down >/dev/null 2>&1 || true
  (exit $rc)
  it_cleanup
}
trap cl_cleanup EXIT

hx() { local h=$1; shift; ip netns exec "${IT_PREFIX}$h" "$@"; }
api() { curl -sf --max-time 2 "http://127.0.0.1:$1/api/v1/cluster"; }
env_of() { grep "^$1=" "$IT_WORK/cluster/env" | cut -d= -f2; }

step "cluster up (Redis + 2 replicas + 3 sentinels + 3 instances, data ${CLUSTER_DATA:-redis})"
t0=$(now_ms)
"${CL[@]}" up || fail "scripts/cluster.sh up failed"
for i in 1 2 3; do track_pid "$(cat "$IT_WORK/cluster/i$i/pid")"; done
API=($(env_of API_PORT_1) $(env_of API_PORT_2) $(env_of API_PORT_3))
step "cluster up in $(fmt_ms $(($(now_ms) - t0))); controllers $("${CL[@]}" controllers)"

"${TB[@]}" --controllers "$("${CL[@]}" controllers)" --hosts 3 up tree 2 || fail "testbed up failed"
"${TB[@]}" wait-connected 20 || fail "switches did not connect to all three instances"
m=$(wait_one_master_each 20 "${API[@]}")
step "one master per switch: $m"
# `sdnator ctl cluster` on each instance: 3 members, the 3 switches listed with their master, and
# the instances' "masters here" adding up to the 3 switches.
# The three instances are asked one after another, so a role change between two answers can
# count a switch twice or not at all: the sum is read again, up to 10 times a second apart.
for attempt in $(seq 1 10); do
  total=0
  for p in "${API[@]}"; do
    out=$("$SDNATOR" ctl --url "http://127.0.0.1:$p" cluster) || fail "ctl cluster on :$p failed: $out"
    grep -Eq '^members +3 ' <<<"$out" || fail "ctl cluster on :$p does not show 3 members: $out"
    [[ $(grep -Ec '^0{15}[1-3] +(master|slave|waiting) ' <<<"$out") -eq 3 ]] || fail "ctl cluster on :$p does not list the 3 switches: $out"
    total=$((total + $(awk '/^masters here/ { print $3 }' <<<"$out")))
  done
  [[ $total -eq 3 ]] && break
  sleep 1
done
[[ $total -eq 3 ]] || fail "ctl cluster: the instances' masters add up to $total, not 3 (10 reads, a second apart)"
step "ctl cluster: 3 members, 3 switches, masters add up to 3 on the 3 instances"
# Forwarding works through whichever instance masters each switch.
step "h1 -> h4 first ping after $(ping_resumes h1 10.0.0.4 30)"

# Servers, sessions, churn.
for h in 4 5 6; do
  hx "h$h" "$SESSION" serve --tcp 5000 >"$IT_WORK/serve$h.log" 2>&1 &
  BG_PIDS+=($!); track_pid $!
done
sleep 0.5
HOLDS=()
for pair in "1 4" "2 5"; do
  read -r c s <<<"$pair"
  hx "h$c" "$SESSION" hold "10.0.0.$s" 5000 --duration "$HOLD_S" --interval-ms 100 --max-stall-ms 1000 \
    --timeout-ms 10000 --json "$IT_WORK/hold$c.json" >"$IT_WORK/hold$c.log" 2>&1 &
  HOLDS+=($!); BG_PIDS+=($!); track_pid $!
done
hx h1 "$SESSION" churn 10.0.0.6 5000 --count $((HOLD_S * 4)) --rate 5 --concurrency 8 --timeout-ms 3000 \
  --json "$IT_WORK/churn.json" >"$IT_WORK/churn.log" 2>&1 &
CHURN=$!; BG_PIDS+=($!); track_pid $!
sleep 3
for p in "${HOLDS[@]}"; do kill -0 "$p" 2>/dev/null || { cat "$IT_WORK"/hold*.log >&2; fail "a session did not start"; }; done
step "2 sessions echoing (h1 -> h4, h2 -> h5), new connections churning h1 -> h6 at 5/s"

# probe_pair SRC DST_N KILL_MS: 20 ms pings SRC -> h<DST_N> (ARP entries pre-set both ways): ms from
# KILL_MS to the first reply, "" if none within 15 s.
preset_arp() {   # preset_arp A B: A knows B's MAC and B knows A's
  hx "h$1" ip neigh replace "10.0.0.$2" lladdr "$(printf '00:00:00:00:00:%02x' "$2")" dev eth0 nud permanent
  hx "h$2" ip neigh replace "10.0.0.$1" lladdr "$(printf '00:00:00:00:00:%02x' "$1")" dev eth0 nud permanent
}
probe_pair() {
  local out first
  out=$(hx "h$1" ping -n -D -i 0.02 -W 1 -w 15 -c 1 "10.0.0.$2" 2>&1 || true)
  # ping -c 1 -w 15 keeps sending every 20 ms until one reply arrives (or 15 s pass).
  first=$(awk '/bytes from/ { gsub(/[\[\]]/, "", $1); print $1; exit }' <<<"$out")
  [[ -n $first ]] || return 0
  awk -v f="$first" -v k="$3" 'BEGIN { printf "%d\n", f * 1000 - k }'
}

# ---------------------------------------------------------------- (a) kill the busiest instance
preset_arp 3 4
preset_arp 2 6
# The target: most switches mastered; ties go to the one mastering s2 (the new pair's first hop).
read -r TARGET TARGET_DPIDS < <(python3 - "${API[@]}" <<'PY'
import json, sys, urllib.request
best = None
for i, port in enumerate(sys.argv[1:], 1):
    j = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/cluster", timeout=2))
    m = sorted(j.get("masters", {}))
    key = (len(m), any(int(d, 16) == 2 for d in m))
    if best is None or key > best[0]:
        best = (key, i, m)
print(best[1], ",".join(best[2]))
PY
)
SURV=()
for i in 1 2 3; do [[ $i == "$TARGET" ]] || SURV+=("${API[$((i - 1))]}"); done
step "(a) instance $TARGET masters ${TARGET_DPIDS}: kill -9"
KILL_MS=$("${CL[@]}" kill "$TARGET" | tail -1)
# Failover: poll the survivors every 20 ms until they master every switch the victim had.
python3 - "$KILL_MS" "$TARGET_DPIDS" "${SURV[@]}" >"$IT_WORK/failover_a.json" <<'PY' &
import json, sys, time, urllib.request
kill_ms, dpids, ports = int(sys.argv[1]), set(sys.argv[2].split(",")), sys.argv[3:]
seen = {}
deadline = time.time() + 15
while time.time() < deadline and len(seen) < len(dpids):
    for port in ports:
        try:
            j = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/cluster", timeout=1))
        except Exception:
            continue
        now = time.time() * 1000
        for d, gen in j.get("masters", {}).items():
            if d in dpids and d not in seen:
                seen[d] = {"ms": now - kill_ms, "by": j.get("instance_id"), "generation": gen}
    time.sleep(0.02)
print(json.dumps(seen))
PY
POLL=$!
REPROV_A=$(probe_pair 3 4 "$KILL_MS")
wait "$POLL" || true
FAILOVER_A=$(cat "$IT_WORK/failover_a.json")
FO_MAX=$(python3 -c 'import json,sys; s=json.loads(sys.argv[1]); d=sys.argv[2].split(","); print(int(max(s[x]["ms"] for x in d)) if all(x in s for x in d) else -1)' "$FAILOVER_A" "$TARGET_DPIDS")
((FO_MAX >= 0)) || fail "the killed instance's switches (${TARGET_DPIDS}) got no new master within 15 s: $FAILOVER_A"
[[ -n $REPROV_A ]] || fail "h3 -> h4 (a new pair) not provisioned within 15 s of the kill"
step "(a) failover: new master for every switch of instance $TARGET ${FO_MAX} ms after the kill ($FAILOVER_A)"
step "(a) re-provisioning: h3 -> h4 (new pair) first reply ${REPROV_A} ms after the kill"
((FO_MAX <= FAILOVER_BOUND_MS)) || fail "failover took ${FO_MAX} ms (bound ${FAILOVER_BOUND_MS} ms)"
hx h3 "$SESSION" churn 10.0.0.4 5000 --count 5 --rate 10 --timeout-ms 3000 >"$IT_WORK/new_a.log" 2>&1 \
  || { cat "$IT_WORK/new_a.log" >&2; fail "new TCP connections h3 -> h4 failed after the kill"; }
for p in "${HOLDS[@]}"; do kill -0 "$p" 2>/dev/null || { cat "$IT_WORK"/hold*.log >&2; fail "a session ended after the instance kill"; }; done
m=$(wait_one_master_each 10 "${SURV[@]}")
step "(a) sessions alive; 5 new TCP connections h3 -> h4 ok; masters now $m"

# ---------------------------------------------------------------- (b) kill the Redis master
S1=$(env_of SENTINEL_PORT_1)
OLD=$(redis-cli -p "$S1" sentinel get-master-addr-by-name sdnator | paste -sd: -)
step "(b) Redis master $OLD: kill -9"
KILL_MS=$("${CL[@]}" kill-redis-master | tail -1)
t0=$(now_ms)
until NEW=$(redis-cli -p "$S1" sentinel get-master-addr-by-name sdnator 2>/dev/null | paste -sd: -) && [[ -n $NEW && $NEW != "$OLD" ]]; do
  (($(now_ms) - t0 < 20000)) || fail "Sentinel did not promote a replica within 20 s"
  sleep 0.05
done
SENTINEL_MS=$(($(now_ms) - KILL_MS))
m=$(wait_one_master_each 20 "${SURV[@]}")
ALL_MASTERED_MS=$(($(now_ms) - KILL_MS))
REPROV_B=$(probe_pair 2 6 "$KILL_MS")
[[ -n $REPROV_B ]] || fail "h2 -> h6 (a new pair) not provisioned within 15 s of the Redis kill"
step "(b) Sentinel named $NEW ${SENTINEL_MS} ms after the kill; one master per switch again by ${ALL_MASTERED_MS} ms ($m); h2 -> h6 (new pair) first reply ${REPROV_B} ms after the kill"
for p in "${HOLDS[@]}"; do kill -0 "$p" 2>/dev/null || { cat "$IT_WORK"/hold*.log >&2; fail "a session ended after the Redis kill"; }; done

# ---------------------------------------------------------------- the sessions' verdict
step "waiting for the sessions to finish (${HOLD_S} s in all)"
for i in 0 1; do
  wait "${HOLDS[$i]}" || { cat "$IT_WORK"/hold*.log >&2; fail "session $((i + 1)) failed (lost or stalled > 1 s)"; }
done
wait "$CHURN" || true
python3 - "$IT_WORK" <<'PY' | tee "$IT_WORK/sessions.txt"
import json, sys
w = sys.argv[1]
for c in (1, 2):
    h = json.load(open(f"{w}/hold{c}.json"))
    print(f"session h{c}: ok={h['ok']} echoes {h['echoes']} max gap {h['max_gap_ms']:.0f} ms error {h['error']}")
c = json.load(open(f"{w}/churn.json"))
print(f"churn h1 -> h6: {c['succeeded']} ok, {c['failed']} failed, outcomes {c['outcomes']}")
PY
python3 - "$IT_WORK/churn.json" <<'PY' || fail "churned connections failed (see $IT_WORK/churn.json)"
import json, sys
c = json.load(open(sys.argv[1]))
sys.exit(0 if c["failed"] == 0 else 1)
PY
# Balance after both faults: the survivors' masters differ by at most one again.
t0=$(now_ms)
until python3 -c '
import json, sys
m = json.loads(sys.argv[1]); n = int(sys.argv[2])
c = {}
for v in m.values():
    if len(v) == 1: c[v[0]] = c.get(v[0], 0) + 1
counts = sorted(list(c.values()) + [0] * (n - len(c)))
sys.exit(0 if len(m) == 3 and len(c) <= n and counts[-1] - counts[0] <= 1 else 1)' "$(masters_json "${SURV[@]}")" "${#SURV[@]}"; do
  (($(now_ms) - t0 < 20000)) || fail "the survivors' masters still uneven 20 s after the sessions: $(masters_json "${SURV[@]}")"
  sleep 0.2
done
step "balanced again over the ${#SURV[@]} survivors: $(masters_json "${SURV[@]}")"
python3 - "$IT_WORK/figures.json" <<EOF
import json, sys
json.dump({"instance_kill": {"target": $TARGET, "switches": "$TARGET_DPIDS".split(","), "failover_max_ms": $FO_MAX,
                             "failover": $FAILOVER_A, "reprovisioning_ms": $REPROV_A},
           "redis_kill": {"sentinel_ms": $SENTINEL_MS, "one_master_each_ms": $ALL_MASTERED_MS, "reprovisioning_ms": $REPROV_B},
           "sessions": open("$IT_WORK/sessions.txt").read().splitlines()}, open(sys.argv[1], "w"), indent=1)
EOF
step "figures: failover ${FO_MAX} ms, re-provisioning ${REPROV_A} ms (instance kill); Redis kill: Sentinel ${SENTINEL_MS} ms, masters ${ALL_MASTERED_MS} ms, re-provisioning ${REPROV_B} ms; no session lost"
step "PASS"
