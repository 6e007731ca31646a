#!/usr/bin/env bash
# Attacks CPAM the way a user with root on a protected host would (docs/threat-model.md), on the
# small dual-homed campus with IPv6 on in every host (dual-stack: link-local from the MAC plus a
# ULA address, as real campus hosts are), CPAM rotating every 6 s. From h1, each way around the
# defense must reach nothing:
#   1. IPv6 link-local: ping -6 h16's fe80:: address (derived from its MAC, never rotates);
#   2. IPv6 all-nodes multicast (ff02::1): nobody else answers;
#   3. TCP over IPv6 to a listener on h16 (link-local and ULA);
#   4. an address of one's own choosing (ip addr add 10.0.200.1/16): ping and TCP to every real
#      address; and an nmap ping scan of the real /16 from it finds no host;
#   5. a spoofed source of another protected host (h2's address) to h16's VIP;
#   6. a gratuitous ARP claiming h2's address: h2 stays where it is and reachable;
#   7. ARP for a real address (arping h16's address);
# while every host still reaches its peer by name across rotations, and the controller's counters
# show the drops (switch-side rule counts and the source guard's).
source "$(dirname "$0")/lib.sh" "$@"
SESSION=${SDNATOR_SESSION:-$(dirname "$SDNATOR")/sdnator-session}
[[ -x $SESSION ]] || fail "sdnator-session not found: $SESSION"
need_cmds nmap arping
INTERVAL_MS=6000

up_cpam_campus --ipv6
cat >"$IT_WORK/sdnator.toml" <<EOF
[controller]
apps = ["topology", "cpam", "forwarding"]
[sqlite]
path = "$IT_WORK/archive.db"
[cpam]
rotation_interval_ms = $INTERVAL_MS
rotation_batch = 4
vip_range = "10.0.128.0/24"
vip_pool = 250
stats_interval_ms = 500
hosts_file = "$IT_WORK/hosts.txt"
EOF
start_controller -c "$IT_WORK/sdnator.toml"
"${TB[@]}" wait-connected 20 || fail "switches did not connect"
wait_stats_switches 7 20
wait_topology 10 20
step "dual-stack campus up and discovered"

hx() { "${TB[@]}" exec "$@"; }
ns() { echo "${IT_PREFIX}$1"; }
for n in $(seq 1 16); do
  hx "h$n" "$SESSION" serve --tcp 5000 --udp 5000 >"$IT_WORK/serve$n.log" 2>&1 &
  BG_PIDS+=($!); track_pid $!
done
# A TCP listener on h16 for IPv6 (any address).
hx h16 python3 -c '
import socket
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("::", 5001)); s.listen(16)
while True:
    c, _ = s.accept(); c.sendall(b"hello\n"); c.close()' >/dev/null 2>&1 &
BG_PIDS+=($!); track_pid $!
# Every host resolves its peer once (its first packets teach topology where it is).
reach_all() {  # every host connects to the next one by name; prints failures
  local n bad=0
  for n in $(seq 1 16); do
    hx "h$n" "$SESSION" churn "h$(((n % 16) + 1)).cpam.lan" 5000 --count 1 --timeout-ms 3000 >/dev/null 2>&1 \
      || { echo "h$n -> h$(((n % 16) + 1))"; bad=$((bad + 1)); }
  done
  return $bad
}
failed=$(reach_all) || fail "before the attacks, not every host reaches its peer by name: $failed"
step "every host reaches its peer by name (16/16)"

