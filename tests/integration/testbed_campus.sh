#!/usr/bin/env bash
# The testbed tool itself, without a controller (--controller none):
#  1. 'up campus 16 --cores 1 --aggs 2 --edges 4 --dual-homed' (fail_mode secure): the manifest
#     must describe the planned fabric (tiers, ports, links, pairs) and match what really exists:
#     bridges (netdev, OpenFlow13, dpid), host namespaces (eth0 IP/prefix/MAC, IPv6 off, tx off),
#     host ports and patch links with the manifest's OpenFlow port numbers, nothing extra.
#  2. link-down / link-up (reported: ports deleted; --silent: peers pointed nowhere) change what
#     dump-ports-desc and OVSDB show, survive restart-switch, and refuse unknown names.
#  3. 'down' leaves nothing of the prefix (namespaces, interfaces, bridges, OVSDB rows, state dir).
#  4. On a loop-free 'up linear 2 --fail-mode standalone', both link-down modes really stop
#     traffic in each direction and link-up restores it.
#  5. An 'up' that fails half-way (an OVS port with one of the fabric's patch-port names, created
#     here beforehand, makes the OVSDB transaction fail after namespaces and veths exist) exits
#     non-zero and removes everything it made, state dir included.
#  6. Dual-stack hosts: a loop-free 'up tree 2 --hosts 5 --ipv6 --fail-mode standalone' (10 hosts,
#     so h10 shows X in hex): manifest and state say dual-stack; each host has IPv6 on, eth0
#     carries its ULA fd00:5d::X/64 (usable at once: nodad) and its EUI-64 link-local; switch-side
#     veths keep IPv6 off; ping -6 h1 <-> h10 (across the root switch) between the ULAs right
#     after 'up', and between the link-locals (%eth0) once their DAD is done.
source "$(dirname "$0")/lib.sh" "$@"

TBN=("${TB[@]}" --controller none)
STATE="/run/sdnator-testbed/$IT_PREFIX"
MAN="$IT_WORK/manifest.json"
CLASH_BR="${IT_PREFIX%-}x"   # step 5's bridge: not under the prefix, removed by name
CHECKS=0
# On any exit also remove step 5's bridge (by name), then lib.sh's cleanup with our exit status.
campus_cleanup() {
  local rc=$?
  set +e   # (otherwise '(exit 1)' below would end the handler before it_cleanup)
  ovs-vsctl --timeout=5 --if-exists del-br "$CLASH_BR" >/dev/null 2>&1
  (exit $rc); it_cleanup
}
trap campus_cleanup EXIT

