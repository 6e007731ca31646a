#!/usr/bin/env bash
# Small Open vSwitch fabric for sdnator: userspace bridges (datapath_type=netdev, OpenFlow 1.3
# only, fail_mode=secure) connected to one controller, hosts in network namespaces on veth
# pairs, switch-to-switch links as OVS patch ports. Facts behind each choice: TESTBED.md.
#
# usage: scripts/testbed.sh [options] COMMAND [args]
#   up linear N          N switches in a chain, K hosts each (K = --hosts, default 1)
#   up tree [FANOUT]     root s1 + FANOUT leaf switches (default 2), K hosts per leaf (default 2)
#   down                 delete exactly what 'up' created (by name, from the state file; works after a failed up)
#   status               what exists, and whether each switch is connected to its controller
#   exec HOST CMD...     run CMD inside host HOST's namespace (HOST: h1 or PREFIXh1)
#   pingall              ping every ordered host pair; matrix, reachability, first-packet vs steady RTT
#   wait-connected [S]   wait up to S seconds (default 30) until every switch is connected
#   restart-switch SW [D]  delete bridge SW, wait D seconds (default 0), re-create it as it was
# options (or environment):
#   --prefix P           name prefix for bridges, namespaces, ports (TB_PREFIX, default "sdt-")
#   --port N             controller tcp:127.0.0.1:N (TB_PORT, default 6653)
#   --controller T       full controller target, or "none" (TB_CONTROLLER)
#   --fail-mode M        secure (default) or standalone, for debugging without a controller
#   --hosts K            hosts per edge switch
#   --manifest PATH      also write the JSON manifest here (TB_MANIFEST); always in the state dir
#   --count C            pingall: pings per pair (default 5, interval 0.2 s)
#   --json PATH          pingall: write per-pair results as JSON
#   --quiet              pingall: summary only, no matrix
#   --parallel           pingall: all sources at once (each still one destination at a time)
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

PREFIX=${TB_PREFIX:-sdt-}
PORT=${TB_PORT:-6653}
CONTROLLER=${TB_CONTROLLER:-}
FAIL_MODE=${TB_FAIL_MODE:-secure}
HOSTS_PER_SWITCH=${TB_HOSTS:-}
MANIFEST=${TB_MANIFEST:-}
STATE_ROOT=${TB_STATE_DIR:-/run/sdnator-testbed}
PING_COUNT=${TB_PING_COUNT:-5}
PING_INTERVAL=${TB_PING_INTERVAL:-0.2}
JSON_OUT=""
QUIET=0
PARALLEL=0

usage() { awk 'NR >= 6 && /^#/ { sub(/^# ?/, ""); print; next } NR >= 6 { exit }' "${BASH_SOURCE[0]}"; exit 2; }

# ---------------------------------------------------------------- argument parsing
ARGS=()
while (($#)); do
  case $1 in
    --prefix) PREFIX=$2; shift 2 ;;
    --port) PORT=$2; shift 2 ;;
    --controller) CONTROLLER=$2; shift 2 ;;
    --fail-mode) FAIL_MODE=$2; shift 2 ;;
    --hosts) HOSTS_PER_SWITCH=$2; shift 2 ;;
    --manifest) MANIFEST=$2; shift 2 ;;
    --count) PING_COUNT=$2; shift 2 ;;
    --json) JSON_OUT=$2; shift 2 ;;
    --quiet) QUIET=1; shift ;;
    --parallel) PARALLEL=1; shift ;;
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
[[ $FAIL_MODE == secure || $FAIL_MODE == standalone ]] || die "--fail-mode: secure or standalone"

STATE_DIR="$STATE_ROOT/$PREFIX"
STATE_FILE="$STATE_DIR/state"        # lines "kind name", written BEFORE anything is created
HOSTS_TSV="$STATE_DIR/hosts.tsv"     # name netns ip mac switch port
SWITCHES_TSV="$STATE_DIR/switches.tsv"  # name dpid
LINKS_TSV="$STATE_DIR/links.tsv"     # a a_port b b_port type