H16_LL=$(python3 -c 'import json,sys; print([h for h in json.load(open(sys.argv[1]))["hosts"] if h["name"].endswith("h16")][0]["ipv6_ll"])' "$MANIFEST")
H16_ULA=$(python3 -c 'import json,sys; print([h for h in json.load(open(sys.argv[1]))["hosts"] if h["name"].endswith("h16")][0]["ipv6"])' "$MANIFEST")
H1_LL=$(python3 -c 'import json,sys; print([h for h in json.load(open(sys.argv[1]))["hosts"] if h["name"].endswith("h1")][0]["ipv6_ll"])' "$MANIFEST")
[[ $(ip netns exec "$(ns h16)" cat /proc/sys/net/ipv6/conf/eth0/disable_ipv6) == 0 ]] || fail "IPv6 is off in h16"
ip netns exec "$(ns h16)" ip -6 addr show dev eth0 | grep -q "${H16_LL%%/*}" || fail "h16 has no $H16_LL"

attack_ok=1
tried() { step "attack: $1: ${2}"; [[ $2 == blocked* ]] || attack_ok=0; }

# 1-2. IPv6 link-local and all-nodes multicast.
out=$(hx h1 ping -6 -n -c 3 -i 0.3 -W 1 "${H16_LL%%/*}%eth0" 2>&1 || true)
recv=$(sed -nE 's/.* ([0-9]+) received.*/\1/p' <<<"$out")
tried "ping -6 h16's link-local ${H16_LL%%/*}" "$( ((${recv:-0} == 0)) && echo "blocked (0/3)" || echo "ANSWERED ${recv}/3")"
out=$(hx h1 ping -6 -n -c 3 -i 0.3 -W 1 "ff02::1%eth0" 2>&1 || true)
others=$(grep -oE 'from fe80::[0-9a-f:]+' <<<"$out" | sort -u | grep -vc "from ${H1_LL%%/*}$" || true)
tried "ping -6 ff02::1 (all nodes)" "$( ((others == 0)) && echo "blocked (no other host answered)" || echo "ANSWERED by $others hosts")"
# 3. TCP over IPv6.
for target in "${H16_LL%%/*}%eth0" "${H16_ULA%%/*}"; do
  if hx h1 python3 -c '
import socket, sys
fam, typ, _, _, addr = socket.getaddrinfo(sys.argv[1], 5001, socket.AF_INET6, socket.SOCK_STREAM)[0]
s = socket.socket(fam, typ); s.settimeout(3); s.connect(addr); print(s.recv(16))' "$target" >/dev/null 2>&1; then
    tried "TCP over IPv6 to h16 [$target]:5001" "CONNECTED"
  else
    tried "TCP over IPv6 to h16 [$target]:5001" "blocked (no connection)"
  fi
done

# 4. An address of one's own choosing, to every real address.
hx h1 ip addr add 10.0.200.1/16 dev eth0
out=$(hx h1 ping -n -c 3 -i 0.3 -W 1 -I 10.0.200.1 10.0.0.16 2>&1 || true)
recv=$(sed -nE 's/.* ([0-9]+) received.*/\1/p' <<<"$out")
tried "ping -I 10.0.200.1 10.0.0.16 (h16's real address)" "$( ((${recv:-0} == 0)) && echo "blocked (0/3)" || echo "ANSWERED ${recv}/3")"
hx h1 "$SESSION" scan 10.0.0.0/27 5000 --timeout-ms 400 --parallel 32 >"$IT_WORK/scan-real.txt" 2>"$IT_WORK/scan-real.err" || true
found=$(grep -cvE '^10\.0\.(0\.1|200\.1)$' "$IT_WORK/scan-real.txt" || true)
tried "TCP scan of the real addresses 10.0.0.0/27:5000" "$( ((found == 0)) && echo "blocked (0 alive)" || echo "FOUND $found: $(tr '\n' ' ' <"$IT_WORK/scan-real.txt")")"
t0=$(now_ms)
hx h1 nmap -n -sn -e eth0 -S 10.0.200.1 --min-rate 20000 --max-retries 0 10.0.0.0/16 -oG "$IT_WORK/nmap.gnmap" \
  >"$IT_WORK/nmap.txt" 2>&1 || true