# want WHAT GOT EXPECTED: one check.
want() { CHECKS=$((CHECKS + 1)); [[ $2 == "$3" ]] || fail "$1: got '$2', want '$3'"; }
# leftovers: every trace of the prefix, one per line (empty if none).
leftovers() {
  { ip netns list | awk '{ print "netns " $1 }'
    ip -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print "link " $2 }'
    ovs-vsctl --timeout=5 list-br | sed 's/^/bridge /'
    ovs-vsctl --timeout=5 --bare --columns=name list interface | awk 'NF { print "ovsdb-interface " $1 }'
  } | grep -F " $IT_PREFIX" || true
}
# port_desc BRIDGE PORT: "name|config|state" of one OpenFlow port, or "absent".
port_desc() {
  ovs-ofctl -O OpenFlow13 dump-ports-desc "$1" | awk -v p="$2" '
    $0 ~ "^ " p "\\(" { n = $1; sub(/^[0-9]+\(/, "", n); sub(/\):$/, "", n); on = 1; next }
    /^ [0-9A-Z]+\(/ { on = 0 }
    on && /^ +config:/ { c = $0; sub(/^ +config: +/, "", c) }
    on && /^ +state:/ { s = $0; sub(/^ +state: +/, "", s) }
    END { if (n == "") print "absent"; else printf "%s|%s|%s\n", n, c, s }'
}
# wait_port_desc BRIDGE PORT WANT: a re-added port reports state 0 first, LIVE a moment later.
wait_port_desc() {
  local got i
  for i in $(seq 1 40); do got=$(port_desc "$1" "$2"); [[ $got == "$3" ]] && break; sleep 0.05; done
  want "dump-ports-desc $1 port $2" "$got" "$3"
}
peer_of() { ovs-vsctl --timeout=5 get interface "$1" options:peer 2>/dev/null | tr -d '"'; }

# ---------------------------------------------------------------- 1. campus 16, dual-homed
step "up campus 16 --cores 1 --aggs 2 --edges 4 --dual-homed (no controller, fail_mode secure)"
t0=$(now_ms)
"${TBN[@]}" --fail-mode secure --manifest "$MAN" up campus 16 --cores 1 --aggs 2 --edges 4 --dual-homed \
  || fail "testbed up campus failed"
step "up took $(fmt_ms $(($(now_ms) - t0)))"
[[ -s $MAN && -s $STATE/manifest.json ]] || fail "no manifest at $MAN and $STATE/manifest.json"
cmp -s "$MAN" "$STATE/manifest.json" || fail "--manifest copy differs from the state dir's manifest"

python3 - "$MAN" >"$IT_WORK/manifest.tsv" <<'EOF' || fail "manifest is not the expected JSON"
import json, sys
m = json.load(open(sys.argv[1]))
out = lambda *f: print(*f, sep="\t")
out("meta", m["prefix"], m["shape"], m["dual_homed"], m["expected_links"], m["fail_mode"], m["controller"], m["dual_stack"])
out("v6hosts", sum(1 for h in m["hosts"] if "ipv6" in h or "ipv6_ll" in h))
for t in ("core", "aggregation", "edge"): out("tier", t, " ".join(m["tiers"][t]))
for s in m["switches"]: out("switch", s["name"], s["dpid"], s["dpid_int"], s["datapath_type"], s["protocols"], s["tier"])
for h in m["hosts"]:
    out("host", h["name"], h["netns"], h["iface"], h["ip"], h["prefix_len"], h["mac"], h["switch"], h["port"], h["switch_iface"])
for l in m["links"]: out("link", l["a"], l["a_port"], l["b"], l["b_port"], l["type"])
for p in m["pairs"]: out("pair", p["a"], p["b"])
EOF
S=$IT_PREFIX
SWITCHES=() HOSTS=() LINKS=() PAIRS=()
declare -A TIER=()
while IFS=$'\t' read -r kind rest; do
  case $kind in
    meta) IFS=$'\t' read -r m_prefix m_shape m_dual m_links m_fail m_ctrl m_dstack <<<"$rest" ;;
    v6hosts) m_v6hosts=$rest ;;
    tier) IFS=$'\t' read -r t names <<<"$rest"; TIER[$t]=$names ;;
    switch) SWITCHES+=("$rest") ;;
    host) HOSTS+=("$rest") ;;
    link) LINKS+=("$rest") ;;
    pair) PAIRS+=("$rest") ;;
  esac
done <"$IT_WORK/manifest.tsv"

step "manifest: the planned fabric"
want "prefix" "$m_prefix" "$S"
want "shape" "$m_shape" "campus 16"
want "dual_homed" "$m_dual" "True"
want "fail_mode" "$m_fail" "secure"
want "controller" "$m_ctrl" "none"
want "dual_stack (no --ipv6)" "$m_dstack" "False"
want "hosts with ipv6/ipv6_ll fields (no --ipv6)" "$m_v6hosts" 0
want "state: ipv6" "$(cat "$STATE/ipv6")" 0
"${TBN[@]}" status >"$IT_WORK/status.txt" || fail "status failed"
want "status: address families" "$(head -1 "$IT_WORK/status.txt" | grep -o 'IPv4 only (IPv6 disabled in hosts)')" \
  "IPv4 only (IPv6 disabled in hosts)"
