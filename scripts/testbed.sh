#!/usr/bin/env bash
# Small Open vSwitch fabric for sdnator: userspace bridges (datapath_type=netdev, OpenFlow 1.3
# only, fail_mode=secure) connected to one controller, hosts in network namespaces on veth
# pairs, switch-to-switch links as OVS patch ports. Facts behind each choice: TESTBED.md.
# Host n (1-based): 10.0.((n-1)/250).((n-1)%250+1)/16, MAC 00:00:00:00:HH:LL (n = 0xHHLL); the
# manifest's pairs are h_i <-> h_(i+N/2), i = 1..N/2. Manifest, timings: docs/testbed.md.
# IPv6 is disabled in every host unless --ipv6 (dual-stack): then host n's eth0 also has the ULA
# fd00:5d::X/64 (X = n in hex, no DAD: usable at once) and its EUI-64 link-local
# fe80::200:ff:fe00:X/64 (from the MAC; usable after DAD, ~1-2 s after 'up' returns).
# Switch-side veth ends (OVS ports, root namespace) never get IPv6.
#
# usage: scripts/testbed.sh [options] COMMAND [args]
#   up linear N          N switches in a chain, K hosts each (K = --hosts, default 1)
#   up tree [FANOUT]     root s1 + FANOUT leaf switches (default 2), K hosts per leaf (default 2)
#   up campus [HOSTS]    three tiers: --cores C (default 1), --aggs A (6), --edges E (12); HOSTS in
#                        total (default 500, at most 4000) in contiguous blocks over the edges; every
#                        core links to every aggregation switch, edge i to aggregation i mod A
#                        (--dual-homed: also to (i+1) mod A)
#   down                 delete exactly what 'up' created (by name, from the state file; works after a failed up)
#   status               what exists, and whether each switch is connected to its controller
#   exec HOST CMD...     run CMD inside host HOST's namespace (HOST: h1 or PREFIXh1)
#   pingall              ping every ordered host pair; matrix, reachability, first-packet vs steady RTT
#   pingpairs            ping a -> b for every manifest pair (h_i <-> h_{i+N/2}), P pairs at a time
#   wait-connected [S]   wait up to S seconds (default 30) until every switch is connected
#   restart-switch SW [D]  delete bridge SW, wait D seconds (default 0), re-create it as it was
#   link-down SWA SWB    cut the patch link SWA-SWB (e.g. s1 s2): both ports deleted, so both
#                        switches send PORT_STATUS (reason DELETE) to the controller
#     --silent           instead, both ends' patch peers point nowhere: traffic stops both ways and
#                        the switches report nothing (only an LLDP timeout can notice)
#   link-up SWA SWB      restore the link (same port numbers)
#   links                the manifest's links, each end's OpenFlow port config/state and its peer
# options (or environment):
#   --prefix P           name prefix for bridges, namespaces, ports (TB_PREFIX, default "sdt-")
#   --port N             controller tcp:127.0.0.1:N (TB_PORT, default 6653)
#   --controller T       full controller target, or "none" (TB_CONTROLLER)
#   --controllers T1,T2  several controllers (a cluster): every bridge connects to each target,
#                        e.g. tcp:127.0.0.1:P1,tcp:127.0.0.1:P2,tcp:127.0.0.1:P3; wait-connected
#                        then waits until every switch is connected to every one of them
#   --fail-mode M        secure (default) or standalone, for debugging without a controller
#                        (refused for shapes with loops: campus with --dual-homed or C, A >= 2)
#   --hosts K            hosts per edge switch (linear, tree)
#   --cores C --aggs A --edges E --dual-homed   campus shape (see above)
#   --manifest PATH      also write the JSON manifest here (TB_MANIFEST); always in the state dir
#   --ipv6               up: dual-stack hosts (TB_IPV6=1): IPv6 on in every host namespace, eth0 gets
#                        fd00:5d::X/64 (X = n in hex, nodad) and its EUI-64 link-local (see above);
#                        recorded in the state dir (status, manifest "dual_stack", hosts' "ipv6",
#                        "ipv6_ll"); 'up' does not wait for the link-local's DAD
#   --resolver IP        up: every host namespace gets /etc/netns/NS/resolv.conf with "nameserver IP"
#                        and "options timeout:1 attempts:2" (TB_RESOLVER); 'ip netns exec' (and so
#                        'testbed.sh exec') bind-mounts it over /etc/resolv.conf; 'down' removes
#                        exactly those /etc/netns/NS directories
#   --count C            pingall/pingpairs: pings per pair (default 5, interval 0.2 s)
#   --json PATH          pingall/pingpairs: write per-pair results (and the summary) as JSON
#   --quiet              pingall: summary only, no matrix; pingpairs: no per-pair lines
#   --parallel           pingall: all sources at once (each still one destination at a time)
#   --parallel P         pingpairs: at most P pairs at once, in waves (default 25)
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

PREFIX=${TB_PREFIX:-sdt-}
PORT=${TB_PORT:-6653}
CONTROLLER=${TB_CONTROLLER:-}
FAIL_MODE=${TB_FAIL_MODE:-secure}
HOSTS_PER_SWITCH=${TB_HOSTS:-}
MANIFEST=${TB_MANIFEST:-}
RESOLVER=${TB_RESOLVER:-}
IPV6=${TB_IPV6:-0}     # 1: dual-stack hosts (--ipv6)
IPV6_ULA=fd00:5d       # host n: ${IPV6_ULA}::<n in hex>/64
NETNS_ETC=/etc/netns   # iproute2's per-namespace /etc overlay (ip netns exec bind-mounts its files)
STATE_ROOT=${TB_STATE_DIR:-/run/sdnator-testbed}
PING_COUNT=${TB_PING_COUNT:-5}
PING_INTERVAL=${TB_PING_INTERVAL:-0.2}
CORES=${TB_CORES:-1}
AGGS=${TB_AGGS:-6}
EDGES=${TB_EDGES:-12}
DUAL_HOMED=0
SILENT=0
JSON_OUT=""
QUIET=0
PARALLEL=0
PAIR_PARALLEL=${TB_PAIR_PARALLEL:-25}
MAX_HOSTS=4000

usage() { awk '/^# usage:/ { on = 1 } on && /^#/ { sub(/^# ?/, ""); print; next } on { exit }' "${BASH_SOURCE[0]}"; exit 2; }

# ---------------------------------------------------------------- argument parsing
ARGS=()
while (($#)); do
  case $1 in
    --prefix) PREFIX=$2; shift 2 ;;
    --port) PORT=$2; shift 2 ;;
    --controller) CONTROLLER=$2; shift 2 ;;
    --controllers) CONTROLLER=$2; shift 2 ;;   # comma-separated targets
    --fail-mode) FAIL_MODE=$2; shift 2 ;;
    --hosts) HOSTS_PER_SWITCH=$2; shift 2 ;;
    --cores) CORES=$2; shift 2 ;;
    --aggs) AGGS=$2; shift 2 ;;
    --edges) EDGES=$2; shift 2 ;;
    --dual-homed) DUAL_HOMED=1; shift ;;
    --silent) SILENT=1; shift ;;
    --manifest) MANIFEST=$2; shift 2 ;;
    --resolver) RESOLVER=$2; shift 2 ;;
    --ipv6) IPV6=1; shift ;;
    --count) PING_COUNT=$2; shift 2 ;;
    --json) JSON_OUT=$2; shift 2 ;;
    --quiet) QUIET=1; shift ;;
    # pingall: "--parallel" (a flag); pingpairs: "--parallel P" (a number follows).
    --parallel) PARALLEL=1
                if [[ ${2:-} =~ ^[0-9]+$ ]]; then PAIR_PARALLEL=$2; shift 2; else shift; fi ;;
    -h|--help) usage ;;
    exec) ARGS+=("$@"); break ;;   # everything after 'exec HOST' belongs to the command
    *) ARGS+=("$1"); shift ;;
  esac