up=$(grep 'Status: Up' "$IT_WORK/nmap.gnmap" | awk '{print $2}' | grep -vE '^10\.0\.(0\.1|200\.1)$' || true)
tried "nmap -sn 10.0.0.0/16 from 10.0.200.1 ($(fmt_ms $(($(now_ms) - t0))), $(grep -o '[0-9]* hosts\? up' "$IT_WORK/nmap.txt" | head -1))" \
  "$( [[ -z $up ]] && echo "blocked (no real address found)" || echo "FOUND $(echo $up)")"
hx h1 ip addr del 10.0.200.1/16 dev eth0

# 5. Another protected host's address as the source, to h16's VIP.
V16=$(hx h3 "$SESSION" resolve h16.cpam.lan)
hx h1 ip addr add 10.0.0.2/32 dev eth0
out=$(hx h1 ping -n -c 3 -i 0.3 -W 1 -I 10.0.0.2 "$V16" 2>&1 || true)
recv=$(sed -nE 's/.* ([0-9]+) received.*/\1/p' <<<"$out")
tried "ping -I 10.0.0.2 (h2's address) h16's VIP $V16" "$( ((${recv:-0} == 0)) && echo "blocked (0/3)" || echo "ANSWERED ${recv}/3")"
hx h1 ip addr del 10.0.0.2/32 dev eth0
# 6. A gratuitous ARP claiming h2's address; then h2 must still be reachable by name.
hx h1 arping -U -c 2 -w 2 -I eth0 -s 10.0.0.2 10.0.0.2 >/dev/null 2>&1 || true
if hx h3 "$SESSION" churn h2.cpam.lan 5000 --count 3 --timeout-ms 3000 >/dev/null 2>&1; then
  tried "gratuitous ARP from h1 claiming h2's address" "blocked (h2 still reached by name)"
else
  tried "gratuitous ARP from h1 claiming h2's address" "h2 NO LONGER REACHED"
fi
# 7. ARP for a real address.
ip netns exec "$(ns h1)" ip neigh flush all 2>/dev/null || true
if hx h1 arping -c 2 -w 3 -I eth0 10.0.0.16 >/dev/null 2>&1; then
  tried "arping 10.0.0.16 (h16's real address)" "ANSWERED"
else
  tried "arping 10.0.0.16 (h16's real address)" "blocked (no answer)"
fi
((attack_ok)) || fail "a way around the defense reached a protected host (see above)"

# The defense still serves everyone by name, across rotations.
e0=$("$SDNATOR" data get -c "$IT_WORK/sdnator.toml" network/cpam/mapping/current --latest 1 2>/dev/null \
  | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["v"]["epoch"])')
for round in 1 2; do
  sleep $((INTERVAL_MS / 1000))
  failed=$(reach_all) || fail "after the attacks (round $round), not every host reaches its peer by name: $failed"
done
e1=$("$SDNATOR" data get -c "$IT_WORK/sdnator.toml" network/cpam/mapping/current --latest 1 2>/dev/null \
  | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["v"]["epoch"])')
((e1 - e0 >= 2)) || fail "only $((e1 - e0)) rotations during the reachability rounds"
step "after the attacks every host still reaches its peer by name, epochs $e0 -> $e1"

# The counters show the drops.
sleep 1.2  # one more flow-stats poll of the guard's rules
wait_stats_fresh
python3 - "$STATS" <<'PY' || fail "the controller's counters do not show the drops"
import json, sys
s = json.load(open(sys.argv[1]))
g = s["apps"]["cpam"]["guard"]
t = s["apps"]["topology"]
print("guard:", json.dumps(g))
print("topology claims refused:", {k: t[k] for k in ("host_claims_refused", "ip_claims_refused", "ip_changes_refused")})
ok = g["ipv6_dropped"] > 0 and g["real_dropped"] > 0 and g["spoofed_src"] > 0 and t["ip_claims_refused"] > 0
sys.exit(0 if ok else 1)
PY
stop_controller
step "ok"
