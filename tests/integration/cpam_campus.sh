#!/usr/bin/env bash
# CPAM on a small dual-homed campus (1 core, 2 aggregation, 4 edge switches, 16 hosts), rotating
# every 8 s, in the runtime mode given as the second argument (sharded | cooperative):
#   - DNS answers change every epoch, and the published mapping is the one DNS serves;
#   - a long-lived TCP session carrying data survives >= 3 rotations, no reset, no stall > 1 s;
#   - 500 new TCP connections spread over the rotation instants all succeed;
#   - UDP and ICMP sessions keep flowing across rotations;
#   - a retired VIP stops taking new connections after the grace window, and after quarantine it
#     does not even answer ARP; a scan of the VIP range finds only current VIPs;
#   - once traffic stops, session flows expire and reclaim brings the CPAM flows back to baseline.
source "$(dirname "$0")/lib.sh" "$@"
MODE=${2:-sharded}
SESSION=${SDNATOR_SESSION:-$(dirname "$SDNATOR")/sdnator-session}
[[ -x $SESSION ]] || fail "sdnator-session not found: $SESSION"
INTERVAL_MS=8000

up_cpam_campus
cat >"$IT_WORK/sdnator.toml" <<EOF
[controller]
apps = ["topology", "cpam", "forwarding"]
[sqlite]
path = "$IT_WORK/archive.db"
[cpam]
runtime = "$MODE"
rotation_interval_ms = $INTERVAL_MS
rotation_batch = 4
vip_range = "10.0.128.0/24"
vip_pool = 250
tcp_idle_timeout_s = 4
udp_active_timeout_s = 6
session_linger_ms = 2000
quarantine_ms = 60000
stats_interval_ms = 500
hosts_file = "$IT_WORK/hosts.txt"
rppt_samples = "$IT_WORK/rppt.csv"
EOF
start_controller -c "$IT_WORK/sdnator.toml"
"${TB[@]}" wait-connected 20 || fail "switches did not connect"
wait_stats_switches 7 20
wait_topology 10 20
step "campus up and discovered, cpam runtime = $MODE"

hx() { "${TB[@]}" exec "$@"; }
# Every host serves TCP and UDP echo on 5000; its first DNS query teaches topology where it is.
for n in $(seq 1 16); do
  hx "h$n" "$SESSION" serve --tcp 5000 --udp 5000 >"$IT_WORK/serve$n.log" 2>&1 &
  BG_PIDS+=($!); track_pid $!
done
for n in $(seq 1 16); do
  hx "h$n" "$SESSION" resolve "h$(((n % 16) + 1)).cpam.lan" >/dev/null || fail "h$n cannot resolve a peer"
done
step "every host resolved a peer through the in-band DNS responder"

mapping() { "$SDNATOR" data get -c "$IT_WORK/sdnator.toml" network/cpam/mapping/current --latest 1 2>/dev/null; }
epoch() { mapping | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["v"]["epoch"])'; }
vip_of() { mapping | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["v"]["hosts"][sys.argv[1]])' "$1"; }
wait_epoch() {  # wait_epoch N: until epoch >= N
  local t0; t0=$(now_ms)
  until (($(epoch) >= $1)); do
    (($(now_ms) - t0 < 3 * INTERVAL_MS)) || fail "epoch $1 not published in time"
    sleep 0.2
  done
}

# DNS follows the epoch, and agrees with the published mapping. The shards switch to a new epoch
# before the archive shows it, so a rotation landing between reading the epoch and the lookup
# made a0 the next epoch's answer, and the wait below returned at once (seen once: the first
# rotation comes 8 s after start, just as this step begins). Retry until the epoch read before
# the lookup and again 0.3 s after it (past the archive's flush) agree, and the answer equals the
# mapping read in between; a DNS that does not follow the mapping fails all five tries.
for _ in 1 2 3 4 5; do
  e0=$(epoch)
  a0=$(hx h2 "$SESSION" resolve h10.cpam.lan)
  sleep 0.3
  v0=$(vip_of h10)
  [[ $(epoch) == "$e0" && $a0 == "$v0" ]] && break
done
[[ $a0 == "$v0" ]] || fail "DNS says h10 is $a0, the mapping says $v0"
wait_epoch $((e0 + 1))
a1=$(hx h2 "$SESSION" resolve h10.cpam.lan)
[[ $a1 == "$(vip_of h10)" && $a1 != "$a0" ]] || fail "DNS did not move with the epoch ($a0 -> $a1)"
step "DNS: h10 was $a0 in epoch $e0, $a1 in epoch $((e0 + 1)) (= published mapping)"
OLD_VIP=$a1
OLD_EPOCH=$((e0 + 1))