done
set -- "${ARGS[@]+"${ARGS[@]}"}"
(($#)) || usage
CMD=$1; shift

[[ $PREFIX =~ ^[a-z][a-z0-9-]{0,7}$ ]] || die "prefix '$PREFIX' must match [a-z][a-z0-9-]{0,7}"
[[ $PORT =~ ^[0-9]+$ ]] || die "--port must be a number"
[[ -n $CONTROLLER ]] || CONTROLLER="tcp:127.0.0.1:$PORT"
IFS=, read -r -a CONTROLLERS <<<"$CONTROLLER"   # one or more targets ("none" alone: no controller)
((${#CONTROLLERS[@]} >= 1)) || die "--controllers: at least one target"
for _t in "${CONTROLLERS[@]}"; do
  [[ $_t =~ ^(tcp|ssl|unix):.+ || ( $_t == none && ${#CONTROLLERS[@]} == 1 ) ]] \
    || die "controller target '$_t' must be tcp:IP:PORT, ssl:IP:PORT or unix:PATH (or none alone)"
done
[[ $FAIL_MODE == secure || $FAIL_MODE == standalone ]] || die "--fail-mode: secure or standalone"
[[ $IPV6 == 0 || $IPV6 == 1 ]] || die "TB_IPV6 must be 0 or 1 (or use --ipv6)"
[[ $PING_COUNT =~ ^[0-9]+$ ]] && ((PING_COUNT >= 1)) || die "--count must be a number >= 1"
if [[ -n $RESOLVER ]]; then
  _o='(0|[1-9][0-9]{0,2})'   # no leading zeros (resolv.conf would read them as octal)
  [[ $RESOLVER =~ ^$_o\.$_o\.$_o\.$_o$ ]] \
    && ((BASH_REMATCH[1] <= 255 && BASH_REMATCH[2] <= 255 && BASH_REMATCH[3] <= 255 && BASH_REMATCH[4] <= 255)) \
    || die "--resolver '$RESOLVER' is not an IPv4 address (a.b.c.d)"
fi

STATE_DIR="$STATE_ROOT/$PREFIX"
STATE_FILE="$STATE_DIR/state"        # lines "kind name", written BEFORE anything is created
HOSTS_TSV="$STATE_DIR/hosts.tsv"     # name netns ip mac switch port
SWITCHES_TSV="$STATE_DIR/switches.tsv"  # name dpid tier
LINKS_TSV="$STATE_DIR/links.tsv"     # a a_port b b_port type
PAIRS_TSV="$STATE_DIR/pairs.tsv"     # a b (host names)
CUT_TSV="$STATE_DIR/links_cut.tsv"   # link_index mode (reported|silent), while link-down holds

# ---------------------------------------------------------------- topology plan
# plan_* fill these arrays; nothing is touched on the system.
SW=()          # bridge names
SW_DPID=()     # 16 hex digits
SW_TIER=()     # core | aggregation | edge
declare -A NEXT_PORT=()
H_NAME=() H_NS=() H_IP=() H_MAC=() H_SW=() H_PORT=()
L_A=() L_AP=() L_B=() L_BP=()
P_A=() P_B=()  # communicating pairs (host names)
SHAPE=""
PREFIX_LEN=16

add_switch() {   # add_switch NUMBER [TIER]
  local i=$1 dpid
  printf -v dpid '%016x' "$i"
  SW+=("${PREFIX}s$i")
  SW_DPID+=("$dpid")
  SW_TIER+=("${2:-}")
  NEXT_PORT["${PREFIX}s$i"]=1
}
# add_host SWITCH: host n (1-based) gets 10.0.Q.R/16 with Q = (n-1)/250, R = (n-1)%250 + 1
# (h1..h250 = 10.0.0.1..250 as before, h251 = 10.0.1.1) and MAC 00:00:00:00:HH:LL (n = 0xHHLL).
add_host() {
  local sw=$1 n=$((${#H_NAME[@]} + 1)) mac
  ((n <= MAX_HOSTS)) || die "at most $MAX_HOSTS hosts (10.0.0.0/16, 250 per /24)"
  printf -v mac '00:00:00:00:%02x:%02x' $((n / 256)) $((n % 256))   # (-v: no subshell per host)
  H_NAME+=("h$n"); H_NS+=("${PREFIX}h$n"); H_IP+=("10.0.$(((n - 1) / 250)).$(((n - 1) % 250 + 1))")
  H_MAC+=("$mac")
  H_SW+=("$sw"); H_PORT+=("${NEXT_PORT[$sw]}")
  NEXT_PORT[$sw]=$((${NEXT_PORT[$sw]} + 1))
}
# host_ipv6 N: set IP6 (ULA) and LL (link-local) of host N, as the kernel derives it (EUI-64,
# addr_gen_mode 0) from the MAC 00:00:00:00:HH:LL: the first byte with its universal/local bit
# flipped (02), ff:fe in the middle, so fe80::0200:00ff:fe00:HHLL (N <= 4000 fits in HHLL).
host_ipv6() { printf -v IP6 '%s::%x' "$IPV6_ULA" "$1"; printf -v LL 'fe80::200:ff:fe00:%x' "$1"; }
add_link() {   # add_link SWA SWB
  local a=$1 b=$2
  L_A+=("$a"); L_AP+=("${NEXT_PORT[$a]}"); L_B+=("$b"); L_BP+=("${NEXT_PORT[$b]}")
  NEXT_PORT[$a]=$((${NEXT_PORT[$a]} + 1)); NEXT_PORT[$b]=$((${NEXT_PORT[$b]} + 1))
}
# make_pairs: host i talks to host i + floor(N/2), i = 1..floor(N/2); an odd last host is unpaired.
make_pairs() {
  local n=${#H_NAME[@]} half i
  half=$((n / 2)); P_A=() P_B=()
  for ((i = 0; i < half; i++)); do P_A+=("${H_NAME[$i]}"); P_B+=("${H_NAME[$((i + half))]}"); done
}
is_num() { [[ $1 =~ ^[0-9]+$ ]] && (($1 >= $2 && $1 <= $3)); }

plan() {
  local shape=${1:-} i j k=${HOSTS_PER_SWITCH:-x}
  [[ $k == x || ( $k =~ ^[0-9]+$ && $k -ge 1 && $k -le 64 ) ]] || die "--hosts must be 1..64"
  ((DUAL_HOMED == 0)) || [[ $shape == campus ]] || die "--dual-homed is a campus option"
  case $shape in
    linear)
      local n=${2:-}
      [[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 64)) || die "up linear N (1..64)"
      k=${HOSTS_PER_SWITCH:-1}
      for ((i = 1; i <= n; i++)); do add_switch "$i" edge; done
      for ((i = 1; i <= n; i++)); do
        for ((j = 0; j < k; j++)); do add_host "${PREFIX}s$i"; done
      done
      for ((i = 1; i < n; i++)); do add_link "${PREFIX}s$i" "${PREFIX}s$((i + 1))"; done
      SHAPE="linear $n"
      ;;
    tree)
      local f=${2:-2}
      [[ $f =~ ^[0-9]+$ ]] && ((f >= 1 && f <= 32)) || die "up tree [FANOUT] (1..32)"
      k=${HOSTS_PER_SWITCH:-2}
      add_switch 1 core
      for ((i = 2; i <= f + 1; i++)); do add_switch "$i" edge; done
      for ((i = 2; i <= f + 1; i++)); do
        for ((j = 0; j < k; j++)); do add_host "${PREFIX}s$i"; done
      done
      for ((i = 2; i <= f + 1; i++)); do add_link "${PREFIX}s1" "${PREFIX}s$i"; done
      SHAPE="tree $f"
      ;;
    campus)
      # Three tiers, numbered cores s1..sC, aggregation s(C+1)..s(C+A), edges s(C+A+1)..s(C+A+E).
      local total=${2:-500} c=$CORES a=$AGGS e=$EDGES
      [[ -z $HOSTS_PER_SWITCH ]] || die "up campus HOSTS takes the total host count; --hosts is for linear/tree"
      is_num "$total" 1 "$MAX_HOSTS" || die "up campus [HOSTS] (1..$MAX_HOSTS, default 500)"
      is_num "$c" 1 64 || die "--cores must be 1..64"
      is_num "$a" 1 256 || die "--aggs must be 1..256"
      is_num "$e" 1 1024 || die "--edges must be 1..1024"
      ((DUAL_HOMED == 0 || a >= 2)) || die "--dual-homed needs at least 2 aggregation switches (--aggs >= 2)"
      for ((i = 1; i <= c; i++)); do add_switch "$i" core; done
      for ((i = 1; i <= a; i++)); do add_switch "$((c + i))" aggregation; done
      for ((i = 1; i <= e; i++)); do add_switch "$((c + a + i))" edge; done
      # Hosts first (ports 1..k on each edge): contiguous blocks, the first total % E edges get one more.
      local base=$((total / e)) extra=$((total % e)) cnt
      for ((i = 0; i < e; i++)); do
        cnt=$((base + (i < extra ? 1 : 0)))
        for ((j = 0; j < cnt; j++)); do add_host "${PREFIX}s$((c + a + 1 + i))"; done
      done
      # Then the links: every core to every aggregation switch, then edge i to aggregation i mod A
      # (and (i+1) mod A when dual-homed). Ports are numbered in this order on each switch.
      for ((i = 1; i <= c; i++)); do
        for ((j = 1; j <= a; j++)); do add_link "${PREFIX}s$i" "${PREFIX}s$((c + j))"; done
      done
      for ((i = 0; i < e; i++)); do
        add_link "${PREFIX}s$((c + 1 + i % a))" "${PREFIX}s$((c + a + 1 + i))"
        ((DUAL_HOMED == 0)) || add_link "${PREFIX}s$((c + 1 + (i + 1) % a))" "${PREFIX}s$((c + a + 1 + i))"
      done
      SHAPE="campus $total"
      ;;
    *) die "unknown shape '$shape' (linear N | tree [FANOUT] | campus [HOSTS])" ;;
  esac
  local sw name
  for sw in "${SW[@]}"; do
    name="$sw-eth${NEXT_PORT[$sw]}"
    ((${#name} <= 15)) || die "interface name $name longer than 15 characters; use a shorter --prefix"
  done
  # A connected graph with at least as many links as switches has a cycle: in standalone mode
  # (NORMAL forwarding, no STP) a single broadcast would circulate forever.
  if [[ $FAIL_MODE == standalone ]] && ((${#L_A[@]} >= ${#SW[@]})); then
    die "this fabric has loops (${#SW[@]} switches, ${#L_A[@]} links): --fail-mode standalone would flood them; use secure with a controller that breaks loops"
  fi
  make_pairs
}

# ---------------------------------------------------------------- state
load_state() {
  [[ -f $HOSTS_TSV ]] || die "no testbed with prefix '$PREFIX' (no $HOSTS_TSV); run: testbed.sh --prefix $PREFIX up ..."
  H_NAME=() H_NS=() H_IP=() H_MAC=() H_SW=() H_PORT=() SW=() SW_DPID=() SW_TIER=()
  local a b c d e f
  while IFS=$'\t' read -r a b c d e f; do
    H_NAME+=("$a"); H_NS+=("$b"); H_IP+=("$c"); H_MAC+=("$d"); H_SW+=("$e"); H_PORT+=("$f")
  done <"$HOSTS_TSV"
  while IFS=$'\t' read -r a b c; do SW+=("$a"); SW_DPID+=("$b"); SW_TIER+=("$c"); done <"$SWITCHES_TSV"
  L_A=() L_AP=() L_B=() L_BP=()
  while IFS=$'\t' read -r a b c d e; do L_A+=("$a"); L_AP+=("$b"); L_B+=("$c"); L_BP+=("$d"); done <"$LINKS_TSV"
  if [[ -f $PAIRS_TSV ]]; then
    P_A=() P_B=()
    while IFS=$'\t' read -r a b; do P_A+=("$a"); P_B+=("$b"); done <"$PAIRS_TSV"
  else
    make_pairs   # state written by an older testbed.sh
  fi
  CONTROLLER=$(cat "$STATE_DIR/controller")
  FAIL_MODE=$(cat "$STATE_DIR/fail_mode")
  SHAPE=$(cat "$STATE_DIR/shape")
  DUAL_HOMED=$(cat "$STATE_DIR/dual_homed" 2>/dev/null || echo 0)
  RESOLVER=$(cat "$STATE_DIR/resolver" 2>/dev/null || true)
  IPV6=$(cat "$STATE_DIR/ipv6" 2>/dev/null || echo 0)   # (absent: state of an older testbed.sh, IPv4 only)
  declare -gA LINK_CUT=()
  if [[ -f $CUT_TSV ]]; then
    while read -r a b; do LINK_CUT[$a]=$b; done <"$CUT_TSV"
  fi
}

# json_names NAME...: ["a", "b", ...]
json_names() {
  local out="" x
  for x in "$@"; do out+="${out:+, }\"$x\""; done
  printf '[%s]' "$out"
}

write_manifest() {   # write_manifest PATH
  local out=$1 i sep last cores=() aggs=() edges=()
  for i in "${!SW[@]}"; do
    case ${SW_TIER[$i]} in
      core) cores+=("${SW[$i]}") ;;
      aggregation) aggs+=("${SW[$i]}") ;;
      *) edges+=("${SW[$i]}") ;;
    esac
  done
  {
    printf '{\n  "prefix": "%s",\n  "shape": "%s",\n  "controller": "%s",\n  "fail_mode": "%s",\n' \
      "$PREFIX" "$SHAPE" "$CONTROLLER" "$FAIL_MODE"
    printf '  "controllers": %s,\n' "$(IFS=, read -r -a _cs <<<"$CONTROLLER"; json_names "${_cs[@]}")"
    printf '  "dual_homed": %s,\n  "expected_links": %d,\n  "resolver": %s,\n  "dual_stack": %s,\n' \
      "$( ((DUAL_HOMED)) && echo true || echo false)" "${#L_A[@]}" "$([[ -n $RESOLVER ]] && echo "\"$RESOLVER\"" || echo null)" \
      "$( ((IPV6)) && echo true || echo false)"
    printf '  "tiers": {"core": %s, "aggregation": %s, "edge": %s},\n' \
      "$(json_names "${cores[@]+"${cores[@]}"}")" "$(json_names "${aggs[@]+"${aggs[@]}"}")" \
      "$(json_names "${edges[@]+"${edges[@]}"}")"
    printf '  "switches": [\n'
    last=$((${#SW[@]} - 1))
    for i in "${!SW[@]}"; do
      sep=,; ((i < last)) || sep=
      printf '    {"name": "%s", "dpid": "%s", "dpid_int": %d, "tier": "%s", "datapath_type": "netdev", "protocols": "OpenFlow13"}%s\n' \
        "${SW[$i]}" "${SW_DPID[$i]}" "$((16#${SW_DPID[$i]}))" "${SW_TIER[$i]}" "$sep"
    done
    printf '  ],\n  "hosts": [\n'
    last=$((${#H_NAME[@]} - 1))
    local v6=""
    for i in "${!H_NAME[@]}"; do
      sep=,; ((i < last)) || sep=
      # dual-stack: the host's IPv6 addresses on eth0 (both /64), derived from n as in host_ipv6.
      if ((IPV6)); then host_ipv6 "${H_NAME[$i]#h}"; v6=", \"ipv6\": \"$IP6\", \"ipv6_ll\": \"$LL\", \"ipv6_prefix_len\": 64"; fi
      printf '    {"name": "%s", "netns": "%s", "iface": "eth0", "ip": "%s", "prefix_len": %d%s, "mac": "%s", "switch": "%s", "port": %d, "switch_iface": "%s"}%s\n' \
        "${H_NAME[$i]}" "${H_NS[$i]}" "${H_IP[$i]}" "$PREFIX_LEN" "$v6" "${H_MAC[$i]}" "${H_SW[$i]}" "${H_PORT[$i]}" \
        "${H_SW[$i]}-eth${H_PORT[$i]}" "$sep"
    done
    printf '  ],\n  "links": [\n'
    last=$((${#L_A[@]} - 1))
    for i in "${!L_A[@]}"; do
      sep=,; ((i < last)) || sep=
      printf '    {"a": "%s", "a_port": %d, "b": "%s", "b_port": %d, "type": "patch"}%s\n' \
        "${L_A[$i]}" "${L_AP[$i]}" "${L_B[$i]}" "${L_BP[$i]}" "$sep"
    done
    printf '  ],\n  "pairs": [\n'
    last=$((${#P_A[@]} - 1))
    for i in "${!P_A[@]}"; do
      sep=,; ((i < last)) || sep=
      printf '    {"a": "%s", "b": "%s"}%s\n' "${P_A[$i]}" "${P_B[$i]}" "$sep"
    done
    printf '  ]\n}\n'
  } >"$out.tmp"
  mv "$out.tmp" "$out"
}

# ---------------------------------------------------------------- up
# cut_peer IFACE: the peer a silently cut patch port points at (an interface that never exists).
cut_peer() { echo "$1-cut"; }

# switch_args I: append to V the ovs-vsctl commands that create switch I with its controller,
# host ports and its side of every patch link (ports numbered as planned, via ofport_request).
# A link cut with link-down stays cut: its port is left out (reported) or points nowhere (silent).
switch_args() {
  local i=$1 sw=${SW[$1]} j n peer
  V+=(-- add-br "$sw"
      -- set bridge "$sw" datapath_type=netdev protocols=OpenFlow13 fail_mode="$FAIL_MODE"
         other-config:datapath-id="${SW_DPID[$i]}" other-config:disable-in-band=true)
  if [[ $CONTROLLER != none ]]; then
    # max_backoff 1 s: reconnect quickly when the controller starts after the switches. Several
    # targets (--controllers): one controller record each, all on the bridge (a cluster).
    local k ids=""
    IFS=, read -r -a _targets <<<"$CONTROLLER"
    for k in "${!_targets[@]}"; do
      V+=(-- --id=@c${i}x$k create controller target="\"${_targets[$k]}\"" max_backoff=1000 inactivity_probe=5000)
      ids+="${ids:+,}@c${i}x$k"
    done
    V+=(-- set bridge "$sw" controller="[$ids]")
  fi
  for j in "${!H_NS[@]}"; do
    [[ ${H_SW[$j]} == "$sw" ]] || continue
    n="$sw-eth${H_PORT[$j]}"
    V+=(-- add-port "$sw" "$n" -- set interface "$n" ofport_request="${H_PORT[$j]}")
  done
  for j in "${!L_A[@]}"; do
    local a="${L_A[$j]}-eth${L_AP[$j]}" b="${L_B[$j]}-eth${L_BP[$j]}" cut=${LINK_CUT[$j]:-}
    [[ $cut == reported ]] && continue
    if [[ ${L_A[$j]} == "$sw" ]]; then
      peer=$b; [[ $cut == silent ]] && peer=$(cut_peer "$a")
      V+=(-- add-port "$sw" "$a" -- set interface "$a" type=patch options:peer="$peer" ofport_request="${L_AP[$j]}")
    fi
    if [[ ${L_B[$j]} == "$sw" ]]; then
      peer=$a; [[ $cut == silent ]] && peer=$(cut_peer "$b")
      V+=(-- add-port "$sw" "$b" -- set interface "$b" type=patch options:peer="$peer" ofport_request="${L_BP[$j]}")
    fi
  done
}

cmd_up() {
  need_root "testbed.sh up"
  need_cmds ip ovs-vsctl ethtool sysctl
  ovs-vsctl --timeout=5 show >/dev/null 2>&1 || die "Open vSwitch is not running (scripts/ovs.sh start)"
  ((IPV6 == 0)) || [[ -d /proc/sys/net/ipv6 ]] || die "--ipv6: this kernel has no IPv6 (/proc/sys/net/ipv6 missing; ipv6.disable=1?)"
  local t0 i n sw phases=() tp
  t0=$(now_ms); tp=$t0
  # phase NAME: append "NAME <ms since the previous phase>" to the timing line printed at the end.
  phase() { local t; t=$(now_ms); phases+=("$1 $(fmt_ms $((t - tp)))"); tp=$t; }
  plan "$@"
  if [[ -f $STATE_FILE ]]; then
    die "testbed '$PREFIX' already exists (state in $STATE_DIR); run: testbed.sh --prefix $PREFIX down"
  fi
  declare -gA LINK_CUT=()
  # Refuse to adopt resources we did not create: a name clash means someone else owns it.
  # (One listing of the kernel's interfaces instead of one 'ip link show' per host. OVS-only
  # names, i.e. the patch ports, are not checked here: a clash there fails the OVSDB
  # transaction below, and the ERR trap removes what was made.)
  local -A kif=() obr=()
  while read -r n; do kif[$n]=1; done < <(ip -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }')
  while read -r n; do obr[$n]=1; done < <(ovs-vsctl --timeout=5 list-br)
  for sw in "${SW[@]}"; do
    [[ -z ${obr[$sw]:-} ]] || die "bridge $sw already exists and is not ours"
    [[ -z ${kif[$sw]:-} ]] || die "interface $sw already exists and is not ours"
  done
  for i in "${!H_NS[@]}"; do
    [[ -e /run/netns/${H_NS[$i]} ]] && die "namespace ${H_NS[$i]} already exists and is not ours"
    [[ -z ${kif[${H_SW[$i]}-eth${H_PORT[$i]}]:-} ]] || die "interface ${H_SW[$i]}-eth${H_PORT[$i]} already exists"
    if [[ -n $RESOLVER && -e $NETNS_ETC/${H_NS[$i]} ]]; then
      die "$NETNS_ETC/${H_NS[$i]} already exists and is not ours (a left-over of another testbed?)"
    fi
  done

  # Record every name before creating anything, so 'down' can undo a partial 'up'.
  mkdir -p "$STATE_DIR"
  {
    for sw in "${SW[@]}"; do echo "bridge $sw"; done
    for i in "${!H_NS[@]}"; do echo "netns ${H_NS[$i]}"; echo "veth ${H_SW[$i]}-eth${H_PORT[$i]}"; done
    if [[ -n $RESOLVER ]]; then
      for i in "${!H_NS[@]}"; do echo "netns_etc $NETNS_ETC/${H_NS[$i]}"; done
    fi
  } >"$STATE_FILE"
  echo "$CONTROLLER" >"$STATE_DIR/controller"
  echo "$FAIL_MODE" >"$STATE_DIR/fail_mode"
  echo "$SHAPE" >"$STATE_DIR/shape"
  echo "$DUAL_HOMED" >"$STATE_DIR/dual_homed"
  echo "$IPV6" >"$STATE_DIR/ipv6"
  [[ -z $RESOLVER ]] || echo "$RESOLVER" >"$STATE_DIR/resolver"
  for i in "${!H_NAME[@]}"; do
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "${H_NAME[$i]}" "${H_NS[$i]}" "${H_IP[$i]}" "${H_MAC[$i]}" "${H_SW[$i]}" "${H_PORT[$i]}"
  done >"$HOSTS_TSV"
  for i in "${!SW[@]}"; do printf '%s\t%s\t%s\n' "${SW[$i]}" "${SW_DPID[$i]}" "${SW_TIER[$i]}"; done >"$SWITCHES_TSV"
  for i in "${!L_A[@]}"; do printf '%s\t%s\t%s\t%s\tpatch\n' "${L_A[$i]}" "${L_AP[$i]}" "${L_B[$i]}" "${L_BP[$i]}"; done >"$LINKS_TSV"
  for i in "${!P_A[@]}"; do printf '%s\t%s\n' "${P_A[$i]}" "${P_B[$i]}"; done >"$PAIRS_TSV"

  phase "plan+checks"
  trap 'warn "testbed up failed; tearing down what was created"; do_down; exit 1' ERR

  # 1. Namespaces and veth pairs: switch side "<switch>-eth<port>" in the root namespace, host
  #    side eth0 created directly inside the host's namespace. Everything stays down for now.
  { for i in "${!H_NS[@]}"; do echo "netns add ${H_NS[$i]}"; done
    for i in "${!H_NS[@]}"; do
      echo "link add ${H_SW[$i]}-eth${H_PORT[$i]} type veth peer name eth0 address ${H_MAC[$i]} netns ${H_NS[$i]}"
    done; } | ip -batch -
  phase "netns+veth"
  # 1b. Resolver: /etc/netns/NS/resolv.conf, which every 'ip netns exec NS' (from step 2 on)
  #     bind-mounts over /etc/resolv.conf. One mkdir for all, then builtin printf (no fork per host).
  if [[ -n $RESOLVER ]]; then
    printf '%s\0' "${H_NS[@]/#/$NETNS_ETC/}" | xargs -0 mkdir -p --
    for i in "${!H_NS[@]}"; do
      printf '# testbed.sh %s: removed by down\nnameserver %s\noptions timeout:1 attempts:2\n' \
        "$PREFIX" "$RESOLVER" >"$NETNS_ETC/${H_NS[$i]}/resolv.conf"
    done
    phase "resolv.conf"
  fi
  # 2. Inside each host, before any link is up (so no router solicitation, MLD or DAD packets):
  #    IPv6 off (/proc/sys/net is the namespace's own); TX checksum offload off (TCP through the userspace datapath needs it); address; up.
  #    Up to 4 hosts are configured at once.
  #    --ipv6 (dual-stack): IPv6 explicitly on (all, default, eth0) and eth0's addr_gen_mode 0
  #    (EUI-64 link-local from the MAC; a new namespace's defaults, made explicit), plus the ULA
  #    with nodad (usable at once). The link-local's DAD starts when the switch end comes up
  #    (carrier, step 3) and 'up' does not wait for it: ~1-2 s (docs/testbed.md). Hosts then
  #    send what dual-stack hosts send (router solicitations, MLD reports, DAD probes).
  if ((IPV6)); then
    for i in "${!H_NS[@]}"; do
      host_ipv6 "${H_NAME[$i]#h}"
      printf '%s %s/%s %s/64\n' "${H_NS[$i]}" "${H_IP[$i]}" "$PREFIX_LEN" "$IP6"
    done | xargs -P 4 -L 1 sh -c 'ip netns exec "$0" sh -c "
        echo 0 >/proc/sys/net/ipv6/conf/all/disable_ipv6 && echo 0 >/proc/sys/net/ipv6/conf/default/disable_ipv6 &&
        echo 0 >/proc/sys/net/ipv6/conf/eth0/disable_ipv6 && echo 0 >/proc/sys/net/ipv6/conf/eth0/addr_gen_mode &&
        ethtool -K eth0 tx off >/dev/null &&
        printf \"link set lo up\naddr add $1 dev eth0\naddr add $2 dev eth0 nodad\nlink set eth0 up\n\" | ip -batch -" \
        || { echo "host $0: configuration failed (IPv6 sysctls, ethtool -K eth0 tx off or ip)" >&2; exit 255; }'
  else
    for i in "${!H_NS[@]}"; do printf '%s %s/%s\n' "${H_NS[$i]}" "${H_IP[$i]}" "$PREFIX_LEN"; done \
      | xargs -P 4 -L 1 sh -c 'ip netns exec "$0" sh -c "
          echo 1 >/proc/sys/net/ipv6/conf/all/disable_ipv6 && echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6 &&
          ethtool -K eth0 tx off >/dev/null &&
          printf \"link set lo up\naddr add $1 dev eth0\nlink set eth0 up\n\" | ip -batch -" \
          || { echo "host $0: configuration failed (sysctl, ethtool -K eth0 tx off or ip)" >&2; exit 255; }'
  fi
  phase "hosts"
  # 3. Switch-side ends: IPv6 off (the root namespace keeps its defaults), then up. Also with
  #    --ipv6: these are switch ports, not hosts.
  local keys=()
  for i in "${!H_NS[@]}"; do keys+=("net.ipv6.conf.${H_SW[$i]}-eth${H_PORT[$i]}.disable_ipv6=1"); done
  sysctl -q -w "${keys[@]}"
  for i in "${!H_NS[@]}"; do echo "link set ${H_SW[$i]}-eth${H_PORT[$i]} up"; done | ip -batch -
  phase "switch-ends"
  # 4. Switches, ports and patch links in one OVSDB transaction.
  V=(ovs-vsctl --timeout=30)
  for i in "${!SW[@]}"; do switch_args "$i"; done
  "${V[@]}" >/dev/null   # (prints the new controller UUIDs)
  trap - ERR
  phase "ovsdb"

  write_manifest "$STATE_DIR/manifest.json"
  [[ -z $MANIFEST ]] || cp "$STATE_DIR/manifest.json" "$MANIFEST"
  local detail=""
  if [[ $SHAPE == campus* ]]; then
    detail=" ($CORES core, $AGGS aggregation, $EDGES edge, $( ((DUAL_HOMED)) && echo dual-homed || echo single-homed))"
  fi
  log "testbed '$PREFIX' up: $SHAPE$detail, ${#SW[@]} switches, ${#H_NAME[@]} hosts, ${#L_A[@]} patch links," \
      "${#P_A[@]} pairs, controller $CONTROLLER, fail_mode $FAIL_MODE${RESOLVER:+, resolver $RESOLVER}," \
      "$(stack_desc)" \
      "($(fmt_ms $(($(now_ms) - t0))))"
  local ph; ph=$(printf '%s, ' "${phases[@]}"); log "up phases: ${ph%, }"
  log "manifest: ${MANIFEST:-$STATE_DIR/manifest.json}"
}

# ---------------------------------------------------------------- down
# Deletes exactly the names in the state file. Processes still running inside our namespaces
# (left-over pings, captures) are killed by pid, so the namespaces really go away. Returns only
# when none of our interfaces is left in the root namespace (the kernel destroys a deleted
# namespace, and with it the veth pairs, asynchronously).
do_down() {
  [[ -f $STATE_FILE ]] || return 0
  local kind name brs=() nss=() veths=() etcs=() t1 t2 t3
  t1=$(now_ms)
  while read -r kind name; do
    case $kind in
      bridge) brs+=("$name") ;;
      netns) nss+=("$name") ;;
      veth) veths+=("$name") ;;
      netns_etc) etcs+=("$name") ;;
    esac
  done <"$STATE_FILE"
  if ((${#brs[@]})) && ovs-vsctl --timeout=5 show >/dev/null 2>&1; then
    local v=(ovs-vsctl --timeout=30) b
    for b in "${brs[@]}"; do v+=(-- --if-exists del-br "$b"); done
    "${v[@]}" || warn "ovs-vsctl del-br failed"
  fi
  t2=$(now_ms)
  local ns pids live=()
  for ns in "${nss[@]}"; do [[ -e /run/netns/$ns ]] && live+=("$ns"); done
  if ((${#live[@]})); then
    pids=$(printf 'netns pids %s\n' "${live[@]}" | ip -force -batch - 2>/dev/null || true)
    [[ -z $pids ]] || kill -9 $pids 2>/dev/null || true
    printf 'netns del %s\n' "${live[@]}" | ip -force -batch - 2>/dev/null || true
  fi
  t3=$(now_ms)
  # Deleting a namespace deletes its eth0 and therefore the veth peer, but asynchronously: wait up
  # to 10 s for ours to disappear, then delete any stragglers by name.
  local left=() t_end=$(($(now_ms) + 10000)) tried=0
  while :; do
    mapfile -t left < <(ip -o link show 2>/dev/null | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }' \
                          | grep -Fx -f <(printf '%s\n' "${veths[@]+"${veths[@]}"}" "${brs[@]+"${brs[@]}"}") || true)
    ((${#left[@]})) || break
    if (($(now_ms) > t_end)); then
      ((tried)) && { warn "interfaces still present after down: ${left[*]}"; break; }
      printf 'link del %s\n' "${left[@]}" | ip -force -batch - 2>/dev/null || true
      tried=1; t_end=$(($(now_ms) + 2000))
    fi
    sleep 0.1
  done
  DOWN_PHASES="bridges $(fmt_ms $((t2 - t1))), netns $(fmt_ms $((t3 - t2))), veths gone $(fmt_ms $(($(now_ms) - t3)))"
  # The /etc/netns/NS directories 'up' created (checked absent before, recorded before creation).
  # Only paths of the form NETNS_ETC/<one of our namespaces> are removed; /etc/netns itself stays.
  if ((${#etcs[@]})); then
    local -A ours=()
    local d rm_list=()
    for name in "${nss[@]}"; do ours[$NETNS_ETC/$name]=1; done
    for d in "${etcs[@]}"; do
      if [[ -n ${ours[$d]:-} ]]; then rm_list+=("$d"); else warn "state lists $d, which is not one of our namespaces' directories; left alone"; fi
    done
    ((${#rm_list[@]} == 0)) || printf '%s\0' "${rm_list[@]}" | xargs -0 rm -rf -- || warn "could not remove some of ${rm_list[*]}"
    DOWN_PHASES+=", ${#rm_list[@]} $NETNS_ETC dirs"
  fi
  rm -rf "$STATE_DIR"
}

cmd_down() {
  need_root "testbed.sh down"
  if [[ ! -f $STATE_FILE ]]; then
    log "testbed '$PREFIX': nothing to tear down"
    rm -rf "$STATE_DIR"
    return 0
  fi
  local t0; t0=$(now_ms)
  do_down
  log "testbed '$PREFIX' down ($(fmt_ms $(($(now_ms) - t0))): $DOWN_PHASES)"
}

# ---------------------------------------------------------------- status / wait-connected
# Prints "connected total". OVSDB's is_connected column lags by up to ~5 s (ovs-vswitchd
# refreshes status periodically), so for a tcp: target count established TCP connections to the
# controller port instead; each switch opens exactly one.
# With several targets (--controllers), a switch counts when it is connected to every one of them:
# the count is the smallest per-target count.
connected_count() {
  local c=0 sw uuid st t min=-1 all_tcp=1
  local -a targets
  IFS=, read -r -a targets <<<"$CONTROLLER"
  for t in "${targets[@]}"; do [[ $t =~ ^tcp:[0-9.]+:[0-9]+$ ]] || all_tcp=0; done
  if ((all_tcp)); then
    for t in "${targets[@]}"; do
      [[ $t =~ ^tcp:([0-9.]+):([0-9]+)$ ]]
      c=$(ss -Htn state established "( dport = :${BASH_REMATCH[2]} )" dst "${BASH_REMATCH[1]}" 2>/dev/null | wc -l)
      ((min < 0 || c < min)) && min=$c
    done
    echo "$min ${#SW[@]}"
    return
  fi
  for sw in "${SW[@]}"; do
    uuid=$(ovs-vsctl --timeout=5 get bridge "$sw" controller 2>/dev/null | tr -d '[] ') || true
    [[ -n $uuid ]] || continue
    st=true
    for t in ${uuid//,/ }; do
      [[ $(ovs-vsctl --timeout=5 get controller "$t" is_connected 2>/dev/null || echo false) == true ]] || st=false
    done
    [[ $st == true ]] && c=$((c + 1))
  done
  echo "$c ${#SW[@]}"
}

# stack_desc: the hosts' address families, for up's and status's summary lines.
stack_desc() {
  if ((IPV6)); then echo "dual-stack (IPv4 + IPv6: $IPV6_ULA::X/64 and EUI-64 link-local on each eth0)"
  else echo "IPv4 only (IPv6 disabled in hosts)"; fi
}

cmd_status() {
  load_state
  echo "testbed '$PREFIX': $SHAPE, controller $CONTROLLER${RESOLVER:+, resolver $RESOLVER}, $(stack_desc), state $STATE_DIR"
  local i sw st uuid ok=0
  for i in "${!SW[@]}"; do
    sw=${SW[$i]}
    if ovs-vsctl --timeout=5 br-exists "$sw" 2>/dev/null; then
      uuid=$(ovs-vsctl --timeout=5 get bridge "$sw" controller | tr -d '[] ')
      if [[ $uuid == *,* ]]; then   # several controllers: connected state and role of each
        st=$(for u in ${uuid//,/ }; do
               printf '%s/%s ' "$(ovs-vsctl --timeout=5 get controller "$u" is_connected)" \
                 "$(ovs-vsctl --timeout=5 get controller "$u" role 2>/dev/null || echo '?')"
             done)
      else
        st=$([[ -n $uuid ]] && ovs-vsctl --timeout=5 get controller "$uuid" is_connected || echo "no-controller")
      fi
      printf '  switch %-12s %-11s dpid %s  ports %-3s connected=%s\n' "$sw" "${SW_TIER[$i]}" "${SW_DPID[$i]}" \
        "$(ovs-vsctl --timeout=5 list-ports "$sw" | wc -l)" "$st"
    else
      printf '  switch %-12s MISSING\n' "$sw"; ok=1
    fi
  done
  for i in "${!H_NAME[@]}"; do
    if [[ -e /run/netns/${H_NS[$i]} ]]; then
      IP6="" LL=""
      ((IPV6 == 0)) || { host_ipv6 "${H_NAME[$i]#h}"; IP6=" $IP6"; LL=" $LL"; }
      printf '  host   %-5s netns %-11s %-11s %s on %s port %s%s%s\n' "${H_NAME[$i]}" "${H_NS[$i]}" "${H_IP[$i]}" \
        "${H_MAC[$i]}" "${H_SW[$i]}" "${H_PORT[$i]}" "$IP6" "$LL"
    else
      printf '  host   %-5s MISSING (netns %s)\n' "${H_NAME[$i]}" "${H_NS[$i]}"; ok=1
    fi
  done
  return $ok
}

cmd_wait_connected() {
  load_state
  local limit=${1:-30} t0 c
  t0=$(now_ms)
  while :; do
    read -r c _ < <(connected_count)
    if ((c == ${#SW[@]})); then
      log "all ${#SW[@]} switches connected to $CONTROLLER ($(fmt_ms $(($(now_ms) - t0))))"
      return 0
    fi
    (($(now_ms) - t0 > limit * 1000)) && { warn "only $c/${#SW[@]} switches connected after ${limit}s"; return 1; }
    sleep 0.1
  done
}

# ---------------------------------------------------------------- restart-switch
# A switch "reboot": delete the bridge (its TCP connection to the controller closes and its flow
# table is lost), then re-create it with the same dpid, ports and controller. The host veths and
# the peers' patch ports stay, as cables would.
switch_index() {   # switch_index NAME -> index into SW (accepts s1 or PREFIXs1)
  local i
  for i in "${!SW[@]}"; do
    [[ $1 == "${SW[$i]}" || "$PREFIX$1" == "${SW[$i]}" ]] && { echo "$i"; return 0; }
  done
  return 1
}

cmd_restart_switch() {
  need_root "testbed.sh restart-switch"
  load_state
  local name=${1:-} idx down=${2:-0}
  idx=$(switch_index "$name") || die "usage: testbed.sh restart-switch SWITCH [SECONDS_DOWN] (e.g. s2)"
  local t0; t0=$(now_ms)
  ovs-vsctl --timeout=30 --if-exists del-br "${SW[$idx]}"
  sleep "$down"
  V=(ovs-vsctl --timeout=30)
  switch_args "$idx"
  "${V[@]}" >/dev/null
  log "switch ${SW[$idx]} re-created ($(fmt_ms $(($(now_ms) - t0))))"
}

# ---------------------------------------------------------------- link-down / link-up / links
# Patch ports have no carrier and OVS cannot set PORT_DOWN on them ('ovs-ofctl mod-port BR P down'
# logs "failed to set flags ... Operation not supported" and changes nothing), so a link is cut by:
#   reported (default): deleting both patch ports; each switch sends PORT_STATUS reason DELETE;
#   silent (--silent):   pointing both ports' options:peer at a name that never exists; the ports
#                        stay LIVE with config 0, nothing crosses in either direction, no PORT_STATUS.
# Verified on OVS 3.1 userspace: docs/testbed.md. link-up re-creates / re-points them (same numbers).
link_index() {   # link_index SWA SWB -> index into L_*, or die with a clear error
  local ia ib i a b
  ia=$(switch_index "${1:-}") || die "no switch '${1:-}' in testbed '$PREFIX' (switches: ${SW[*]})"
  ib=$(switch_index "${2:-}") || die "no switch '${2:-}' in testbed '$PREFIX' (switches: ${SW[*]})"
  a=${SW[$ia]} b=${SW[$ib]}
  for i in "${!L_A[@]}"; do
    if [[ ${L_A[$i]} == "$a" && ${L_B[$i]} == "$b" || ${L_A[$i]} == "$b" && ${L_B[$i]} == "$a" ]]; then
      echo "$i"; return 0
    fi
  done
  die "no link between $a and $b in testbed '$PREFIX' (see: testbed.sh --prefix $PREFIX links)"
}

save_cuts() {
  local k
  { for k in "${!LINK_CUT[@]}"; do printf '%s %s\n' "$k" "${LINK_CUT[$k]}"; done; } >"$CUT_TSV.tmp"
  mv "$CUT_TSV.tmp" "$CUT_TSV"
}

cmd_link() {   # cmd_link down|up SWA SWB
  local op=$1; shift
  need_root "testbed.sh link-$op"
  need_cmds ovs-vsctl
  (($# == 2)) || die "usage: testbed.sh link-$op SWA SWB$([[ $op == down ]] && echo ' [--silent]') (e.g. s1 s2)"
  load_state
  local li t0 mode cur a b
  li=$(link_index "$1" "$2")
  a="${L_A[$li]}-eth${L_AP[$li]}" b="${L_B[$li]}-eth${L_BP[$li]}"
  cur=${LINK_CUT[$li]:-}
  t0=$(now_ms)
  if [[ $op == down ]]; then
    mode=$( ((SILENT)) && echo silent || echo reported)
    if [[ $cur == "$mode" ]]; then log "link ${L_A[$li]} - ${L_B[$li]} is already cut ($cur)"; return 0; fi
    [[ -z $cur ]] || die "link ${L_A[$li]} - ${L_B[$li]} is already cut ($cur); link-up first"
    if [[ $mode == reported ]]; then
      ovs-vsctl --timeout=30 -- --if-exists del-port "${L_A[$li]}" "$a" -- --if-exists del-port "${L_B[$li]}" "$b"
    else
      ovs-vsctl --timeout=30 -- set interface "$a" options:peer="$(cut_peer "$a")" \
                             -- set interface "$b" options:peer="$(cut_peer "$b")"
    fi
    LINK_CUT[$li]=$mode
    save_cuts
    log "link ${L_A[$li]} port ${L_AP[$li]} <-> ${L_B[$li]} port ${L_BP[$li]} cut ($mode) ($(fmt_ms $(($(now_ms) - t0))))"
  else
    # Either way the result is the planned pair of patch ports peering each other.
    ovs-vsctl --timeout=30 \
      -- --may-exist add-port "${L_A[$li]}" "$a" \
      -- set interface "$a" type=patch options:peer="$b" ofport_request="${L_AP[$li]}" \
      -- --may-exist add-port "${L_B[$li]}" "$b" \
      -- set interface "$b" type=patch options:peer="$a" ofport_request="${L_BP[$li]}"
    unset "LINK_CUT[$li]"
    save_cuts
    log "link ${L_A[$li]} port ${L_AP[$li]} <-> ${L_B[$li]} port ${L_BP[$li]} up (was ${cur:-not cut}) ($(fmt_ms $(($(now_ms) - t0))))"
  fi
}

# port_descs BRIDGE: "port<TAB>config<TAB>state" per port, from OpenFlow PORT_DESC.
port_descs() {
  ovs-ofctl -O OpenFlow13 dump-ports-desc "$1" 2>/dev/null | awk '
    /^ [0-9]+\(/ { p = $1; sub(/\(.*/, "", p); next }
    /^ [A-Z]+\(/ { p = ""; next }
    p != "" && /^ +config:/ { c = $0; sub(/^ +config: +/, "", c); cfg[p] = c }
    p != "" && /^ +state:/ { s = $0; sub(/^ +state: +/, "", s); st[p] = s }
    END { for (q in cfg) printf "%s\t%s\t%s\n", q, cfg[q], st[q] }'
}

cmd_links() {
  need_cmds ovs-ofctl ovs-vsctl
  load_state
  local -A desc=() peer=() seen=()
  local i br p c s n o
  for br in "${L_A[@]}" "${L_B[@]}"; do
    [[ -n ${seen[$br]:-} ]] && continue
    seen[$br]=1
    while IFS=$'\t' read -r p c s; do desc["$br/$p"]="config $c, state $s"; done < <(port_descs "$br")
  done
  while IFS=, read -r n o; do peer[$n]=${o#peer=}; done \
    < <(ovs-vsctl --timeout=5 --format=csv --data=bare --no-headings --columns=name,options find interface type=patch)
  echo "links of testbed '$PREFIX' ($SHAPE): ${#L_A[@]} patch links; each end: OpenFlow port config/state (dump-ports-desc), peer (OVSDB)"
  local end_a end_b ia ib ok
  for i in "${!L_A[@]}"; do
    ia="${L_A[$i]}-eth${L_AP[$i]}" ib="${L_B[$i]}-eth${L_BP[$i]}" ok=1
    end_a=${desc["${L_A[$i]}/${L_AP[$i]}"]:-absent}; end_b=${desc["${L_B[$i]}/${L_BP[$i]}"]:-absent}
    [[ $end_a == "config 0, state LIVE" && $end_b == "config 0, state LIVE" ]] || ok=0
    [[ ${peer[$ia]:-} == "$ib" && ${peer[$ib]:-} == "$ia" ]] || ok=0
    printf '  %-10s port %-3s [%s, peer %s]  <->  %-10s port %-3s [%s, peer %s]  %s\n' \
      "${L_A[$i]}" "${L_AP[$i]}" "$end_a" "${peer[$ia]:-none}" "${L_B[$i]}" "${L_BP[$i]}" "$end_b" "${peer[$ib]:-none}" \
      "$( ((ok)) && echo up || echo "DOWN${LINK_CUT[$i]:+ (link-down ${LINK_CUT[$i]})}")"
  done
}

# ---------------------------------------------------------------- exec
host_index() {   # host_index NAME -> index into H_* (accepts h1 or PREFIXh1)
  local i
  for i in "${!H_NAME[@]}"; do
    [[ $1 == "${H_NAME[$i]}" || $1 == "${H_NS[$i]}" ]] && { echo "$i"; return 0; }
  done
  die "no host '$1' in testbed '$PREFIX'"
}

cmd_exec() {
  need_root "testbed.sh exec"
  (($# >= 2)) || die "usage: testbed.sh exec HOST CMD..."
  load_state
  local i; i=$(host_index "$1"); shift
  exec ip netns exec "${H_NS[$i]}" "$@"
}

# ---------------------------------------------------------------- pings
# ping_pair S D: ping host D from host S (indices into H_*; PING_COUNT pings, PING_INTERVAL apart)
# and print one line "S D received first steady_mean steady_list": first is the RTT of
# icmp_seq=1, steady_mean the mean of the later replies, steady_list those RTTs comma-separated
# ("-" when absent). Shared by pingall and pingpairs.
ping_pair() {
  local s=$1 d=$2 out
  out=$(ip netns exec "${H_NS[$s]}" ping -n -c "$PING_COUNT" -i "$PING_INTERVAL" -W 2 "${H_IP[$d]}" 2>&1 || true)
  awk -v s="$s" -v d="$d" '
    /bytes from/ { n++; match($0, /icmp_seq=[0-9]+/); q = substr($0, RSTART + 9, RLENGTH - 9) + 0
                   match($0, /time=[0-9.]+/); t = substr($0, RSTART + 5, RLENGTH - 5) + 0
                   if (q == 1) first = t; else { sum += t; k++; list = list (k > 1 ? "," : "") t } }
    END { printf "%d %d %d %s %s %s\n", s, d, n, (first == "" ? "-" : first), (k ? sprintf("%.3f", sum / k) : "-"),
                 (k ? list : "-") }' <<<"$out"
}

# rtt_stats: numbers on stdin -> "n mean p50 p95 max" (nearest-rank percentiles; "0 - - - -" if none).
rtt_stats() {
  sort -g | awk 'NF { v[++n] = $1; s += $1 }
    function pct(p,  r) { r = int((p * n + 99) / 100); if (r < 1) r = 1; return v[r] }
    END { if (!n) { print "0 - - - -"; exit }
          printf "%d %.3f %.3f %.3f %.3f\n", n, s / n, pct(50), pct(95), v[n] }'
}

# One ping run per ordered pair, sequentially by default, so the first packet of a pair measures
# the controller's reactive path (ARP + flow setup) without competing traffic. "First" is the RTT
# of icmp_seq=1; "steady" is the mean of the later replies.
cmd_pingall() {
  need_root "testbed.sh pingall"
  load_state
  local s d tmp t0
  tmp=$(mktemp -d)
  t0=$(now_ms)
  # ping_from S: ping every other host from host S, one destination after the other; one line
  # per pair (ping_pair's format) into $tmp/from.S.
  ping_from() {
    local s=$1 d
    for d in "${!H_NAME[@]}"; do
      [[ $s == "$d" ]] && continue
      ping_pair "$s" "$d" >>"$tmp/from.$s"
    done
  }
  if ((PARALLEL)); then
    for s in "${!H_NAME[@]}"; do ping_from "$s" & done
    wait
  else
    for s in "${!H_NAME[@]}"; do ping_from "$s"; done
  fi
  local -A RES=()
  local pairs=0 okp=0 sent=0 recv=0 r f st
  local firsts=() steadies=()
  while read -r s d r f st _; do
    RES["$s,$d"]=$r
    pairs=$((pairs + 1)); sent=$((sent + PING_COUNT)); recv=$((recv + r))
    ((r > 0)) && okp=$((okp + 1))
    [[ $f == - ]] || firsts+=("$f")
    [[ $st == - ]] || steadies+=("$st")
    printf '%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n' "${H_NAME[$s]}" "${H_NAME[$d]}" "${H_IP[$s]}" "${H_IP[$d]}" \
      "$PING_COUNT" "$r" "$f" "$st" >>"$tmp/pairs.tsv"
  done < <(for s in "${!H_NAME[@]}"; do cat "$tmp/from.$s" 2>/dev/null; done)
  local elapsed=$(($(now_ms) - t0))
  if ((QUIET == 0)); then
    printf 'pingall: replies received per ordered pair (row = source, column = destination; %s pings each)\n' "$PING_COUNT"
    printf '%6s' ""; for d in "${!H_NAME[@]}"; do printf '%6s' "${H_NAME[$d]}"; done; echo
    for s in "${!H_NAME[@]}"; do
      printf '%6s' "${H_NAME[$s]}"
      for d in "${!H_NAME[@]}"; do
        if [[ $s == "$d" ]]; then printf '%6s' "-"
        elif ((${RES["$s,$d"]} == 0)); then printf '%6s' "X"
        else printf '%6s' "${RES["$s,$d"]}"; fi
      done
      echo
    done
  fi
  local stats_first stats_steady
  stats_first=$(printf '%s\n' "${firsts[@]+"${firsts[@]}"}" | awk 'NF { s += $1; n++; if ($1 > m) m = $1 }
    END { if (n) printf "mean %.3f ms, max %.3f ms over %d pairs", s / n, m, n; else print "n/a" }')
  stats_steady=$(printf '%s\n' "${steadies[@]+"${steadies[@]}"}" | awk 'NF { s += $1; n++; if ($1 > m) m = $1 }
    END { if (n) printf "mean %.3f ms, max %.3f ms over %d pairs", s / n, m, n; else print "n/a" }')
  echo "pingall: $okp/$pairs ordered pairs reachable, $recv/$sent replies, $((pairs - okp)) pairs failed ($(fmt_ms $elapsed))"
  echo "pingall: first-packet RTT $stats_first"
  echo "pingall: steady RTT (packets 2..$PING_COUNT) $stats_steady"
  if ((okp < pairs)); then
    awk -F'\t' '$6 == 0 { printf "pingall: FAILED %s (%s) -> %s (%s)\n", $1, $3, $2, $4 }' "$tmp/pairs.tsv"
  fi
  if [[ -n $JSON_OUT ]]; then
    awk -F'\t' -v pairs="$pairs" -v okp="$okp" 'BEGIN { printf "{\"pairs\": %d, \"reachable\": %d, \"results\": [", pairs, okp }
      { printf "%s\n  {\"src\": \"%s\", \"dst\": \"%s\", \"src_ip\": \"%s\", \"dst_ip\": \"%s\", \"sent\": %d, \"received\": %d, \"first_rtt_ms\": %s, \"steady_rtt_ms\": %s}",
               (NR > 1 ? "," : ""), $1, $2, $3, $4, $5, $6, ($7 == "-" ? "null" : $7), ($8 == "-" ? "null" : $8) }
      END { print "\n]}" }' "$tmp/pairs.tsv" >"$JSON_OUT"
  fi
  rm -rf "$tmp"
  ((okp == pairs))
}

# pingpairs: a -> b for every manifest pair, at most PAIR_PARALLEL pairs at once, in waves (a wave
# starts when the previous one has finished; TESTBED.md: unpaced traffic from hundreds of hosts
# saturates the two cores). First-packet statistics are over pairs, steady ones over replies.
cmd_pingpairs() {
  need_root "testbed.sh pingpairs"
  load_state
  is_num "$PAIR_PARALLEL" 1 1000 || die "pingpairs --parallel P: 1..1000"
  local np=${#P_A[@]} tmp t0 k j waves=0 ai bi
  ((np > 0)) || die "testbed '$PREFIX' has no host pairs (fewer than 2 hosts)"
  local -A HIDX=()
  for k in "${!H_NAME[@]}"; do HIDX[${H_NAME[$k]}]=$k; done
  tmp=$(mktemp -d)
  t0=$(now_ms)
  for ((k = 0; k < np; k += PAIR_PARALLEL)); do
    waves=$((waves + 1))
    for ((j = k; j < k + PAIR_PARALLEL && j < np; j++)); do
      ai=${HIDX[${P_A[$j]}]:-} bi=${HIDX[${P_B[$j]}]:-}
      [[ -n $ai && -n $bi ]] || die "pair ${P_A[$j]} - ${P_B[$j]}: unknown host"
      ping_pair "$ai" "$bi" >"$tmp/pair.$j" &
    done
    wait
  done
  local elapsed=$(($(now_ms) - t0))
  local s d r f st list okp=0 recv=0
  for ((j = 0; j < np; j++)); do
    read -r s d r f st list <"$tmp/pair.$j" || { s=${HIDX[${P_A[$j]}]} d=${HIDX[${P_B[$j]}]} r=0 f=- st=- list=-; }
    ((r > 0)) && okp=$((okp + 1))
    recv=$((recv + r))
    [[ $f == - ]] || echo "$f" >>"$tmp/first"
    [[ $list == - ]] || tr ',' '\n' <<<"$list" >>"$tmp/steady"
    printf '%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n' "${H_NAME[$s]}" "${H_NAME[$d]}" "${H_IP[$s]}" "${H_IP[$d]}" \
      "$PING_COUNT" "$r" "$f" "$st" "$list" >>"$tmp/pairs.tsv"
  done
  local fs ss
  fs=$(rtt_stats <"$tmp/first" 2>/dev/null || rtt_stats </dev/null)
  ss=$(rtt_stats <"$tmp/steady" 2>/dev/null || rtt_stats </dev/null)
  if ((QUIET == 0)); then
    awk -F'\t' '{ printf "pingpairs: %-5s (%s) -> %-5s (%s): %d/%d replies, first %s ms, steady %s ms\n", $1, $3, $2, $4, $6, $5, $7, $8 }' \
      "$tmp/pairs.tsv"
  fi
  local pace="at most $PAIR_PARALLEL pairs at once, $waves waves, $PING_COUNT pings each at $PING_INTERVAL s"
  echo "pingpairs: $okp/$np pairs reachable, $recv/$((np * PING_COUNT)) replies, $((np - okp)) pairs failed ($pace; $(fmt_ms $elapsed))"
  read -r n1 m1 a1 b1 x1 <<<"$fs"
  read -r n2 m2 a2 b2 x2 <<<"$ss"
  echo "pingpairs: first-packet RTT (icmp_seq=1): mean $m1 ms, p50 $a1 ms, p95 $b1 ms, max $x1 ms over $n1 pairs"
  echo "pingpairs: steady RTT (icmp_seq=2..$PING_COUNT): mean $m2 ms, p50 $a2 ms, p95 $b2 ms, max $x2 ms over $n2 replies"
  if ((okp < np)); then
    awk -F'\t' '$6 == 0 { printf "pingpairs: FAILED %s (%s) -> %s (%s)\n", $1, $3, $2, $4 }' "$tmp/pairs.tsv"
  fi
  if [[ -n $JSON_OUT ]]; then
    awk -F'\t' -v np="$np" -v okp="$okp" -v recv="$recv" -v cnt="$PING_COUNT" -v iv="$PING_INTERVAL" \
        -v par="$PAIR_PARALLEL" -v waves="$waves" -v el="$elapsed" -v fs="$fs" -v ss="$ss" '
      function num(x) { return x == "-" ? "null" : x }
      function stats(str,  f) { split(str, f, " ")
        return sprintf("{\"n\": %d, \"mean\": %s, \"p50\": %s, \"p95\": %s, \"max\": %s}", f[1], num(f[2]), num(f[3]), num(f[4]), num(f[5])) }
      { res = res sprintf("%s\n    {\"a\": \"%s\", \"b\": \"%s\", \"a_ip\": \"%s\", \"b_ip\": \"%s\", \"sent\": %d, \"received\": %d, \"first_rtt_ms\": %s, \"steady_rtt_ms\": %s, \"steady_samples_ms\": [%s]}",
                          (NR > 1 ? "," : ""), $1, $2, $3, $4, $5, $6, num($7), num($8), ($9 == "-" ? "" : $9))
        if ($6 == 0) fail = fail sprintf("%s{\"a\": \"%s\", \"b\": \"%s\"}", (fail == "" ? "" : ", "), $1, $2) }
      END {
        printf "{\n  \"summary\": {\"pairs\": %d, \"reachable\": %d, \"failed\": %d, \"replies\": %d, \"sent\": %d, \"count\": %d, \"interval_s\": %s, \"parallel\": %d, \"waves\": %d, \"elapsed_ms\": %d,\n", np, okp, np - okp, recv, np * cnt, cnt, iv, par, waves, el
        printf "              \"first_rtt_ms\": %s,\n              \"steady_rtt_ms\": %s},\n", stats(fs), stats(ss)
        printf "  \"failed\": [%s],\n  \"results\": [%s\n  ]\n}\n", fail, res }' "$tmp/pairs.tsv" >"$JSON_OUT"
  fi
  rm -rf "$tmp"
  ((okp == np))
}

case $CMD in
  up) cmd_up "$@" ;;
  down) cmd_down ;;
  status) cmd_status ;;
  exec) cmd_exec "$@" ;;
  pingall) cmd_pingall ;;
  pingpairs) cmd_pingpairs ;;
  wait-connected) cmd_wait_connected "$@" ;;
  restart-switch) cmd_restart_switch "$@" ;;
  link-down) cmd_link down "$@" ;;
  link-up) cmd_link up "$@" ;;
  links) cmd_links ;;
  *) usage ;;
esac