want "tiers.core" "${TIER[core]}" "${S}s1"
want "tiers.aggregation" "${TIER[aggregation]}" "${S}s2 ${S}s3"
want "tiers.edge" "${TIER[edge]}" "${S}s4 ${S}s5 ${S}s6 ${S}s7"
want "switch count" "${#SWITCHES[@]}" 7
want "host count" "${#HOSTS[@]}" 16
# 1 core x 2 aggregation + 4 edges x 2 uplinks. Ports: hosts 1..4 on each edge, uplinks 5 (to
# aggregation i mod 2) and 6 (to (i+1) mod 2); aggregation ports: core first, then edges in order.
want "expected_links" "$m_links" 10
want "link count" "${#LINKS[@]}" "$m_links"
expect_links=$(printf '%s\n' "s1 1 s2 1" "s1 2 s3 1" "s2 2 s4 5" "s3 2 s4 6" "s3 3 s5 5" "s2 3 s5 6" \
                 "s2 4 s6 5" "s3 4 s6 6" "s3 5 s7 5" "s2 5 s7 6" | sort)
got_links=$(for l in "${LINKS[@]}"; do
  IFS=$'\t' read -r a ap b bp ty <<<"$l"
  [[ $ty == patch ]] || echo "type $ty"
  echo "${a#"$S"} $ap ${b#"$S"} $bp"
done | sort)
want "links (a a_port b b_port)" "$(tr '\n' ';' <<<"$got_links")" "$(tr '\n' ';' <<<"$expect_links")"
want "pair count" "${#PAIRS[@]}" 8
want "first pair" "${PAIRS[0]}" $'h1\th9'
for i in $(seq 1 8); do want "pair $i" "${PAIRS[$((i - 1))]}" "h$i"$'\t'"h$((i + 8))"; done
i=0
for sw in "${SWITCHES[@]}"; do
  i=$((i + 1))
  IFS=$'\t' read -r name dpid dpid_int _ <<<"$sw"
  want "switch $i name" "$name" "${S}s$i"
  want "$name dpid" "$dpid" "$(printf '%016x' "$i")"
  want "$name dpid_int" "$dpid_int" "$i"
done
n=0
for h in "${HOSTS[@]}"; do
  n=$((n + 1))
  IFS=$'\t' read -r name ns ifc ip plen mac sw port swif <<<"$h"
  want "host $n name" "$name" "h$n"
  want "$name netns" "$ns" "${S}h$n"
  want "$name ip" "$ip/$plen" "10.0.0.$n/16"
  want "$name mac" "$mac" "$(printf '00:00:00:00:%02x:%02x' $((n / 256)) $((n % 256)))"
  # 16 hosts over 4 edges s4..s7 in contiguous blocks of 4, on ports 1..4.
  want "$name switch/port" "$sw/$port/$swif" "${S}s$((4 + (n - 1) / 4))/$(((n - 1) % 4 + 1))/${S}s$((4 + (n - 1) / 4))-eth$(((n - 1) % 4 + 1))"
done

step "manifest vs. Open vSwitch: bridges"
declare -A BR_DPT=() BR_PROTO=() BR_DPID=() BR_FAIL=() IF_TYPE=() IF_OFPORT=() IF_OPTS=() IF_BR=() NPORTS=()
while IFS=, read -r name dpt proto dpid failm; do
  BR_DPT[$name]=$dpt BR_PROTO[$name]=$proto BR_DPID[$name]=$dpid BR_FAIL[$name]=$failm
done < <(ovs-vsctl --timeout=5 --format=csv --data=bare --no-headings \
           --columns=name,datapath_type,protocols,datapath_id,fail_mode list bridge)
while IFS=, read -r name type ofport opts; do IF_TYPE[$name]=$type IF_OFPORT[$name]=$ofport IF_OPTS[$name]=$opts; done \
  < <(ovs-vsctl --timeout=5 --format=csv --data=bare --no-headings --columns=name,type,ofport,options list interface)
want "bridges with the prefix" "$(ovs-vsctl --timeout=5 list-br | grep -cF "$S")" 7
for sw in "${SWITCHES[@]}"; do
  IFS=$'\t' read -r name dpid _ dpt proto _ <<<"$sw"
  [[ -n ${BR_DPT[$name]+x} ]] || fail "bridge $name from the manifest does not exist"
  want "$name datapath_type" "${BR_DPT[$name]}" "$dpt"
  want "$name datapath_type (manifest)" "$dpt" netdev
  want "$name protocols" "${BR_PROTO[$name]}" "$proto"
  want "$name protocols (manifest)" "$proto" OpenFlow13
  want "$name datapath_id in use" "${BR_DPID[$name]}" "$dpid"
  want "$name fail_mode" "${BR_FAIL[$name]}" secure
  NPORTS[$name]=0
  while read -r p; do IF_BR[$p]=$name; done < <(ovs-vsctl --timeout=5 list-ports "$name")