# Long-lived TCP, UDP and ICMP across >= 3 rotations, while 500 connections churn.
hold_s=$((INTERVAL_MS * 7 / 2000))
hx h1 "$SESSION" hold h9.cpam.lan 5000 --duration "$hold_s" --interval-ms 100 --max-stall-ms 1000 \
  --json "$IT_WORK/hold.json" >"$IT_WORK/hold.log" 2>&1 &
HOLD=$!
hx h3 "$SESSION" udp h11.cpam.lan 5000 --duration "$hold_s" --pps 20 --max-loss 1 --json "$IT_WORK/udp.json" \
  >"$IT_WORK/udp.log" 2>&1 &
UDP=$!
ICMP_VIP=$(hx h4 "$SESSION" resolve h12.cpam.lan)
hx h4 ping -n -i 0.2 -c $((hold_s * 5)) -W 1 "$ICMP_VIP" >"$IT_WORK/ping.log" 2>&1 &
PING=$!
CHURN=()
for c in 5 6 7 8; do
  hx "h$c" "$SESSION" churn "h$((c + 8)).cpam.lan" 5000 --count 125 --rate 5 --timeout-ms 3000 \
    --json "$IT_WORK/churn$c.json" >"$IT_WORK/churn$c.log" 2>&1 &
  CHURN+=($!)
done
ok=1
wait "$HOLD" || ok=0
((ok)) || { cat "$IT_WORK/hold.log" >&2; fail "the long-lived TCP session broke"; }
step "hold: $(cat "$IT_WORK/hold.log")"
wait "$UDP" || { cat "$IT_WORK/udp.log" >&2; fail "UDP across rotations lost too much"; }
step "udp: $(cat "$IT_WORK/udp.log")"
wait "$PING" || true
lost=$(sed -nE 's/.* ([0-9.]+)% packet loss.*/\1/p' "$IT_WORK/ping.log")
step "icmp to a pinned VIP $ICMP_VIP across rotations: ${lost:-?}% loss"
[[ -n $lost ]] && python3 -c "import sys; sys.exit(0 if float('$lost') <= 2 else 1)" || fail "ICMP lost ${lost:-all}%"
for p in "${CHURN[@]}"; do wait "$p" || ok=0; done
total=0; failed=0
for c in 5 6 7 8; do
  read -r o f < <(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["succeeded"], s["count"]-s["succeeded"])' "$IT_WORK/churn$c.json")
  total=$((total + o + f)); failed=$((failed + f))
done
step "churn: $total connections across rotations, $failed failed"
((ok && failed == 0 && total == 500)) || { tail -n 3 "$IT_WORK"/churn*.log >&2; fail "$failed of $total connections failed"; }
e_end=$(epoch)
((e_end - OLD_EPOCH >= 3)) || fail "only $((e_end - OLD_EPOCH)) rotations happened during the sessions"

# The VIP h10 had in epoch OLD_EPOCH: past grace it takes no new connection; after quarantine no ARP.
# (quarantine_ms = 60 s: it cannot be back in the pool, and handed to another host, before the end.)
hx h2 "$SESSION" churn "$OLD_VIP" 5000 --count 1 --timeout-ms 1500 >"$IT_WORK/stale.log" 2>&1 \
  && fail "a connection to retired VIP $OLD_VIP succeeded $((e_end - OLD_EPOCH)) epochs later"
step "retired VIP $OLD_VIP refuses new connections ($(tail -n 1 "$IT_WORK/stale.log"))"

