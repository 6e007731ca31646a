#!/usr/bin/env bash
# Start, stop or inspect the local Open vSwitch daemons (ovsdb-server + ovs-vswitchd) without
# systemd. The datapath is userspace only (bridges use datapath_type=netdev; see TESTBED.md).
#
#   scripts/ovs.sh start     idempotent: does nothing if both daemons already run
#   scripts/ovs.sh stop      refuses while bridges exist (others may be using them); --force stops anyway
#   scripts/ovs.sh status    exit 0 if both daemons run and the database answers
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

OVS_CTL=${OVS_CTL:-/usr/share/openvswitch/scripts/ovs-ctl}
OVS_RUNDIR=${OVS_RUNDIR:-/var/run/openvswitch}

usage() { sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }

running() { "$OVS_CTL" status >/dev/null 2>&1 && ovs-vsctl --timeout=5 show >/dev/null 2>&1; }

cmd_start() {
  need_root "ovs.sh start"
  [[ -x $OVS_CTL ]] || die "$OVS_CTL not found (apt-get install openvswitch-switch, or run scripts/setup.sh)"
  if running; then
    log "Open vSwitch already running ($(ovs-vsctl --timeout=5 get Open_vSwitch . ovs_version | tr -d '"'))"
    return 0
  fi
  # ovs-ctl warns that it cannot raise the fd ulimit in a container and that there is no kernel
  # module; both are harmless for the userspace datapath. Keep its output for diagnosis.
  local out
  if ! out=$("$OVS_CTL" start --system-id=random 2>&1); then
    printf '%s\n' "$out" >&2
    die "ovs-ctl start failed"
  fi
  local i
  for ((i = 0; i < 50; i++)); do
    running && break
    sleep 0.1
  done
  running || { printf '%s\n' "$out" >&2; die "Open vSwitch did not come up"; }
  log "Open vSwitch started ($(ovs-vsctl --timeout=5 get Open_vSwitch . ovs_version | tr -d '"'), userspace datapath)"
}

cmd_stop() {
  need_root "ovs.sh stop"
  local force=0
  [[ ${1:-} == --force ]] && force=1
  if ! "$OVS_CTL" status >/dev/null 2>&1; then
    log "Open vSwitch is not running"
    return 0
  fi
  local brs
  brs=$(ovs-vsctl --timeout=5 list-br 2>/dev/null || true)
  if [[ -n $brs && $force -eq 0 ]]; then
    die "bridges still exist ($(echo $brs)); tear down their testbeds first, or use: ovs.sh stop --force"
  fi
  "$OVS_CTL" stop >/dev/null
  log "Open vSwitch stopped"
}

cmd_status() {
  if running; then
    "$OVS_CTL" status
    local brs
    brs=$(ovs-vsctl --timeout=5 list-br)
    echo "bridges: ${brs:-none}" | tr '\n' ' '; echo
    return 0
  fi
  "$OVS_CTL" status 2>/dev/null || true
  return 1
}

case ${1:-} in
  start) shift; cmd_start "$@" ;;
  stop) shift; cmd_stop "$@" ;;
  status) shift; cmd_status "$@" ;;
  *) usage ;;
esac
