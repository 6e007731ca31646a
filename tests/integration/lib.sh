# Shared setup for the Open vSwitch integration tests (sourced, not a test). Each test gets its
# own testbed prefix, controller port and work dir, and everything is torn down on exit by name
# and pid. Usage inside a test:  source "$(dirname "$0")/lib.sh" "$@"   (arg 1: sdnator binary)
set -Eeuo pipefail

IT_NAME=$(basename "$0" .sh)
IT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$IT_ROOT/scripts/lib/common.sh"
SDNATOR=${1:-${SDNATOR:-$IT_ROOT/build/bin/sdnator}}
STATS_PY="$IT_ROOT/scripts/lib/stats.py"
TESTBED="$IT_ROOT/scripts/testbed.sh"

fail() { printf '\nFAIL [%s]: %s\n' "$IT_NAME" "$*" >&2; exit 1; }
step() { printf '[%s] %s: %s\n' "$(date +%H:%M:%S)" "$IT_NAME" "$*"; }

[[ $(id -u) -eq 0 ]] || fail "needs root (network namespaces, Open vSwitch)"
[[ -x $SDNATOR ]] || fail "controller binary not found: $SDNATOR (build it: cmake --build --preset release)"
ovs-vsctl --timeout=5 show >/dev/null 2>&1 || fail "Open vSwitch is not running (scripts/ovs.sh start)"
need_cmds ip ovs-vsctl ovs-ofctl ethtool ss python3

# Unique prefix: "i" + 4 hex digits + "-", retried until no state, bridge or namespace uses it.
for _i in $(seq 1 50); do
  IT_PREFIX=$(printf 'i%04x-' $((RANDOM % 65536)))
  [[ ! -e /run/sdnator-testbed/$IT_PREFIX && ! -e /run/netns/${IT_PREFIX}h1 ]] \
    && ! ovs-vsctl --timeout=5 br-exists "${IT_PREFIX}s1" 2>/dev/null && break
done
IT_PORT=$(free_port) || fail "no free TCP port"
IT_WORK=$(mktemp -d "/tmp/sdnator-it-$IT_NAME.XXXXXX")
STATS="$IT_WORK/stats.json"
CTRL_LOG="$IT_WORK/sdnator.log"
CTRL_PID=""
BG_PIDS=()
TB=(bash "$TESTBED" --prefix "$IT_PREFIX" --port "$IT_PORT")
# Pids of what we start, by prefix, so scripts/test.sh can reap them if ctest kills us on timeout.
IT_PIDS_DIR=${IT_PIDS_DIR:-/tmp/sdnator-it-pids}
mkdir -p "$IT_PIDS_DIR"
track_pid() { echo "$1" >>"$IT_PIDS_DIR/$IT_PREFIX"; }

it_cleanup() {
  local rc=$?
  set +e
  local p
  for p in "${BG_PIDS[@]+"${BG_PIDS[@]}"}"; do kill "$p" 2>/dev/null; done
  rm -f "$IT_PIDS_DIR/$IT_PREFIX"
  bash "$IT_ROOT/scripts/ids_tap.sh" --prefix "$IT_PREFIX" down >/dev/null 2>&1
  "${TB[@]}" down >/dev/null 2>&1
  if [[ -n $CTRL_PID ]] && kill -0 "$CTRL_PID" 2>/dev/null; then
    kill -TERM "$CTRL_PID"
    for _ in $(seq 1 50); do kill -0 "$CTRL_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$CTRL_PID" 2>/dev/null
  fi
  if ((rc != 0)); then
    echo "---- last 40 lines of the controller log ($CTRL_LOG) ----" >&2
    tail -n 40 "$CTRL_LOG" 2>/dev/null >&2
    [[ -f $STATS ]] && { echo "---- controller stats ----" >&2; python3 "$STATS_PY" summary "$STATS" >&2; }
    echo "(work dir kept: $IT_WORK)" >&2
  elif [[ -z ${IT_KEEP:-} ]]; then
    rm -rf "$IT_WORK"
  fi
  exit $rc
}
trap it_cleanup EXIT
trap 'exit 130' INT TERM

