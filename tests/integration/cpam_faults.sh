#!/usr/bin/env bash
# CPAM under faults (issue 11, item 4; docs/faults-cpam.md), on a tree (s1 root; s2, s3 leaves;
# 3 hosts each) with long-lived TCP sessions across it, rotating every 6 s:
#   (a) a leaf loses its controller connection in the middle of a rotation (its controller
#       target pointed at a closed port, then back: flows kept) while a stale rule sits in CPAM's cookie range on it:
#       the sessions go on, and after the resync the leaf holds no stale CPAM cookie, no
#       duplicate rule, and every CPAM rule belongs to a live VIP or a known session;
#   (b) kill -9 of sdnator: the sessions keep flowing on the rules already in the switches while
#       it is down; restarted on the same archive it reloads the epoch, VIP states and bindings,
#       the sessions still go on, new sessions work, and no VIP a session still uses is handed
#       out again by the rotations that follow.
# Measured: every session's longest echo gap over the whole run, packets the session flows
# carried while the controller was down, time to resync, restart-to-new-sessions time.
source "$(dirname "$0")/lib.sh" "$@"
SESSION=${SDNATOR_SESSION:-$(dirname "$SDNATOR")/sdnator-session}
[[ -x $SESSION ]] || fail "sdnator-session not found: $SESSION"
need_cmds curl
INTERVAL_MS=6000
API_PORT=$(free_port) || fail "no free TCP port"
API="http://127.0.0.1:$API_PORT/api/v1"

"${TB[@]}" --resolver 10.0.255.253 --hosts 3 up tree 2 || fail "testbed up failed"
MANIFEST=/run/sdnator-testbed/$IT_PREFIX/manifest.json
python3 -c 'import json,sys; [print(h["name"], h["ip"]) for h in json.load(open(sys.argv[1]))["hosts"]]' "$MANIFEST" \
  >"$IT_WORK/hosts.txt"
cat >"$IT_WORK/sdnator.toml" <<EOF
[controller]
apps = ["topology", "cpam", "forwarding"]
[northbound]
listen = "127.0.0.1:$API_PORT"
[sqlite]
path = "$IT_WORK/archive.db"
[cpam]
rotation_interval_ms = $INTERVAL_MS
rotation_batch = 1
batch_delay_ms = 500
vip_range = "10.0.128.0/24"
vip_pool = 250
tcp_idle_timeout_s = 10
session_linger_ms = 3000
quarantine_ms = 60000
recovery_hold_ms = 5000
stats_interval_ms = 500
hosts_file = "$IT_WORK/hosts.txt"
EOF
start_controller -c "$IT_WORK/sdnator.toml"
"${TB[@]}" wait-connected 20 || fail "switches did not connect"
wait_stats_switches 3 20
wait_topology 2 20
step "tree up and discovered (6 hosts: h1-h3 on s2, h4-h6 on s3)"

# The pyenv shim costs ~0.4 s a start; the system interpreter has what these checks need.
[[ -x /usr/bin/python3 ]] && python3() { /usr/bin/python3 "$@"; }
hx() { "${TB[@]}" exec "$@"; }
api() { curl -sf --max-time 5 "$API$1"; }
cpam_stat() { python3 "$STATS_PY" get "$STATS" "apps.cpam.$1" 2>/dev/null || echo -1; }
epoch() { api /cpam | grep -o "\"epoch\":[0-9]*" | head -n 1 | cut -d: -f2; }
rotating() { api /cpam | grep -q '"rotating":true'; }
not_rotating() { ! rotating; }
epoch_above() { (($(epoch) > $1)); }
resyncs_above() { (($(cpam_stat resyncs) > $1)); }
tcp_sessions_at_least() {
  (($(api "/cpam/sessions?limit=1000" | python3 -c 'import json,sys; print(len([s for s in json.load(sys.stdin) if s["proto"] == "tcp"]))') >= $1))
}
# rotate_now: POST /cpam/rotate (retried while a scheduled rotation is in progress: 409).
rotate_now() {
  local t0; t0=$(now_ms)
  until curl -sf --max-time 5 -X POST -H 'Content-Type: application/json' -d '{}' "$API/cpam/rotate" >/dev/null; do
    (($(now_ms) - t0 < 5000)) || fail "POST /cpam/rotate kept failing"
    sleep 0.05
  done
}
wait_until() {  # wait_until SECONDS WHAT CMD...: until CMD succeeds
  local limit=$1 what=$2 t0; shift 2; t0=$(now_ms)
  until "$@"; do
    (($(now_ms) - t0 < limit * 1000)) || fail "$what: not within ${limit}s"
    sleep 0.1
  done
}
for n in 1 2 3 4 5 6; do
  hx "h$n" "$SESSION" serve --tcp 5000 >"$IT_WORK/serve$n.log" 2>&1 &
  BG_PIDS+=($!); track_pid $!