# ---------------------------------------------------------------- topology plan
# plan_* fill these arrays; nothing is touched on the system.
SW=()          # bridge names
SW_DPID=()     # 16 hex digits
declare -A NEXT_PORT=()
H_NAME=() H_NS=() H_IP=() H_MAC=() H_SW=() H_PORT=()
L_A=() L_AP=() L_B=() L_BP=()
SHAPE=""

add_switch() {
  local i=$1
  SW+=("${PREFIX}s$i")
  SW_DPID+=("$(printf '%016x' "$i")")
  NEXT_PORT["${PREFIX}s$i"]=1
}
add_host() {   # add_host SWITCH
  local sw=$1 n=$((${#H_NAME[@]} + 1))
  ((n <= 250)) || die "at most 250 hosts (10.0.0.0/24)"
  H_NAME+=("h$n"); H_NS+=("${PREFIX}h$n"); H_IP+=("10.0.0.$n")
  H_MAC+=("$(printf '00:00:00:00:%02x:%02x' $((n / 256)) $((n % 256)))")
  H_SW+=("$sw"); H_PORT+=("${NEXT_PORT[$sw]}")
  NEXT_PORT[$sw]=$((${NEXT_PORT[$sw]} + 1))
}
add_link() {   # add_link SWA SWB
  local a=$1 b=$2
  L_A+=("$a"); L_AP+=("${NEXT_PORT[$a]}"); L_B+=("$b"); L_BP+=("${NEXT_PORT[$b]}")
  NEXT_PORT[$a]=$((${NEXT_PORT[$a]} + 1)); NEXT_PORT[$b]=$((${NEXT_PORT[$b]} + 1))
}

plan() {
  local shape=${1:-} i j k=${HOSTS_PER_SWITCH:-x}
  [[ $k == x || ( $k =~ ^[0-9]+$ && $k -ge 1 && $k -le 64 ) ]] || die "--hosts must be 1..64"
  case $shape in
    linear)
      local n=${2:-}
      [[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 64)) || die "up linear N (1..64)"
      k=${HOSTS_PER_SWITCH:-1}
      for ((i = 1; i <= n; i++)); do add_switch "$i"; done
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
      for ((i = 1; i <= f + 1; i++)); do add_switch "$i"; done
      for ((i = 2; i <= f + 1; i++)); do
        for ((j = 0; j < k; j++)); do add_host "${PREFIX}s$i"; done
      done
      for ((i = 2; i <= f + 1; i++)); do add_link "${PREFIX}s1" "${PREFIX}s$i"; done
      SHAPE="tree $f"
      ;;
    *) die "unknown shape '$shape' (linear N | tree [FANOUT])" ;;
  esac
  local sw name
  for sw in "${SW[@]}"; do
    name="$sw-eth${NEXT_PORT[$sw]}"
    ((${#name} <= 15)) || die "interface name $name longer than 15 characters; use a shorter --prefix"
  done
}

# ---------------------------------------------------------------- state
load_state() {
  [[ -f $HOSTS_TSV ]] || die "no testbed with prefix '$PREFIX' (no $HOSTS_TSV); run: testbed.sh --prefix $PREFIX up ..."
  H_NAME=() H_NS=() H_IP=() H_MAC=() H_SW=() H_PORT=() SW=() SW_DPID=()
  local a b c d e f
  while IFS=$'\t' read -r a b c d e f; do
    H_NAME+=("$a"); H_NS+=("$b"); H_IP+=("$c"); H_MAC+=("$d"); H_SW+=("$e"); H_PORT+=("$f")
  done <"$HOSTS_TSV"
  while IFS=$'\t' read -r a b; do SW+=("$a"); SW_DPID+=("$b"); done <"$SWITCHES_TSV"
  L_A=() L_AP=() L_B=() L_BP=()
  while IFS=$'\t' read -r a b c d e; do L_A+=("$a"); L_AP+=("$b"); L_B+=("$c"); L_BP+=("$d"); done <"$LINKS_TSV"
  CONTROLLER=$(cat "$STATE_DIR/controller")
  FAIL_MODE=$(cat "$STATE_DIR/fail_mode")
  SHAPE=$(cat "$STATE_DIR/shape")
}

write_manifest() {   # write_manifest PATH
  local out=$1 i sep
  {
    printf '{\n  "prefix": "%s",\n  "shape": "%s",\n  "controller": "%s",\n  "fail_mode": "%s",\n' \
      "$PREFIX" "$SHAPE" "$CONTROLLER" "$FAIL_MODE"
    printf '  "switches": [\n'
    for i in "${!SW[@]}"; do
      sep=$([[ $i -lt $((${#SW[@]} - 1)) ]] && echo , || true)
      printf '    {"name": "%s", "dpid": "%s", "dpid_int": %d, "datapath_type": "netdev", "protocols": "OpenFlow13"}%s\n' \
        "${SW[$i]}" "${SW_DPID[$i]}" "$((16#${SW_DPID[$i]}))" "$sep"
    done
    printf '  ],\n  "hosts": [\n'
    for i in "${!H_NAME[@]}"; do
      sep=$([[ $i -lt $((${#H_NAME[@]} - 1)) ]] && echo , || true)
      printf '    {"name": "%s", "netns": "%s", "iface": "eth0", "ip": "%s", "prefix_len": 24, "mac": "%s", "switch": "%s", "port": %d, "switch_iface": "%s"}%s\n' \
        "${H_NAME[$i]}" "${H_NS[$i]}" "${H_IP[$i]}" "${H_MAC[$i]}" "${H_SW[$i]}" "${H_PORT[$i]}" \
        "${H_SW[$i]}-eth${H_PORT[$i]}" "$sep"
    done
    printf '  ],\n  "links": [\n'
    for i in "${!L_A[@]}"; do
      sep=$([[ $i -lt $((${#L_A[@]} - 1)) ]] && echo , || true)
      printf '    {"a": "%s", "a_port": %d, "b": "%s", "b_port": %d, "type": "patch"}%s\n' \
        "${L_A[$i]}" "${L_AP[$i]}" "${L_B[$i]}" "${L_BP[$i]}" "$sep"
    done
    printf '  ]\n}\n'
  } >"$out.tmp"
  mv "$out.tmp" "$out"
}

# ---------------------------------------------------------------- up
# switch_args I: append to V the ovs-vsctl commands that create switch I with its controller,
# host ports and its side of every patch link (ports numbered as planned, via ofport_request).
switch_args() {
  local i=$1 sw=${SW[$1]} j n
  V+=(-- add-br "$sw"
      -- set bridge "$sw" datapath_type=netdev protocols=OpenFlow13 fail_mode="$FAIL_MODE"
         other-config:datapath-id="${SW_DPID[$i]}" other-config:disable-in-band=true)
  if [[ $CONTROLLER != none ]]; then
    # max_backoff 1 s: reconnect quickly when the controller starts after the switches.
    V+=(-- --id=@c$i create controller target="\"$CONTROLLER\"" max_backoff=1000 inactivity_probe=5000
        -- set bridge "$sw" controller=@c$i)
  fi
  for j in "${!H_NS[@]}"; do
    [[ ${H_SW[$j]} == "$sw" ]] || continue
    n="$sw-eth${H_PORT[$j]}"
    V+=(-- add-port "$sw" "$n" -- set interface "$n" ofport_request="${H_PORT[$j]}")
  done
  for j in "${!L_A[@]}"; do
    local a="${L_A[$j]}-eth${L_AP[$j]}" b="${L_B[$j]}-eth${L_BP[$j]}"
    if [[ ${L_A[$j]} == "$sw" ]]; then
      V+=(-- add-port "$sw" "$a" -- set interface "$a" type=patch options:peer="$b" ofport_request="${L_AP[$j]}")
    fi
    if [[ ${L_B[$j]} == "$sw" ]]; then
      V+=(-- add-port "$sw" "$b" -- set interface "$b" type=patch options:peer="$a" ofport_request="${L_BP[$j]}")
    fi
  done
}

cmd_up() {
  need_root "testbed.sh up"
  need_cmds ip ovs-vsctl ethtool sysctl
  ovs-vsctl --timeout=5 show >/dev/null 2>&1 || die "Open vSwitch is not running (scripts/ovs.sh start)"
  plan "$@"
  if [[ -f $STATE_FILE ]]; then
    die "testbed '$PREFIX' already exists (state in $STATE_DIR); run: testbed.sh --prefix $PREFIX down"
  fi
  local t0 i n sw
  t0=$(now_ms)
  # Refuse to adopt resources we did not create: a name clash means someone else owns it.
  for sw in "${SW[@]}"; do
    ovs-vsctl --timeout=5 br-exists "$sw" && die "bridge $sw already exists and is not ours"
  done
  for i in "${!H_NS[@]}"; do
    [[ -e /run/netns/${H_NS[$i]} ]] && die "namespace ${H_NS[$i]} already exists and is not ours"
    ip link show "${H_SW[$i]}-eth${H_PORT[$i]}" >/dev/null 2>&1 && die "interface ${H_SW[$i]}-eth${H_PORT[$i]} already exists"
  done

  # Record every name before creating anything, so 'down' can undo a partial 'up'.
  mkdir -p "$STATE_DIR"
  {
    for sw in "${SW[@]}"; do echo "bridge $sw"; done
    for i in "${!H_NS[@]}"; do echo "netns ${H_NS[$i]}"; echo "veth ${H_SW[$i]}-eth${H_PORT[$i]}"; done
  } >"$STATE_FILE"
  echo "$CONTROLLER" >"$STATE_DIR/controller"
  echo "$FAIL_MODE" >"$STATE_DIR/fail_mode"
  echo "$SHAPE" >"$STATE_DIR/shape"
  for i in "${!H_NAME[@]}"; do
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "${H_NAME[$i]}" "${H_NS[$i]}" "${H_IP[$i]}" "${H_MAC[$i]}" "${H_SW[$i]}" "${H_PORT[$i]}"
  done >"$HOSTS_TSV"
  for i in "${!SW[@]}"; do printf '%s\t%s\n' "${SW[$i]}" "${SW_DPID[$i]}"; done >"$SWITCHES_TSV"
  for i in "${!L_A[@]}"; do printf '%s\t%s\t%s\t%s\tpatch\n' "${L_A[$i]}" "${L_AP[$i]}" "${L_B[$i]}" "${L_BP[$i]}"; done >"$LINKS_TSV"

  trap 'warn "testbed up failed; tearing down what was created"; do_down; exit 1' ERR

  # 1. Namespaces and veth pairs: switch side "<switch>-eth<port>" in the root namespace, host
  #    side eth0 created directly inside the host's namespace. Everything stays down for now.
  { for i in "${!H_NS[@]}"; do echo "netns add ${H_NS[$i]}"; done
    for i in "${!H_NS[@]}"; do
      echo "link add ${H_SW[$i]}-eth${H_PORT[$i]} type veth peer name eth0 address ${H_MAC[$i]} netns ${H_NS[$i]}"
    done; } | ip -batch -
  # 2. Inside each host, before any link is up (so no router solicitation, MLD or DAD packets):
  #    IPv6 off; TX checksum offload off (TCP through the userspace datapath needs it); address; up.
  #    Up to 4 hosts are configured at once.
  for i in "${!H_NS[@]}"; do printf '%s %s\n' "${H_NS[$i]}" "${H_IP[$i]}"; done \
    | xargs -P 4 -L 1 sh -c 'ip netns exec "$0" sh -c "
        sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 &&
        ethtool -K eth0 tx off >/dev/null &&
        printf \"link set lo up\naddr add $1/24 dev eth0\nlink set eth0 up\n\" | ip -batch -" \
        || { echo "host $0: configuration failed (sysctl, ethtool -K eth0 tx off or ip)" >&2; exit 255; }'
  # 3. Switch-side ends: IPv6 off (the root namespace keeps its defaults), then up.
  local keys=()
  for i in "${!H_NS[@]}"; do keys+=("net.ipv6.conf.${H_SW[$i]}-eth${H_PORT[$i]}.disable_ipv6=1"); done
  sysctl -q -w "${keys[@]}"
  for i in "${!H_NS[@]}"; do echo "link set ${H_SW[$i]}-eth${H_PORT[$i]} up"; done | ip -batch -
  # 4. Switches, ports and patch links in one OVSDB transaction.
  V=(ovs-vsctl --timeout=30)
  for i in "${!SW[@]}"; do switch_args "$i"; done
  "${V[@]}" >/dev/null   # (prints the new controller UUIDs)
  trap - ERR

  write_manifest "$STATE_DIR/manifest.json"
  [[ -z $MANIFEST ]] || cp "$STATE_DIR/manifest.json" "$MANIFEST"
  log "testbed '$PREFIX' up: $SHAPE, ${#SW[@]} switches, ${#H_NAME[@]} hosts, ${#L_A[@]} patch links," \
      "controller $CONTROLLER, fail_mode $FAIL_MODE ($(fmt_ms $(($(now_ms) - t0))))"
  log "manifest: ${MANIFEST:-$STATE_DIR/manifest.json}"
}

# ---------------------------------------------------------------- down
# Deletes exactly the names in the state file. Processes still running inside our namespaces
# (left-over pings, captures) are killed by pid, so the namespaces really go away.
do_down() {
  [[ -f $STATE_FILE ]] || return 0
  local kind name brs=() nss=() veths=()
  while read -r kind name; do
    case $kind in
      bridge) brs+=("$name") ;;
      netns) nss+=("$name") ;;
      veth) veths+=("$name") ;;
    esac
  done <"$STATE_FILE"
  if ((${#brs[@]})) && ovs-vsctl --timeout=5 show >/dev/null 2>&1; then
    local v=(ovs-vsctl --timeout=30) b
    for b in "${brs[@]}"; do v+=(-- --if-exists del-br "$b"); done
    "${v[@]}" || warn "ovs-vsctl del-br failed"
  fi
  local ns pids
  for ns in "${nss[@]}"; do
    [[ -e /run/netns/$ns ]] || continue
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [[ -z $pids ]] || kill -9 $pids 2>/dev/null || true
  done
  { for ns in "${nss[@]}"; do [[ -e /run/netns/$ns ]] && echo "netns del $ns"; done; true; } | ip -force -batch - 2>/dev/null || true
  # Deleting a namespace deletes its eth0 and therefore the veth peer; catch any stragglers.
  local v
  for v in "${veths[@]}"; do
    ip link show "$v" >/dev/null 2>&1 && ip link del "$v" 2>/dev/null || true
  done
  rm -rf "$STATE_DIR"
}

cmd_down() {
  need_root "testbed.sh down"
  if [[ ! -f $STATE_FILE ]]; then
    log "testbed '$PREFIX': nothing to tear down"
    return 0
  fi
  local t0; t0=$(now_ms)
  do_down
  log "testbed '$PREFIX' down ($(fmt_ms $(($(now_ms) - t0))))"
}

# ---------------------------------------------------------------- status / wait-connected
# Prints "connected total". OVSDB's is_connected column lags by up to ~5 s (ovs-vswitchd
# refreshes status periodically), so for a tcp: target count established TCP connections to the
# controller port instead; each switch opens exactly one.
connected_count() {
  local c=0 sw uuid st
  if [[ $CONTROLLER =~ ^tcp:([0-9.]+):([0-9]+)$ ]]; then
    c=$(ss -Htn state established "( dport = :${BASH_REMATCH[2]} )" dst "${BASH_REMATCH[1]}" 2>/dev/null | wc -l)
    echo "$c ${#SW[@]}"
    return
  fi
  for sw in "${SW[@]}"; do
    uuid=$(ovs-vsctl --timeout=5 get bridge "$sw" controller 2>/dev/null | tr -d '[] ') || true
    [[ -n $uuid ]] || continue
    st=$(ovs-vsctl --timeout=5 get controller "$uuid" is_connected 2>/dev/null || echo false)
    [[ $st == true ]] && c=$((c + 1))
  done
  echo "$c ${#SW[@]}"
}

cmd_status() {
  load_state
  echo "testbed '$PREFIX': controller $CONTROLLER, state $STATE_DIR"
  local i sw st uuid ok=0
  for i in "${!SW[@]}"; do
    sw=${SW[$i]}
    if ovs-vsctl --timeout=5 br-exists "$sw" 2>/dev/null; then
      uuid=$(ovs-vsctl --timeout=5 get bridge "$sw" controller | tr -d '[] ')
      st=$([[ -n $uuid ]] && ovs-vsctl --timeout=5 get controller "$uuid" is_connected || echo "no-controller")
      printf '  switch %-12s dpid %s  ports %-3s connected=%s\n' "$sw" "${SW_DPID[$i]}" \
        "$(ovs-vsctl --timeout=5 list-ports "$sw" | wc -l)" "$st"
    else
      printf '  switch %-12s MISSING\n' "$sw"; ok=1
    fi
  done
  for i in "${!H_NAME[@]}"; do
    if [[ -e /run/netns/${H_NS[$i]} ]]; then
      printf '  host   %-4s netns %-10s %-10s %s on %s port %s\n' "${H_NAME[$i]}" "${H_NS[$i]}" "${H_IP[$i]}" \
        "${H_MAC[$i]}" "${H_SW[$i]}" "${H_PORT[$i]}"
    else
      printf '  host   %-4s MISSING (netns %s)\n' "${H_NAME[$i]}" "${H_NS[$i]}"; ok=1
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
cmd_restart_switch() {
  need_root "testbed.sh restart-switch"
  load_state
  local name=${1:-} i idx=-1 down=${2:-0}
  for i in "${!SW[@]}"; do [[ $name == "${SW[$i]}" || "$PREFIX$name" == "${SW[$i]}" ]] && idx=$i; done
  ((idx >= 0)) || die "usage: testbed.sh restart-switch SWITCH [SECONDS_DOWN] (e.g. s2)"
  local t0; t0=$(now_ms)
  ovs-vsctl --timeout=30 --if-exists del-br "${SW[$idx]}"
  sleep "$down"
  V=(ovs-vsctl --timeout=30)
  switch_args "$idx"
  "${V[@]}" >/dev/null
  log "switch ${SW[$idx]} re-created ($(fmt_ms $(($(now_ms) - t0))))"
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

# ---------------------------------------------------------------- pingall
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
  # per pair "s d received first steady" into $tmp/from.S (first/steady "-" when absent).
  ping_from() {
    local s=$1 d out
    for d in "${!H_NAME[@]}"; do
      [[ $s == "$d" ]] && continue
      out=$(ip netns exec "${H_NS[$s]}" ping -n -c "$PING_COUNT" -i "$PING_INTERVAL" -W 2 "${H_IP[$d]}" 2>&1 || true)
      awk -v s="$s" -v d="$d" '
        /bytes from/ { n++; match($0, /icmp_seq=[0-9]+/); q = substr($0, RSTART + 9, RLENGTH - 9) + 0
                       match($0, /time=[0-9.]+/); t = substr($0, RSTART + 5, RLENGTH - 5) + 0
                       if (q == 1) first = t; else { sum += t; k++ } }
        END { printf "%d %d %d %s %s\n", s, d, n, (first == "" ? "-" : first), (k ? sprintf("%.3f", sum / k) : "-") }' \
        <<<"$out" >>"$tmp/from.$s"
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
  while read -r s d r f st; do
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

case $CMD in
  up) cmd_up "$@" ;;
  down) cmd_down ;;
  status) cmd_status ;;
  exec) cmd_exec "$@" ;;
  pingall) cmd_pingall ;;
  wait-connected) cmd_wait_connected "$@" ;;
  restart-switch) cmd_restart_switch "$@" ;;
  *) usage ;;
esac