# Scan the VIP range right after a grace window: alive = current primaries only. The scan must
# fall inside one epoch (grace window over, next rotation not yet due); when the epoch noticed
# late leaves too little of it, or a rotation lands during the scan anyway, try the next one.
for attempt in 1 2 3; do
  e=$(epoch)
  wait_epoch $((e + 1))
  mapping >"$IT_WORK/mapping.before.json"
  # Until 5.5 s after the publish (grace_accept 5 s), from the record's own time stamps.
  left_ms=$(python3 -c 'import json,sys,time; v=json.loads(sys.stdin.readline())["v"]; now=time.time()*1000
print(int(v["next_rotation_ms"] - max(now, v["published_ms"] + 5500)))' <"$IT_WORK/mapping.before.json")
  if ((left_ms < 1700)); then  # the scan takes ~1.6 s; the rotation publishes ~0.45 s after it is due
    step "scan attempt $attempt: only $left_ms ms of the epoch left after the grace window; next epoch"
    continue
  fi
  sleep "$(python3 -c 'import json,sys,time; v=json.loads(sys.stdin.readline())["v"]; print(max(0, (v["published_ms"] + 5500 - time.time()*1000) / 1000))' <"$IT_WORK/mapping.before.json")"
  hx h2 "$SESSION" scan 10.0.128.0/24 5000 --timeout-ms 400 --parallel 64 --json "$IT_WORK/scan.json" \
    >"$IT_WORK/scan.txt" 2>"$IT_WORK/scan.err" || true
  mapping >"$IT_WORK/mapping.json"
  [[ $(epoch) -eq $((e + 1)) ]] && break
  step "scan attempt $attempt: a rotation landed during the scan; next epoch"
done
python3 - "$IT_WORK/scan.txt" "$IT_WORK/mapping.json" "$(vip_of h2)" <<'PY' || fail "the scan found addresses that are not current VIPs"
import json, sys
alive = {l.strip() for l in open(sys.argv[1]) if l.strip()}
cur = set(json.loads(open(sys.argv[2]).readline())["v"]["hosts"].values())
extra = alive - cur
print(f"scan: {len(alive)} alive of 254, {len(alive & cur)} current VIPs, extra {sorted(extra)}")
sys.exit(1 if extra or len(alive & cur) < len(cur) - 1 else 0)
PY
step "$(python3 -c 'import json,sys; print("scan summary:", json.load(open(sys.argv[1])).get("alive"), "alive")' "$IT_WORK/scan.json")"
ip netns exec "${IT_PREFIX}h2" ip neigh flush all 2>/dev/null || true
if hx h2 arping -c 2 -w 3 -I eth0 "$OLD_VIP" >/dev/null 2>&1; then fail "quarantined VIP $OLD_VIP still answers ARP"; fi
step "retired VIP $OLD_VIP is unreachable after quarantine (no ARP answer)"

# Quiet: session flows idle out (4 s), bindings linger (2 s), grace VIPs reclaim (5 s), and the
# CPAM flows return to one standing rule per host (+ the next epoch's while pre-installing).
cpam_flows() {  # session-scoped and VIP rules over every switch
  local s n=0 v=0
  for s in $(python3 -c 'import json,sys; [print(x["name"]) for x in json.load(open(sys.argv[1]))["switches"]]' "$MANIFEST"); do
    n=$((n + $(ovs-ofctl -O OpenFlow13 dump-flows "$s" 'cookie=0x0220000000000000/0xffe0000000000000' | grep -c cookie= || true)))
    n=$((n + $(ovs-ofctl -O OpenFlow13 dump-flows "$s" 'cookie=0x0240000000000000/0xffe0000000000000' | grep -c cookie= || true)))
    v=$((v + $(ovs-ofctl -O OpenFlow13 dump-flows "$s" 'cookie=0x0210000000000000/0xfff0000000000000' | grep -c cookie= || true)))
  done
  echo "$n $v"
}
kill "${BG_PIDS[@]}" 2>/dev/null || true
t0=$(now_ms)
while :; do
  read -r sess vips < <(cpam_flows)
  ((sess == 0 && vips <= 16 * 2)) && break
  if (($(now_ms) - t0 > 40000)); then
    for s in $(python3 -c 'import json,sys; [print(x["name"]) for x in json.load(open(sys.argv[1]))["switches"]]' "$MANIFEST"); do
      ovs-ofctl -O OpenFlow13 dump-flows "$s" 'cookie=0x0200000000000000/0xff00000000000000' | sed "s/^/$s /" | head -n 8 >&2
    done
    fail "after 40 s quiet: $sess session flows, $vips VIP rules (want 0, <= 32)"
  fi
  sleep 1
done
step "quiet after $(fmt_ms $(($(now_ms) - t0))): 0 session flows, $vips standing VIP rules for 16 hosts"

wait_stats_fresh
python3 - "$STATS" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
c = s["apps"]["cpam"]
print("cpam:", {k: c[k] for k in ("sessions_bound", "setups", "setup_failed", "repairs", "stale_vip", "arp_answered", "dns_answered")})
PY
samples=$(($(wc -l <"$IT_WORK/rppt.csv") - 1))
step "RPPT: $samples samples; $(python3 - "$IT_WORK/rppt.csv" <<'PY'
import csv, sys
v = sorted(int(r["rppt_ns"]) for r in csv.DictReader(open(sys.argv[1])))
q = lambda p: v[min(len(v) - 1, int(p * len(v)))] / 1e6
print(f"p50 {q(.5):.3f} p99 {q(.99):.3f} max {v[-1]/1e6:.3f} ms" if v else "none")
PY
)"
((samples >= 500)) || fail "only $samples RPPT samples"
stop_controller
step "ok"