# start_controller [extra args]: run sdnator on IT_PORT and wait until it listens.
start_controller() {
  "$SDNATOR" run --listen "127.0.0.1:$IT_PORT" --stats-file "$STATS" --log-level info \
    --archive-path "$IT_WORK/archive.db" "$@" \
    >>"$CTRL_LOG" 2>&1 &
  CTRL_PID=$!
  track_pid "$CTRL_PID"
  local t0; t0=$(now_ms)
  until [[ -n $(ss -Hltn "( sport = :$IT_PORT )" 2>/dev/null) ]]; do
    kill -0 "$CTRL_PID" 2>/dev/null || fail "sdnator exited at start-up (see log below)"
    (($(now_ms) - t0 < 10000)) || fail "sdnator not listening on 127.0.0.1:$IT_PORT after 10 s"
    sleep 0.05
  done
  step "sdnator pid $CTRL_PID listening on 127.0.0.1:$IT_PORT ($(fmt_ms $(($(now_ms) - t0))))"
}

# stop_controller: SIGTERM, must exit 0 within 10 s and leave a final stats file.
stop_controller() {
  [[ -n $CTRL_PID ]] || return 0
  kill -TERM "$CTRL_PID"
  local rc=0 t0; t0=$(now_ms)
  for _ in $(seq 1 100); do kill -0 "$CTRL_PID" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$CTRL_PID" 2>/dev/null && fail "sdnator still running 10 s after SIGTERM"
  wait "$CTRL_PID" || rc=$?
  CTRL_PID=""
  ((rc == 0)) || fail "sdnator exited with status $rc after SIGTERM"
  [[ -s $STATS ]] || fail "no stats file at exit"
  python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$STATS" || fail "stats file is not valid JSON"
  step "sdnator exited cleanly on SIGTERM ($(fmt_ms $(($(now_ms) - t0))))"
}

# stat_sum REGEX: sum of matching numeric leaves of the stats file ("" if none match).
stat_sum() { python3 "$STATS_PY" sum "$STATS" "$1" 2>/dev/null || true; }

# wait_stats_switches N [SECONDS]: until the controller reports N switches (handshake done).
wait_stats_switches() {
  local want=$1 limit=${2:-20} t0 n=0; t0=$(now_ms)
  while :; do
    n=$(python3 "$STATS_PY" count "$STATS" switches 2>/dev/null || echo 0)
    ((n == want)) && return 0
    (($(now_ms) - t0 < limit * 1000)) || fail "controller reports $n switches, want $want, after ${limit}s"
    sleep 0.2
  done
}

# ping_resumes SRC DST_IP [SECONDS]: time until one ping from host SRC to DST_IP succeeds (fails the
# test after SECONDS, default 10): the bound within which forwarding must come back after a fault.
ping_resumes() {
  local bound=${3:-10} t0; t0=$(now_ms)
  until ip netns exec "${IT_PREFIX}$1" ping -n -c 1 -W 1 "$2" >/dev/null 2>&1; do
    (($(now_ms) - t0 < bound * 1000)) || fail "ping $1 -> $2 did not resume within ${bound}s"
  done
  fmt_ms $(($(now_ms) - t0))
}

# archive FIELD: a field of the archive's stats ("" if missing).
archive() { python3 "$STATS_PY" get "$STATS" "data.archive.$1" 2>/dev/null || true; }
# wait_archive PYTHON_CONDITION_ON_a SECONDS MESSAGE: until the condition on the archive's stats
# (the dict `a`) holds; fails with MESSAGE and the stats after SECONDS.
wait_archive() {
  local cond=$1 limit=$2 t0; t0=$(now_ms)
  until python3 -c "import json,sys; a=json.load(open(sys.argv[1]))['data']['archive']; sys.exit(0 if ($cond) else 1)" "$STATS" 2>/dev/null; do
    (($(now_ms) - t0 < limit * 1000)) || fail "$3 (archive stats: $(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['data']['archive'])" "$STATS" 2>/dev/null))"
    sleep 0.1
  done
}

# wait_stats_fresh: wait for the controller's next stats write (it rewrites every second).
wait_stats_fresh() {
  local before; before=$(stat -c '%i %y' "$STATS" 2>/dev/null || echo none)
  for _ in $(seq 1 30); do
    [[ $(stat -c '%i %y' "$STATS" 2>/dev/null || echo none) != "$before" ]] && return 0
    sleep 0.1
  done
  fail "stats file not rewritten within 3 s"
}