done

step "manifest vs. the kernel: host namespaces"
for h in "${HOSTS[@]}"; do
  IFS=$'\t' read -r name ns ifc ip plen mac sw port swif <<<"$h"
  ip netns list | awk '{ print $1 }' | grep -Fx "$ns" >/dev/null || fail "namespace $ns ($name) does not exist"
  want "$name iface" "$ifc" eth0
  want "$name IPv4 on $ifc" "$(ip -n "$ns" -o -4 addr show dev "$ifc" | awk '{ print $4 }' | paste -sd' ')" "$ip/$plen"
  want "$name MAC of $ifc" "$(ip -n "$ns" -o link show "$ifc" | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2)" "$mac"
  want "$name $ifc up" "$(ip -n "$ns" -o link show "$ifc" | grep -c 'state UP')" 1
  want "$name IPv6 disabled" "$(ip netns exec "$ns" cat /proc/sys/net/ipv6/conf/all/disable_ipv6)" 1
  want "$name tx checksum offload" "$(ip netns exec "$ns" ethtool -k "$ifc" | awk -F': ' '/^tx-checksumming:/ { print $2 }')" off
  # Its switch port: a veth in the root namespace, on the manifest's bridge, with the manifest's port number.
  ip -o link show "$swif" >/dev/null 2>&1 || fail "switch-side veth $swif ($name) does not exist"
  want "$swif bridge" "${IF_BR[$swif]:-none}" "$sw"
  want "$swif ofport" "${IF_OFPORT[$swif]:-none}" "$port"
  want "$swif type" "${IF_TYPE[$swif]-none}" ""
  NPORTS[$sw]=$((${NPORTS[$sw]} + 1))
done

step "manifest vs. Open vSwitch: patch links"
npatch=0
for l in "${LINKS[@]}"; do
  IFS=$'\t' read -r a ap b bp ty <<<"$l"
  ia="$a-eth$ap" ib="$b-eth$bp"
  for e in "$ia $a $ap $ib" "$ib $b $bp $ia"; do
    read -r ifn br port peer <<<"$e"
    want "$ifn type" "${IF_TYPE[$ifn]:-none}" patch
    want "$ifn bridge" "${IF_BR[$ifn]:-none}" "$br"
    want "$ifn ofport" "${IF_OFPORT[$ifn]:-none}" "$port"
    want "$ifn peer" "${IF_OPTS[$ifn]:-none}" "peer=$peer"
    want "$br port $port in dump-ports-desc" "$(port_desc "$br" "$port")" "$ifn|0|LIVE"
    NPORTS[$br]=$((${NPORTS[$br]} + 1))
  done
  npatch=$((npatch + 1))
done
want "patch links found" "$npatch" "$m_links"
want "patch interfaces with the prefix" \
  "$(for k in "${!IF_TYPE[@]}"; do [[ $k == "$S"* && ${IF_TYPE[$k]} == patch ]] && echo "$k"; done | wc -l)" 20
for sw in "${!NPORTS[@]}"; do
  want "$sw ports (hosts + link ends, nothing else)" "$(ovs-vsctl --timeout=5 list-ports "$sw" | wc -l)" "${NPORTS[$sw]}"
done