done
for n in 1 2 3 4 5 6; do
  hx "h$n" "$SESSION" resolve "h$(((n % 6) + 1)).cpam.lan" >/dev/null || fail "h$n cannot resolve a peer"
done

# Long-lived sessions across the tree (both leaves, both directions), for the whole test.
HOLD_S=${CPAM_FAULTS_HOLD_S:-45}
HOLDS=()
for pair in "1 4" "5 2" "3 6"; do
  read -r c s <<<"$pair"
  hx "h$c" "$SESSION" hold "h$s.cpam.lan" 5000 --duration "$HOLD_S" --interval-ms 100 --max-stall-ms 2000 \
    --timeout-ms 20000 --json "$IT_WORK/hold$c.json" >"$IT_WORK/hold$c.log" 2>&1 &
  HOLDS+=($!); BG_PIDS+=($!); track_pid $!
done
wait_until 10 "3 sessions bound" tcp_sessions_at_least 3
step "3 long-lived TCP sessions up (h1->h4, h5->h2, h3->h6)"

# check_switch BRIDGE: CPAM flows on the switch against the controller's view (REST): one rule
# per cookie, every VIP rule for a live VIP, every session rule for a live binding (or, for
# transit and repair rules, both VIPs live). Prints "n_rules n_vip_rules n_session_rules".
check_switch() {
  ovs-ofctl -O OpenFlow13 dump-flows "$1" 'cookie=0x0200000000000000/0xff00000000000000' >"$IT_WORK/flows.txt"
  for st in reserved primary grace; do api "/cpam/vips?state=$st&limit=1000"; echo; done >"$IT_WORK/vips.json"
  api "/cpam/sessions?limit=100000" >"$IT_WORK/sessions.json"
  python3 - "$IT_WORK/flows.txt" "$IT_WORK/vips.json" "$IT_WORK/sessions.json" <<'PY'
import collections, ipaddress, json, re, sys
flows = [l for l in open(sys.argv[1]) if "cookie=" in l]
live = set()
for line in open(sys.argv[2]):
    if line.strip():
        live |= {v["vip"] for v in json.loads(line)}
sessions = {(s["shard"], s["id"]) for s in json.load(open(sys.argv[3]))}
base = int(ipaddress.IPv4Address("10.0.128.0"))
by_cookie = collections.defaultdict(list)
for l in flows:
    by_cookie[int(re.search(r"cookie=(0x[0-9a-f]+)", l).group(1), 16)].append(l)
bad = []
vip_rules = sess_rules = 0
for c, ls in by_cookie.items():
    kind, shard, sid = (c >> 52) & 0xf, (c >> 44) & 0xff, c & ((1 << 44) - 1)
    if kind != 4 and len(ls) > 1:
        bad.append(f"cookie {c:#x} on {len(ls)} rules")
    if kind == 1:
        vip_rules += 1
        vip = str(ipaddress.IPv4Address(base + 1 + (c & 0xffffffff)))
        if vip not in live:
            bad.append(f"VIP rule {c:#x} for {vip}, not a live VIP")
    elif kind in (2, 3, 4):
        sess_rules += len(ls)
        if (shard, sid) not in sessions:
            vips = re.findall(r"nw_(?:src|dst)=([0-9.]+)", ls[0])
            if kind != 4 or not all(v in live for v in vips):
                bad.append(f"session rule {c:#x}: no binding {shard}/{sid}")
    elif kind == 5:
        sess_rules += len(ls)
        if not all(v in live for v in re.findall(r"nw_(?:src|dst)=([0-9.]+)", ls[0])):
            bad.append(f"repair rule {c:#x} for a VIP that is not live")
    else:
        bad.append(f"cookie {c:#x}: unknown kind {kind}")
    # the same match twice (OVS keeps one per match and priority: a second would mean our cookie
    # differs for the same rule)
matches = collections.Counter(re.sub(r"(cookie|duration|n_packets|n_bytes|idle_age|hard_age)=[^,]*, ?", "", l).strip() for l in flows)
bad += [f"rule twice: {m}" for m, n in matches.items() if n > 1]
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
print(len(flows), vip_rules, sess_rules)
PY
}