# wait_topology LINKS [SECONDS]: until the topology app reports LINKS links and no pending port
# (every port settled as edge or link), i.e. discovery is complete and flooding is safe.
wait_topology() {
  local want=$1 limit=${2:-20} t0 links pending; t0=$(now_ms)
  while :; do
    links=$(python3 "$STATS_PY" get "$STATS" apps.topology.links 2>/dev/null || echo -1)
    pending=$(python3 "$STATS_PY" get "$STATS" apps.topology.pending_ports 2>/dev/null || echo -1)
    [[ $links == "$want" && $pending == 0 ]] && return 0
    (($(now_ms) - t0 < limit * 1000)) || fail "topology reports $links links ($pending ports pending), want $want, after ${limit}s"
    sleep 0.2
  done
}

# nonmiss_flows BRIDGE: number of flows other than table-miss entries (priority 0, empty match)
# and the runtime's ARP/LLDP-to-controller flows (cookie 0xfd...).
nonmiss_flows() {
  ovs-ofctl -O OpenFlow13 --no-stats dump-flows "$1" | awk '
    /cookie=0xfd/ { next }   # ARP/LLDP flows of the runtime (southbound/miss_meter.hpp)
    /actions=/ { line = $0; sub(/^ +/, "", line); gsub(/(cookie|table)=[^,]*, /, "", line)
                 if (line !~ /^priority=0 actions=/) n++ }
    END { print n + 0 }'
}

# up_tree: testbed up (tree, 2 leaves x 2 hosts), all switches connected and known to sdnator.
# up_cpam_campus: the small dual-homed campus (1 core, 2 aggregation, 4 edge switches, 16 hosts)
# whose hosts resolve through CPAM's DNS address; sets MANIFEST and writes the protected-host list
# ([cpam] hosts_file) to $IT_WORK/hosts.txt. The controller is started by the caller.
# Extra testbed options (e.g. --ipv6) may be given.
up_cpam_campus() {
  "${TB[@]}" --resolver 10.0.255.253 "$@" up campus 16 --cores 1 --aggs 2 --edges 4 --dual-homed \
    || fail "testbed up failed"
  MANIFEST=/run/sdnator-testbed/$IT_PREFIX/manifest.json
  python3 -c 'import json,sys; [print(h["name"], h["ip"]) for h in json.load(open(sys.argv[1]))["hosts"]]' "$MANIFEST" \
    >"$IT_WORK/hosts.txt"
}

up_tree() {
  local t0; t0=$(now_ms)
  "${TB[@]}" up tree "$@" || fail "testbed up failed"
  "${TB[@]}" wait-connected 20 || fail "switches did not connect to sdnator"
  wait_stats_switches 3 20
  wait_topology 2 20
  step "testbed $IT_PREFIX up, connected and discovered ($(fmt_ms $(($(now_ms) - t0))))"
}

# Cluster tests (scripts/cluster.sh, instances with a REST API each).
# masters_json PORTS...: {"<dpid hex>": [instance ids mastering it]} over the instances' APIs.
masters_json() {
  python3 - "$@" <<'PY'
import json, sys, urllib.request
out = {}
for port in sys.argv[1:]:
    try:
        j = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/cluster", timeout=1))
    except Exception:
        continue
    for dpid in j.get("masters", {}):
        out.setdefault(dpid, []).append(j.get("instance_id", port))
print(json.dumps(out, sort_keys=True))
PY
}
# wait_one_master_each SECONDS PORTS...: until each of the testbed's switches (CLUSTER_SWITCHES,
# default 3) has exactly one master.
wait_one_master_each() {
  local limit=$1; shift
  local t0 m; t0=$(now_ms)
  while :; do
    m=$(masters_json "$@")
    python3 -c 'import json,sys; m=json.loads(sys.argv[1]); sys.exit(0 if len(m) == int(sys.argv[2]) and all(len(v) == 1 for v in m.values()) else 1)' "$m" "${CLUSTER_SWITCHES:-3}" \
      && { echo "$m"; return 0; }
    (($(now_ms) - t0 < limit * 1000)) || fail "not one master per switch after ${limit}s: $m"
    sleep 0.1
  done
}