# ---------------------------------------------------------------- 2. link-down / link-up
step "link-down s4 s2 (reported: both patch ports deleted)"
# The edge s4 (hosts h1-h4) reaches aggregation s2 on its port 5 (s2 port 2), s3 on port 6.
"${TBN[@]}" link-down s4 s2 || fail "link-down s4 s2 failed"
want "s2 port 2 after link-down" "$(port_desc "${S}s2" 2)" absent
want "s4 port 5 after link-down" "$(port_desc "${S}s4" 5)" absent
want "s4 port 6 (other uplink) after link-down" "$(port_desc "${S}s4" 6)" "${S}s4-eth6|0|LIVE"
want "s4 port 1 (host) after link-down" "$(port_desc "${S}s4" 1)" "${S}s4-eth1|0|LIVE"
"${TBN[@]}" links >"$IT_WORK/links.txt" || fail "links failed"
want "links: lines DOWN" "$(grep -c 'DOWN' "$IT_WORK/links.txt")" 1
grep "${S}s2 *port 2 .*${S}s4 *port 5 .*DOWN (link-down reported)" "$IT_WORK/links.txt" >/dev/null \
  || { cat "$IT_WORK/links.txt"; fail "links does not show s2:2 - s4:5 as cut"; }
step "restart-switch s4 keeps the cut link cut"
"${TBN[@]}" restart-switch s4 || fail "restart-switch s4 failed"
want "s4 port 5 after restart-switch" "$(port_desc "${S}s4" 5)" absent
wait_port_desc "${S}s4" 6 "${S}s4-eth6|0|LIVE"
step "link-up s4 s2"
"${TBN[@]}" link-up s4 s2 || fail "link-up s4 s2 failed"
wait_port_desc "${S}s2" 2 "${S}s2-eth2|0|LIVE"
wait_port_desc "${S}s4" 5 "${S}s4-eth5|0|LIVE"
want "s2-eth2 peer after link-up" "$(peer_of "${S}s2-eth2")" "${S}s4-eth5"
want "s4-eth5 peer after link-up" "$(peer_of "${S}s4-eth5")" "${S}s2-eth2"
want "links: all up" "$("${TBN[@]}" links | grep -c ' up$')" 10

step "link-down s2 s4 --silent (ports stay, peers point nowhere)"
"${TBN[@]}" link-down s2 s4 --silent || fail "link-down --silent failed"
want "s2 port 2 after silent link-down (OpenFlow sees no change)" "$(port_desc "${S}s2" 2)" "${S}s2-eth2|0|LIVE"
want "s4 port 5 after silent link-down (OpenFlow sees no change)" "$(port_desc "${S}s4" 5)" "${S}s4-eth5|0|LIVE"
p2=$(peer_of "${S}s2-eth2") p5=$(peer_of "${S}s4-eth5")
[[ -n $p2 && $p2 != "${S}s4-eth5" && -z $(ovs-vsctl --timeout=5 --bare --columns=name find interface name="$p2") ]] \
  || fail "silent cut: s2-eth2 peer '$p2' should name no existing interface"
[[ -n $p5 && $p5 != "${S}s2-eth2" && -z $(ovs-vsctl --timeout=5 --bare --columns=name find interface name="$p5") ]] \
  || fail "silent cut: s4-eth5 peer '$p5' should name no existing interface"
CHECKS=$((CHECKS + 2))
"${TBN[@]}" links >"$IT_WORK/links.txt" || fail "links failed"
grep -q "${S}s2 *port 2 .*${S}s4 *port 5 .*DOWN (link-down silent)" "$IT_WORK/links.txt" \
  || { cat "$IT_WORK/links.txt"; fail "links does not show the silent cut"; }
if "${TBN[@]}" link-down s2 s4 2>"$IT_WORK/err.txt"; then fail "link-down (reported) on a silently cut link succeeded"; fi
step "link-up s2 s4"
"${TBN[@]}" link-up s2 s4 || fail "link-up after silent cut failed"
want "s2-eth2 peer after link-up" "$(peer_of "${S}s2-eth2")" "${S}s4-eth5"
want "s4-eth5 peer after link-up" "$(peer_of "${S}s4-eth5")" "${S}s2-eth2"
want "links: all up" "$("${TBN[@]}" links | grep -c ' up$')" 10

step "link-down refuses unknown switches and switches without a link"
if "${TBN[@]}" link-down s1 s4 2>"$IT_WORK/err.txt"; then fail "link-down s1 s4 (no such link) succeeded"; fi
grep -q "no link between ${S}s1 and ${S}s4" "$IT_WORK/err.txt" || fail "unclear error: $(cat "$IT_WORK/err.txt")"
if "${TBN[@]}" link-down s1 s99 2>"$IT_WORK/err.txt"; then fail "link-down s1 s99 (no such switch) succeeded"; fi
grep -q "no switch 's99'" "$IT_WORK/err.txt" || fail "unclear error: $(cat "$IT_WORK/err.txt")"
CHECKS=$((CHECKS + 4))

