#!/usr/bin/env bash
# Capture taps for the ids sampler on a testbed made by scripts/testbed.sh: on every switch with
# hosts, an Open vSwitch mirror copies the frames the switch delivers to its hosts (egress, the
# default: what the fabric carries, so traffic a drop rule stops is no longer seen) or receives
# from them (--direction ingress: everything hosts send, dropped or not) onto a veth pair whose
# root-namespace end "<prefix>tap<N>" the sampler reads ([sampler] interfaces = ["<prefix>tap*"]).
# A mirror output port carries nothing else (OVS reserves it for mirroring).
#
# usage: scripts/ids_tap.sh [--prefix P] [--direction egress|ingress] up|down|status
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

PREFIX=${TB_PREFIX:-sdt-}
DIRECTION=egress
STATE_ROOT=${TB_STATE_DIR:-/run/sdnator-testbed}
CMD=""
while (($#)); do
  case $1 in
    --prefix) PREFIX=$2; shift 2 ;;
    --direction) DIRECTION=$2; shift 2 ;;
    up|down|status) CMD=$1; shift ;;
    -h|--help) sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
[[ -n $CMD ]] || die "usage: scripts/ids_tap.sh [--prefix P] [--direction egress|ingress] up|down|status"
[[ $DIRECTION == egress || $DIRECTION == ingress ]] || die "--direction: egress or ingress, not '$DIRECTION'"
MANIFEST=$STATE_ROOT/$PREFIX/manifest.json
TAPS=$STATE_ROOT/$PREFIX/taps

cmd_up() {
  need_root
  need_cmds ip ovs-vsctl python3
  [[ -f $MANIFEST ]] || die "no testbed '$PREFIX' ($MANIFEST missing): scripts/testbed.sh --prefix $PREFIX up ... first"
  [[ ! -s $TAPS ]] || die "taps of '$PREFIX' exist already ($TAPS); 'down' first"
  # switch -> its host ports, from the manifest
  local -a rows=()
  mapfile -t rows < <(python3 - "$MANIFEST" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
by = {}
for h in m["hosts"]:
    by.setdefault(h["switch"], []).append(h["switch_iface"])
for i, s in enumerate(sorted(by, key=lambda n: [int(x) if x.isdigit() else x for x in __import__("re").split(r"(\d+)", n)]), 1):
    print(i, s, " ".join(by[s]))
PY
)
  ((${#rows[@]})) || die "the manifest has no hosts"
  local row n sw ports tap peer v=(ovs-vsctl --timeout=30) sel p ids
  : >"$TAPS"
  for row in "${rows[@]}"; do
    read -r n sw ports <<<"$row"
    tap="${PREFIX}tap$n" peer="${PREFIX}tapo$n"
    ((${#tap} <= 15 && ${#peer} <= 15)) || die "interface name $peer is longer than 15 characters: use a shorter --prefix"
    ip link add "$tap" type veth peer name "$peer"
    echo "$sw $tap $peer" >>"$TAPS"
    # The capture end sends nothing of its own (no IPv6 autoconfiguration) and only listens.
    sysctl -qw "net.ipv6.conf.$tap.disable_ipv6=1" "net.ipv6.conf.$peer.disable_ipv6=1" || true
    ip link set "$tap" up
    ip link set "$peer" up
    ids=()
    for p in $ports; do ids+=("@${p//-/_}"); done
    v+=(-- add-port "$sw" "$peer" -- --id="@${peer//-/_}" get port "$peer")
    for p in $ports; do v+=(-- --id="@${p//-/_}" get port "$p"); done
    sel="select_dst_port"; [[ $DIRECTION == ingress ]] && sel="select_src_port"
    v+=(-- --id="@m$n" create mirror name="$tap" "$sel=[$(IFS=,; echo "${ids[*]}")]" output_port="@${peer//-/_}"
        -- add bridge "$sw" mirrors "@m$n")
  done
  "${v[@]}" >/dev/null
  log "ids taps on '$PREFIX' up ($DIRECTION): $(awk '{print $1 "->" $2}' "$TAPS" | tr '\n' ' ')"
}

cmd_down() {
  [[ -f $TAPS ]] || { log "no ids taps on '$PREFIX'"; return 0; }
  local sw tap peer v=(ovs-vsctl --timeout=30)
  while read -r sw tap peer; do
    if ovs-vsctl --timeout=5 br-exists "$sw" 2>/dev/null; then
      if ovs-vsctl --timeout=5 --columns=_uuid --bare find mirror name="$tap" | grep -q .; then
        v+=(-- --id=@m get mirror "$tap" -- remove bridge "$sw" mirrors @m)
        "${v[@]}" >/dev/null || warn "cannot remove mirror $tap from $sw"
        v=(ovs-vsctl --timeout=30)
      fi
      ovs-vsctl --timeout=30 --if-exists del-port "$sw" "$peer" || warn "cannot delete port $peer"
    fi
    ip link del "$tap" 2>/dev/null || true
  done <"$TAPS"
  rm -f "$TAPS"
  log "ids taps on '$PREFIX' down"
}

cmd_status() {
  [[ -f $TAPS ]] || { echo "no ids taps on '$PREFIX'"; return 0; }
  local sw tap peer rx
  while read -r sw tap peer; do
    rx=$(cat "/sys/class/net/$tap/statistics/rx_packets" 2>/dev/null || echo "?")
    printf '%-12s %-12s rx_packets=%s\n' "$sw" "$tap" "$rx"
  done <"$TAPS"
}

"cmd_$CMD"