# ---- (a) a leaf's controller connection drops in the middle of a rotation ---------------------
S3="${IT_PREFIX}s3"
wait_until 10 "no rotation in progress" not_rotating
resyncs0=$(cpam_stat resyncs); deleted0=$(cpam_stat resync_deleted)
e0=$(epoch)
rotate_now
# The connection is dropped by pointing the switch's controller at a closed port: OVS 3.1 flushes
# a bridge's flow table when its last controller is removed (del-controller) or the first one is
# added, so del-controller / set-controller is a reconnect with an empty table, not this fault.
DEAD_PORT=$(free_port) || fail "no free TCP port"
ovs-vsctl --timeout=10 set controller "$S3" target="\"tcp:127.0.0.1:$DEAD_PORT\""
rotating || fail "the rotation was already over (want the fault mid-rotation)"
step "epoch $e0 -> $((e0 + 1)) rotating; $S3 lost its controller connection (mid-rotation)"
# A stale rule in CPAM's range while it is away: the VIP rule cookie of a VIP that is free.
FREE_VIP=$(api "/cpam/vips?state=free&limit=1" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["vip"])')
idx=$(python3 -c "import ipaddress,sys; print(int(ipaddress.IPv4Address('$FREE_VIP')) - int(ipaddress.IPv4Address('10.0.128.0')) - 1)")
JUNK=$(printf '0x021%013x' "$idx")
ovs-ofctl -O OpenFlow13 add-flow "$S3" "cookie=$JUNK,priority=100,ip,nw_src=10.0.128.0/24,nw_dst=$FREE_VIP,actions=drop"
sleep 1
wait_stats_switches 2 10
n_before=$(ovs-ofctl -O OpenFlow13 dump-flows "$S3" 'cookie=0x0200000000000000/0xff00000000000000' | grep -c cookie= || true)
ovs-vsctl --timeout=10 set controller "$S3" target="\"tcp:127.0.0.1:$IT_PORT\""
t0=$(now_ms)
wait_until 15 "$S3 resynchronised" resyncs_above "$resyncs0"
T_RESYNC=$(($(now_ms) - t0))
step "$S3 had $n_before CPAM rules while away; back and resynchronised $(fmt_ms "$T_RESYNC") after set-controller ($(grep -o 'switch [0-9a-f]* resynchronised.*' "$CTRL_LOG" | tail -n 1))"
wait_until 10 "epoch $((e0 + 1)) published" epoch_above "$e0"
wait_until 10 "rotation done" not_rotating
sleep 1
deleted1=$(cpam_stat resync_deleted)
((deleted1 > deleted0)) || fail "the stale rule in CPAM's range was not deleted by the resync (resync_deleted $deleted0 -> $deleted1)"
ovs-ofctl -O OpenFlow13 dump-flows "$S3" "cookie=$JUNK/-1" | grep -q cookie= && fail "the stale rule for $FREE_VIP is still on $S3"
read -r n nv ns < <(check_switch "$S3") || fail "$S3 after the resync: stale or duplicate CPAM rules (above)"
step "$S3 after resync: $n CPAM rules ($nv VIP rules, $ns session rules), none stale or duplicated; resync_deleted $deleted0 -> $deleted1, kept $(cpam_stat resync_kept), added $(cpam_stat resync_added)"
for i in 0 1 2; do kill -0 "${HOLDS[$i]}" 2>/dev/null || { cat "$IT_WORK"/hold*.log >&2; fail "a session ended during the switch fault"; }; done
step "the 3 sessions are still running"