# ---------------------------------------------------------------- 3. down
step "down"
t0=$(now_ms)
"${TBN[@]}" down || fail "down failed"
step "down took $(fmt_ms $(($(now_ms) - t0)))"
left=$(leftovers)
[[ -z $left ]] || fail "left behind after down: $(tr '\n' ' ' <<<"$left")"
[[ ! -e $STATE ]] || fail "state dir $STATE still exists after down"
CHECKS=$((CHECKS + 2))

# ---------------------------------------------------------------- 4. traffic across a cut link
step "up linear 2 --fail-mode standalone (loop-free; NORMAL forwarding, no controller)"
"${TBN[@]}" --fail-mode standalone up linear 2 || fail "testbed up linear 2 failed"
rx() { ip netns exec "${S}$1" cat /sys/class/net/eth0/statistics/rx_packets; }
# frames_at SRC DST DSTIP: frames that reach DST's eth0 while SRC sends 3 pings to it.
frames_at() {
  local b a; b=$(rx "$2")
  ip netns exec "${S}$1" ping -n -c 3 -i 0.2 -W 1 "$3" >/dev/null 2>&1 || true
  sleep 0.2; a=$(rx "$2"); echo $((a - b))
}
# ping_until SRC DSTIP SECONDS: until one ping answers (ms taken), or fail.
ping_until() {
  local t0; t0=$(now_ms)
  until ip netns exec "${S}$1" ping -n -c 1 -W 0.2 "$2" >/dev/null 2>&1; do
    (($(now_ms) - t0 < $3 * 1000)) || fail "no reply from $2 to $1 within $3 s"
  done
  echo $(($(now_ms) - t0))
}
ping_until h1 10.0.0.2 5 >/dev/null; ping_until h2 10.0.0.1 5 >/dev/null
for mode in reported silent; do
  flag=""; [[ $mode == silent ]] && flag=--silent
  "${TBN[@]}" link-down s1 s2 $flag || fail "link-down s1 s2 $flag failed"
  f12=$(frames_at h1 h2 10.0.0.2) f21=$(frames_at h2 h1 10.0.0.1)
  want "frames h1 -> h2 across the cut link ($mode)" "$f12" 0
  want "frames h2 -> h1 across the cut link ($mode)" "$f21" 0
  "${TBN[@]}" link-up s1 s2 || fail "link-up s1 s2 failed"
  ms=$(ping_until h1 10.0.0.2 5); ping_until h2 10.0.0.1 5 >/dev/null
  f12=$(frames_at h1 h2 10.0.0.2) f21=$(frames_at h2 h1 10.0.0.1)
  ((f12 >= 3 && f21 >= 3)) || fail "after link-up ($mode) only $f12 / $f21 frames crossed (want >= 3 each way)"
  CHECKS=$((CHECKS + 1))
  step "$mode cut: 0 frames crossed either way; after link-up pings answered in $ms ms"
done
"${TBN[@]}" down || fail "down (linear 2) failed"
left=$(leftovers)
[[ -z $left ]] || fail "left behind after down: $(tr '\n' ' ' <<<"$left")"

# ---------------------------------------------------------------- 5. a failed up cleans up
step "failed up: a clashing OVS port ${S}s1-eth1 (on our bridge $CLASH_BR) makes the OVSDB transaction fail"
ovs-vsctl --timeout=5 add-br "$CLASH_BR" -- set bridge "$CLASH_BR" datapath_type=netdev fail_mode=secure \
  -- add-port "$CLASH_BR" "${S}s1-eth1" -- set interface "${S}s1-eth1" type=patch options:peer="${S}nowhere" \
  || fail "could not create the clashing port"
if "${TBN[@]}" --fail-mode secure up campus 16 --cores 1 --aggs 2 --edges 4 --dual-homed >"$IT_WORK/up_fail.txt" 2>&1; then
  cat "$IT_WORK/up_fail.txt"; fail "up succeeded despite the clashing port name"
fi
grep -q "tearing down what was created" "$IT_WORK/up_fail.txt" \
  || { cat "$IT_WORK/up_fail.txt"; fail "up did not fail in its rollback path (after creating things)"; }
grep -q "ERROR: .*already exists" "$IT_WORK/up_fail.txt" \
  && { cat "$IT_WORK/up_fail.txt"; fail "up failed in a pre-check, not half-way"; }
grep -q "cannot create .*${S}s1-eth1" "$IT_WORK/up_fail.txt" \
  || { cat "$IT_WORK/up_fail.txt"; fail "up failed, but not on the clashing port name"; }
left=$(leftovers | grep -vFx "ovsdb-interface ${S}s1-eth1" || true)
[[ -z $left ]] || fail "left behind after the failed up: $(tr '\n' ' ' <<<"$left")"
[[ ! -e $STATE ]] || fail "state dir $STATE still exists after the failed up"
CHECKS=$((CHECKS + 4))
ovs-vsctl --timeout=5 del-br "$CLASH_BR" || fail "could not remove $CLASH_BR"
left=$(leftovers)
[[ -z $left ]] || fail "left behind: $(tr '\n' ' ' <<<"$left")"
"${TBN[@]}" down >/dev/null 2>&1 || fail "down after the failed up failed"

# ---------------------------------------------------------------- 6. dual-stack hosts (--ipv6)
step "up tree 2 --hosts 5 --ipv6 --fail-mode standalone (loop-free, no controller): dual-stack hosts"
t0=$(now_ms)
"${TBN[@]}" --fail-mode standalone --ipv6 --manifest "$MAN" up tree 2 --hosts 5 || fail "testbed up --ipv6 failed"
t_up=$(now_ms)
# ping6_replies SRC DST: replies to 'ping -6 -c 2' from namespace SRC to DST (e.g. fe80::1%eth0).
ping6_replies() { ip netns exec "$1" ping -6 -n -c 2 -i 0.2 -W 2 "$2" 2>&1 | awk '/ received/ { print $4 }' || true; }
# At once, before anything else (DAD would keep an address tentative for at least 1 s): no ULA
# may be tentative, and h1 reaches h10's ULA (fd00:5d::a; the manifest is checked below).
tent_now=$(for k in $(seq 1 10); do ip -n "${S}h$k" -o -6 addr show dev eth0 scope global tentative; done | wc -l)
ula_now=$(ping6_replies "${S}h1" fd00:5d::a)
step "up --ipv6 took $(fmt_ms $((t_up - t0))); right after it: $tent_now tentative ULAs, ping -6 h1 -> h10 ULA $ula_now/2 replies"
want "ULAs tentative right after up (nodad)" "$tent_now" 0
want "ping -6 h1 -> h10 ULA fd00:5d::a right after up" "$ula_now" 2
python3 - "$MAN" >"$IT_WORK/manifest6.tsv" <<'EOF' || fail "dual-stack manifest is not the expected JSON"
import json, sys
m = json.load(open(sys.argv[1]))
print("meta", m["dual_stack"], len(m["hosts"]), sep="\t")
for h in m["hosts"]:
    print("host", h["name"], h["netns"], h["ip"], h["ipv6"], h["ipv6_ll"], h["ipv6_prefix_len"], h["switch_iface"], sep="\t")
EOF
HOSTS6=()
while IFS=$'\t' read -r kind rest; do
  case $kind in
    meta) IFS=$'\t' read -r m_dstack m_nhosts <<<"$rest" ;;
    host) HOSTS6+=("$rest") ;;
  esac