# ---- (b) kill -9 and restart ------------------------------------------------------------------
api "/cpam/sessions?limit=100000" >"$IT_WORK/sessions.before.json"
api /cpam/mapping >"$IT_WORK/mapping.before.json"
e_kill=$(epoch)
# Packets the session rules carried: summed over both leaves (first-hop rules, kinds 2 and 3).
session_pkts() {
  local s total=0
  for s in s2 s3; do
    total=$((total + $(ovs-ofctl -O OpenFlow13 dump-flows "${IT_PREFIX}$s" 'cookie=0x0220000000000000/0xffe0000000000000' \
      | sed -nE 's/.*n_packets=([0-9]+).*/\1/p' | awk '{s += $1} END {print s + 0}')))
  done
  echo "$total"
}
kill -KILL "$CTRL_PID"
wait "$CTRL_PID" 2>/dev/null || true
CTRL_PID=""
t_kill=$(now_ms)
p0=$(session_pkts)
sleep 4
p1=$(session_pkts)
step "sdnator killed (-9) in epoch $e_kill; in 4 s down the session rules carried $((p1 - p0)) packets"
((p1 - p0 > 100)) || fail "established sessions did not flow while the controller was down ($((p1 - p0)) packets in 4 s)"
for i in 0 1 2; do kill -0 "${HOLDS[$i]}" 2>/dev/null || { cat "$IT_WORK"/hold*.log >&2; fail "a session ended while the controller was down"; }; done

t_start=$(now_ms)
start_controller -c "$IT_WORK/sdnator.toml"
wait_stats_switches 3 20
t_conn=$(now_ms)
wait_until 15 "3 switches resynchronised after the restart" resyncs_above 2
t_sync=$(now_ms)
# A new session: a host resolves a peer and connects (retried until it works).
until hx h3 "$SESSION" churn h5.cpam.lan 5000 --count 1 --timeout-ms 3000 >"$IT_WORK/first.log" 2>&1; do
  (($(now_ms) - t_start < 20000)) || { cat "$IT_WORK/first.log" >&2; fail "no new session within 20 s of the restart"; }
done
t_new=$(now_ms)
step "restart: switches connected $(fmt_ms $((t_conn - t_start))), all resynchronised $(fmt_ms $((t_sync - t_start))), first new session $(fmt_ms $((t_new - t_start))) after start ($(fmt_ms $((t_new - t_kill))) after the kill)"
python3 - "$STATS" "$e_kill" <<'PY' || fail "the restarted controller did not reload its state"
import json, sys
c = json.load(open(sys.argv[1]))["apps"]["cpam"]
print("reload:", {k: c[k] for k in ("reloaded", "reloaded_epoch", "reloaded_bindings", "boot", "resyncs", "resync_kept",
                                    "resync_added", "resync_deleted", "resync_adopted", "recover_errors", "vips_sync_max_ms")})