done <"$IT_WORK/manifest6.tsv"
want "dual_stack (--ipv6)" "$m_dstack" "True"
want "host count (tree 2 --hosts 5)" "$m_nhosts" 10
want "h10's ULA and link-local (X in hex)" "$(cut -f4,5 <<<"${HOSTS6[9]}")" $'fd00:5d::a\tfe80::200:ff:fe00:a'
want "state: ipv6" "$(cat "$STATE/ipv6")" 1
"${TBN[@]}" status >"$IT_WORK/status.txt" || fail "status failed"
want "status: address families" "$(head -1 "$IT_WORK/status.txt" | grep -o 'dual-stack (IPv4 + IPv6')" "dual-stack (IPv4 + IPv6"
n=0
for h in "${HOSTS6[@]}"; do
  n=$((n + 1))
  IFS=$'\t' read -r name ns ip ula ll plen6 swif <<<"$h"
  want "$name ipv6 (manifest)" "$ula/$plen6" "$(printf 'fd00:5d::%x' "$n")/64"
  want "$name ipv6_ll (manifest: EUI-64 of the MAC)" "$ll" "$(printf 'fe80::200:ff:fe00:%x' "$n")"
  want "$name IPv6 enabled (all)" "$(ip netns exec "$ns" cat /proc/sys/net/ipv6/conf/all/disable_ipv6)" 0
  want "$name IPv6 enabled (eth0)" "$(ip netns exec "$ns" cat /proc/sys/net/ipv6/conf/eth0/disable_ipv6)" 0
  want "$name eth0 addr_gen_mode (EUI-64)" "$(ip netns exec "$ns" cat /proc/sys/net/ipv6/conf/eth0/addr_gen_mode)" 0
  want "$name IPv4 on eth0" "$(ip -n "$ns" -o -4 addr show dev eth0 | awk '{ print $4 }')" "$ip/16"
  want "$name global IPv6 on eth0" "$(ip -n "$ns" -o -6 addr show dev eth0 scope global | awk '{ print $4 }' | paste -sd' ')" "$ula/64"
  want "$name link-local on eth0" "$(ip -n "$ns" -o -6 addr show dev eth0 scope link | awk '{ print $4 }' | paste -sd' ')" "$ll/64"
  want "$name ULA added with nodad" "$(ip -n "$ns" -o -6 addr show dev eth0 scope global | grep -c ' nodad')" 1
  want "$name tx checksum offload" "$(ip netns exec "$ns" ethtool -k eth0 | awk -F': ' '/^tx-checksumming:/ { print $2 }')" off
  want "$swif (switch side) IPv6 disabled" "$(sysctl -n "net.ipv6.conf.$swif.disable_ipv6")" 1
  want "$swif (switch side) IPv6 addresses" "$(ip -o -6 addr show dev "$swif" | wc -l)" 0
done
IFS=$'\t' read -r _ ns1 _ ula1 ll1 _ <<<"${HOSTS6[0]}"
IFS=$'\t' read -r _ ns2 _ _ ll2 _ <<<"${HOSTS6[9]}"
want "ping -6 h10 -> h1 ULA $ula1" "$(ping6_replies "$ns2" "$ula1")" 2
# The link-locals are tentative until DAD ends (~1-2 s after the switch ends come up); 'up' does not wait.
until [[ -z $(ip -n "$ns1" -6 addr show dev eth0 tentative; ip -n "$ns2" -6 addr show dev eth0 tentative) ]]; do
  (($(now_ms) - t_up < 10000)) || fail "link-locals still tentative 10 s after up"
  sleep 0.05
done
step "link-locals no longer tentative $(fmt_ms $(($(now_ms) - t_up))) after up returned (first looked after the checks and ULA pings)"
want "DAD failures" "$(ip -n "$ns1" -6 addr show dadfailed; ip -n "$ns2" -6 addr show dadfailed)" ""
want "ping -6 h1 -> h10 link-local $ll2%eth0" "$(ping6_replies "$ns1" "$ll2%eth0")" 2
want "ping -6 h10 -> h1 link-local $ll1%eth0" "$(ping6_replies "$ns2" "$ll1%eth0")" 2
step "dual-stack: both addresses on each eth0, ULA and link-local pings answered ($(fmt_ms $(($(now_ms) - t0))) since up started)"
"${TBN[@]}" down || fail "down (dual-stack tree) failed"
left=$(leftovers)
[[ -z $left ]] || fail "left behind after down: $(tr '\n' ' ' <<<"$left")"
[[ ! -e $STATE ]] || fail "state dir $STATE still exists after down"
CHECKS=$((CHECKS + 2))

step "PASS ($CHECKS checks)"