ok = c["reloaded"] == 1 and c["reloaded_epoch"] >= int(sys.argv[2]) and c["reloaded_bindings"] + c["resync_adopted"] >= 3
sys.exit(0 if ok and c["recover_errors"] == 0 else 1)
PY
grep -q "cpam: reloaded from the archive" "$CTRL_LOG" || fail "no reload line in the log"
step "$(grep -o 'cpam: epoch [0-9]* reloaded.*' "$CTRL_LOG" | tail -n 1)"
# The sessions from before the kill are still bound to the same VIPs.
api "/cpam/sessions?limit=100000" >"$IT_WORK/sessions.after.json"
python3 - "$IT_WORK/sessions.before.json" "$IT_WORK/sessions.after.json" <<'PY' || fail "the pre-kill sessions lost their bindings"
import json, sys
key = lambda s: (s["client"], s["server"], s["client_port"], s["server_port"], s["proto"])
before = {key(s): (s["client_vip"], s["server_vip"]) for s in json.load(open(sys.argv[1])) if s["proto"] == "tcp" and s["server_port"] == 5000}
after = {key(s): (s["client_vip"], s["server_vip"]) for s in json.load(open(sys.argv[2]))}
holds = [k for k in before if after.get(k) == before[k]]
print(f"bindings: {len(before)} TCP/5000 before the kill, {len(holds)} bound again to the same VIPs after the restart")
sys.exit(0 if len(holds) >= 3 else 1)
PY

# Rotations after the restart hand out no VIP a pre-kill session still uses.
for r in 1 2; do
  e=$(epoch)
  rotate_now
  wait_until 10 "epoch $((e + 1))" epoch_above "$e"
  api /cpam/mapping >"$IT_WORK/mapping.after$r.json"
done
hx h2 "$SESSION" churn h6.cpam.lan 5000 --count 20 --rate 10 --timeout-ms 3000 --json "$IT_WORK/churn.json" \
  >"$IT_WORK/churn.log" 2>&1 || { cat "$IT_WORK/churn.log" >&2; fail "new sessions after the restart failed"; }
step "new sessions after the restart: $(tail -n 1 "$IT_WORK/churn.log")"
api "/cpam/sessions?limit=100000" >"$IT_WORK/sessions.end.json"
python3 - "$IT_WORK"/sessions.before.json "$IT_WORK"/mapping.after1.json "$IT_WORK"/mapping.after2.json "$IT_WORK"/sessions.end.json <<'PY' || fail "a VIP in use was handed out again"
import json, sys
before = json.load(open(sys.argv[1]))
in_use = {s[k] for s in before for k in ("client_vip", "server_vip")}
handed = {h["vip"] for f in sys.argv[2:4] for h in json.load(open(f))["hosts"]}
end = json.load(open(sys.argv[4]))
old = {(s["shard"], s["id"]) for s in before}
new_vips = {s[k] for s in end if (s["shard"], s["id"]) not in old for k in ("client_vip", "server_vip")}
clash = (handed | new_vips) & in_use
print(f"{len(in_use)} VIPs pinned before the kill; {len(handed)} handed out by 2 rotations after it and "
      f"{len(new_vips)} bound by new sessions: {len(clash)} in common {sorted(clash)}")
sys.exit(1 if clash else 0)
PY

for sw in s1 s2 s3; do
  read -r n nv ns < <(check_switch "${IT_PREFIX}$sw") || fail "${IT_PREFIX}$sw after the restart: stale or duplicate CPAM rules (above)"
  step "${IT_PREFIX}$sw after the restart and 2 rotations: $n CPAM rules ($nv VIP rules, $ns session rules), none stale or duplicated"
done

# ---- the sessions over the whole run ------------------------------------------------------------
ok=1
for i in 0 1 2; do wait "${HOLDS[$i]}" || ok=0; done
for c in 1 5 3; do step "hold h$c: $(cat "$IT_WORK/hold$c.log")"; done
((ok)) || fail "a long-lived session failed (max stall 2 s) across the faults"
python3 - "$IT_WORK"/hold1.json "$IT_WORK"/hold5.json "$IT_WORK"/hold3.json <<'PY'
import json, sys
for f in sys.argv[1:]:
    h = json.load(open(f))
    print(f"{f.rsplit('/', 1)[1]}: {h['echoes']}/{h['sent']} echoes in {h['duration_s']:.1f} s, max gap {h['max_gap_ms']:.1f} ms")
PY
stop_controller
step "ok"
