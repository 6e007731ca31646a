#!/usr/bin/env bash
# A three-instance sdnator cluster on this machine (docs/cluster.md, "Deployment"): a Redis master
# with 2 replicas, 3 Redis Sentinels (quorum 2) and N sdnator instances (default 3), all on free
# loopback ports under one work dir, configs generated from examples/cluster/. Everything is
# started by pid and stopped by pid; nothing of the system's own Redis is touched.
#
# usage: scripts/cluster.sh [options] COMMAND
#   up                 start Redis, the sentinels and the instances; print the ports (DIR/env)
#   down               stop everything this dir started (instances, sentinels, Redis) by pid
#   status             instances (alive, ports, what each masters), the Redis master per the
#                      sentinels, each Redis server's role; with --testbed P also the OVS side
#                      (each bridge's controller roles)
#   kill N             SIGKILL instance N (1-based); prints the time (ms since the epoch)
#   start N            start instance N again (after kill)
#   kill-redis-master  SIGKILL the Redis server the sentinels name as master
#   controllers        the OpenFlow targets, comma-separated (testbed.sh --controllers)
#   ofbench-targets    the same as host:port,... (ofbench --controllers)
#   env                print DIR/env (ports and pids)
# options (or environment):
#   --dir DIR          work dir (CLUSTER_DIR, default /tmp/sdnator-cluster)
#   --instances N      sdnator instances (CLUSTER_INSTANCES, default 3)
#   --apps LIST        apps, comma-separated (CLUSTER_APPS, default topology,forwarding)
#   --data MODE        redis: Data Updates on the cluster's Redis through Sentinel (the default:
#                      the instances' apps share topology, hosts and CPAM records); inproc: each
#                      instance its own bus, nothing shared but the leases (CLUSTER_DATA)
#   --lease-ms MS      [cluster] lease_ms (CLUSTER_LEASE_MS, default 600); renew, check and
#                      claim intervals: CLUSTER_RENEW_MS 150, CLUSTER_CHECK_MS 100, CLUSTER_CLAIM_MS 200
#   --down-after-ms MS sentinel down-after-milliseconds (CLUSTER_DOWN_MS, default 1000)
#   --testbed PREFIX   status: also show the roles Open vSwitch reports for that testbed's bridges
#   --name NAME        cluster name and key namespace (CLUSTER_NAME, default sdnator)
#   --extra FILE       TOML appended to every instance's config, e.g. a [cpam] section
#                      (CLUSTER_EXTRA)
#   SDNATOR=PATH       the sdnator binary (default build/bin/sdnator)
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

DIR=${CLUSTER_DIR:-/tmp/sdnator-cluster}
N=${CLUSTER_INSTANCES:-3}
APPS=${CLUSTER_APPS:-topology,forwarding}
DATA=${CLUSTER_DATA:-redis}
LEASE_MS=${CLUSTER_LEASE_MS:-600}
RENEW_MS=${CLUSTER_RENEW_MS:-150}
CHECK_MS=${CLUSTER_CHECK_MS:-100}
CLAIM_MS=${CLUSTER_CLAIM_MS:-200}
DOWN_MS=${CLUSTER_DOWN_MS:-1000}
NAME=${CLUSTER_NAME:-sdnator}
EXTRA=${CLUSTER_EXTRA:-}
TESTBED_PREFIX=""
MASTER_NAME=sdnator          # the name the sentinels monitor
SDNATOR=${SDNATOR:-$SDN_ROOT/build/bin/sdnator}
EXAMPLES=$SDN_ROOT/examples/cluster
REPLICAS=2
SENTINELS=3

usage() { awk '/^# usage:/ { on = 1 } on && /^#/ { sub(/^# ?/, ""); print; next } on { exit }' "${BASH_SOURCE[0]}"; exit 2; }

ARGS=()
while (($#)); do
  case $1 in
    --dir) DIR=$2; shift 2 ;;
    --instances) N=$2; shift 2 ;;
    --apps) APPS=$2; shift 2 ;;
    --data) DATA=$2; shift 2 ;;
    --lease-ms) LEASE_MS=$2; shift 2 ;;
    --down-after-ms) DOWN_MS=$2; shift 2 ;;
    --testbed) TESTBED_PREFIX=$2; shift 2 ;;
    --name) NAME=$2; shift 2 ;;
    --extra) EXTRA=$2; shift 2 ;;
    -h|--help) usage ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
set -- "${ARGS[@]+"${ARGS[@]}"}"
(($#)) || usage
CMD=$1; shift
[[ $N =~ ^[1-9]$ ]] || die "--instances: 1..9"
[[ $DATA == inproc || $DATA == redis ]] || die "--data: inproc or redis"
for v in LEASE_MS RENEW_MS CHECK_MS CLAIM_MS DOWN_MS; do [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a number"; done
[[ $NAME =~ ^[A-Za-z0-9_-]+$ ]] || die "--name: letters, digits, _ and -"
ENV_FILE=$DIR/env

redis_cli() { redis-cli -h 127.0.0.1 "$@"; }
load_env() { [[ -f $ENV_FILE ]] || die "no cluster in $DIR (run: scripts/cluster.sh --dir $DIR up)"; source "$ENV_FILE"; }
alive() { [[ -n ${1:-} ]] && kill -0 "$1" 2>/dev/null; }
pid_of() { cat "$1" 2>/dev/null || true; }

# wait_port PORT PID WHAT [SECONDS]: until something listens on 127.0.0.1:PORT.
wait_port() {
  local port=$1 pid=$2 what=$3 limit=${4:-15} t0; t0=$(now_ms)
  until [[ -n $(ss -Hltn "( sport = :$port )" 2>/dev/null) ]]; do
    [[ -z $pid ]] || alive "$pid" || return 1
    (($(now_ms) - t0 < limit * 1000)) || { warn "$what not listening on 127.0.0.1:$port after ${limit}s"; return 1; }
    sleep 0.05
  done
}

# fill TEMPLATE OUT KEY=VALUE...: replace @KEY@ by VALUE.
fill() {
  local tpl=$1 out=$2; shift 2
  python3 - "$tpl" "$out" "$@" <<'PY'
import sys
s = open(sys.argv[1]).read()
for kv in sys.argv[3:]:
    k, v = kv.split("=", 1)
    s = s.replace("@" + k + "@", v)
assert "@" not in "".join(l.split("#")[0] for l in s.splitlines()), "unfilled placeholder in " + sys.argv[1]
open(sys.argv[2], "w").write(s)
PY
}

start_instance() {   # start_instance I
  local i=$1 d=$DIR/i$1 port pid
  port=$(eval echo "\$OF_PORT_$i")
  alive "$(pid_of "$d/pid")" && die "instance $i is running (pid $(pid_of "$d/pid"))"
  # setsid: the instance outlives this script and a ^C in its terminal.
  setsid "$SDNATOR" run -c "$d/sdnator.toml" >>"$d/sdnator.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$d/pid"
  if ! wait_port "$port" "$pid" "sdnator $i"; then
    tail -n 20 "$d/sdnator.log" >&2
    die "sdnator instance $i did not start (log: $d/sdnator.log)"
  fi
  log "instance $i: pid $pid, OpenFlow 127.0.0.1:$port, REST 127.0.0.1:$(eval echo "\$API_PORT_$i")"
}

cmd_up() {
  need_cmds redis-server redis-cli ss python3
  [[ -x $SDNATOR ]] || die "sdnator binary not found: $SDNATOR (build it, or set SDNATOR)"
  if [[ -f $ENV_FILE ]]; then
    source "$ENV_FILE"
    alive "$(pid_of "$DIR/redis0/redis.pid")" && die "a cluster is already up in $DIR (scripts/cluster.sh --dir $DIR down)"
  fi
  mkdir -p "$DIR"
  # Distinct free ports: Redis 1 + replicas, sentinels, and per instance OpenFlow + REST.
  local -A used=() ; local ports=() p k
  for ((k = 0; k < 1 + REPLICAS + SENTINELS + 2 * N; k++)); do
    for _ in $(seq 50); do p=$(free_port) || die "no free port"; [[ -z ${used[$p]:-} ]] && break; done
    used[$p]=1; ports+=("$p")
  done
  k=0
  {
    echo "# scripts/cluster.sh up, $(date -Is)"
    echo "CLUSTER_NAME=$NAME"
    echo "CLUSTER_INSTANCES=$N"
    echo "REDIS_MASTER_NAME=$MASTER_NAME"
    for ((i = 0; i <= REPLICAS; i++)); do echo "REDIS_PORT_$i=${ports[k]}"; k=$((k + 1)); done
    for ((i = 1; i <= SENTINELS; i++)); do echo "SENTINEL_PORT_$i=${ports[k]}"; k=$((k + 1)); done
    for ((i = 1; i <= N; i++)); do
      echo "OF_PORT_$i=${ports[k]}"; echo "API_PORT_$i=${ports[k + 1]}"; k=$((k + 2))
    done
  } >"$ENV_FILE"
  source "$ENV_FILE"

  # Redis: the master, then its replicas (no persistence: a test cluster).
  local i port
  for ((i = 0; i <= REPLICAS; i++)); do
    port=$(eval echo "\$REDIS_PORT_$i")
    mkdir -p "$DIR/redis$i"
    local extra=()
    ((i == 0)) || extra=(--replicaof 127.0.0.1 "$REDIS_PORT_0")
    redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no --dir "$DIR/redis$i" \
      --daemonize yes --pidfile "$DIR/redis$i/redis.pid" --logfile "$DIR/redis$i/redis.log" "${extra[@]}"
    wait_port "$port" "" "redis $i" 10 || die "Redis $i did not start (see $DIR/redis$i/redis.log)"
  done
  # The replicas must be in sync before Sentinel can fail over to them.
  local t0; t0=$(now_ms)
  until [[ $(redis_cli -p "$REDIS_PORT_0" info replication | grep -c 'state=online') -ge $REPLICAS ]]; do
    (($(now_ms) - t0 < 10000)) || die "Redis replicas not in sync after 10 s"
    sleep 0.1
  done
  log "Redis master 127.0.0.1:$REDIS_PORT_0, replicas $(for ((i = 1; i <= REPLICAS; i++)); do printf '%s ' "$(eval echo "\$REDIS_PORT_$i")"; done)"

  # Sentinels (quorum 2), each with its own writable config.
  local sbin=(redis-sentinel)
  command -v redis-sentinel >/dev/null 2>&1 || sbin=(redis-server)
  local sentinels=""
  for ((i = 1; i <= SENTINELS; i++)); do
    port=$(eval echo "\$SENTINEL_PORT_$i")
    mkdir -p "$DIR/sentinel$i"
    fill "$EXAMPLES/redis-sentinel.conf.in" "$DIR/sentinel$i/sentinel.conf" PORT="$port" DIR="$DIR/sentinel$i" \
      MASTER_NAME="$MASTER_NAME" REDIS_PORT="$REDIS_PORT_0" DOWN_MS="$DOWN_MS"
    if [[ ${sbin[0]} == redis-server ]]; then
      redis-server "$DIR/sentinel$i/sentinel.conf" --sentinel
    else
      redis-sentinel "$DIR/sentinel$i/sentinel.conf"
    fi
    wait_port "$port" "" "sentinel $i" 10 || die "sentinel $i did not start (see $DIR/sentinel$i/sentinel.log)"
    sentinels+="${sentinels:+, }\"127.0.0.1:$port\""
  done
  t0=$(now_ms)
  until [[ $(redis_cli -p "$SENTINEL_PORT_1" sentinel master "$MASTER_NAME" 2>/dev/null | grep -A1 '^num-other-sentinels$' | tail -1) == $((SENTINELS - 1)) ]]; do
    (($(now_ms) - t0 < 10000)) || { warn "sentinels have not all found each other after 10 s"; break; }
    sleep 0.2
  done
  log "sentinels $sentinels (quorum 2, down-after $DOWN_MS ms) watch '$MASTER_NAME'"

  # The instances.
  local apps="" a data=""
  for a in ${APPS//,/ }; do apps+="${apps:+, }\"$a\""; done
  if [[ $DATA == redis ]]; then
    data=$'\n[data]\nupdates = "redis"                     # Data Updates shared by the instances\n\n[redis]\nsentinels = ['"$sentinels"$']\nsentinel_master = "'"$MASTER_NAME"$'"\n'
  fi
  for ((i = 1; i <= N; i++)); do
    mkdir -p "$DIR/i$i"
    fill "$EXAMPLES/sdnator.toml.in" "$DIR/i$i/sdnator.toml" N="$i" DIR="$DIR/i$i" \
      OF_PORT="$(eval echo "\$OF_PORT_$i")" API_PORT="$(eval echo "\$API_PORT_$i")" APPS="$apps" DATA="$data" \
      CLUSTER="$NAME" SENTINELS="$sentinels" MASTER_NAME="$MASTER_NAME" LEASE_MS="$LEASE_MS" RENEW_MS="$RENEW_MS" \
      CHECK_MS="$CHECK_MS" CLAIM_MS="$CLAIM_MS"
    if [[ -n $EXTRA ]]; then
      { echo; echo "# from $EXTRA"; cat "$EXTRA"; } >>"$DIR/i$i/sdnator.toml" || die "cannot append $EXTRA"
    fi
  done
  for ((i = 1; i <= N; i++)); do start_instance "$i"; done
  echo "CONTROLLERS=$(controllers tcp)" >>"$ENV_FILE"
  log "cluster '$NAME' up in $DIR; switches connect to: $(controllers tcp)"
}

controllers() {   # controllers tcp|plain
  local i out=""
  for ((i = 1; i <= CLUSTER_INSTANCES; i++)); do
    if [[ $1 == tcp ]]; then out+="${out:+,}tcp:127.0.0.1:$(eval echo "\$OF_PORT_$i")"
    else out+="${out:+,}127.0.0.1:$(eval echo "\$OF_PORT_$i")"; fi
  done
  echo "$out"
}

stop_pid() {   # stop_pid PIDFILE WHAT: SIGTERM, then SIGKILL after 5 s
  local pid; pid=$(pid_of "$1")
  alive "$pid" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 50); do alive "$pid" || return 0; sleep 0.1; done
  warn "$2 (pid $pid) still running 5 s after SIGTERM: SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
}

cmd_down() {
  [[ -f $ENV_FILE ]] || { log "no cluster in $DIR"; return 0; }
  source "$ENV_FILE"
  local i
  for ((i = 1; i <= CLUSTER_INSTANCES; i++)); do stop_pid "$DIR/i$i/pid" "instance $i"; done
  for ((i = 1; i <= SENTINELS; i++)); do stop_pid "$DIR/sentinel$i/sentinel.pid" "sentinel $i"; done
  for ((i = 0; i <= REPLICAS; i++)); do stop_pid "$DIR/redis$i/redis.pid" "redis $i"; done
  log "cluster in $DIR stopped (logs kept in $DIR)"
}

# redis_master: "host:port" of the Redis master per the first sentinel that answers.
redis_master() {
  local i port out
  for ((i = 1; i <= SENTINELS; i++)); do
    port=$(eval echo "\$SENTINEL_PORT_$i")
    out=$(redis_cli -p "$port" sentinel get-master-addr-by-name "$MASTER_NAME" 2>/dev/null | paste -sd: -) || continue
    [[ -n $out ]] && { echo "$out"; return 0; }
  done
  return 1
}

cmd_status() {
  load_env
  local i pid port st
  echo "cluster '$CLUSTER_NAME' in $DIR"
  for ((i = 1; i <= CLUSTER_INSTANCES; i++)); do
    pid=$(pid_of "$DIR/i$i/pid")
    st=$(alive "$pid" && echo "up (pid $pid)" || echo "DOWN")
    printf '  instance %d  %-16s OpenFlow 127.0.0.1:%s  REST 127.0.0.1:%s\n' "$i" "$st" \
      "$(eval echo "\$OF_PORT_$i")" "$(eval echo "\$API_PORT_$i")"
    [[ -f $DIR/i$i/stats.json ]] && python3 - "$DIR/i$i/stats.json" <<'PY'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"      stats: unreadable ({e})"); sys.exit(0)
c = j.get("cluster")
sw = j.get("switches", [])
print(f"      stats: {len(sw) if isinstance(sw, list) else sw} switches connected", end="")
if not isinstance(c, dict):
    print("; no cluster state in the stats file (is [cluster] enabled wired in?)"); sys.exit(0)
m = c.get("masters", c.get("switches", c.get("mastered")))
def fmt(m):
    if isinstance(m, dict):
        return ", ".join(f"{k} (gen {v.get('generation', v) if isinstance(v, dict) else v})" for k, v in sorted(m.items()))
    if isinstance(m, list):
        return ", ".join(str(x.get("dpid", x)) if isinstance(x, dict) else str(x) for x in m)
    return str(m)
n = len(m) if isinstance(m, (list, dict)) else "?"
print(f"; masters {n}: {fmt(m) if m else '-'}")
members = c.get("members")
if members is not None:
    print(f"      members: {members if not isinstance(members, list) else ', '.join(str(x.get('id', x)) if isinstance(x, dict) else str(x) for x in members)}")
for k in ("leaders", "leaderships"):
    if c.get(k):
        print(f"      {k}: {c[k]}")
PY
  done
  local m; m=$(redis_master || echo "unknown")
  echo "  redis master (per sentinels): $m"
  for ((i = 0; i <= REPLICAS; i++)); do
    port=$(eval echo "\$REDIS_PORT_$i")
    st=$(redis_cli -p "$port" role 2>/dev/null | head -1 || true)
    printf '  redis %d  127.0.0.1:%-6s %s\n' "$i" "$port" "${st:-DOWN}"
  done
  for ((i = 1; i <= SENTINELS; i++)); do
    port=$(eval echo "\$SENTINEL_PORT_$i")
    redis_cli -p "$port" ping >/dev/null 2>&1 && st=up || st=DOWN
    printf '  sentinel %d  127.0.0.1:%-6s %s\n' "$i" "$port" "$st"
  done
  if [[ -n $TESTBED_PREFIX ]]; then
    need_cmds ovs-vsctl
    echo "  Open vSwitch roles (testbed '$TESTBED_PREFIX'; OVSDB refreshes them every few seconds):"
    local br
    for br in $(ovs-vsctl --timeout=5 list-br | grep "^$TESTBED_PREFIX" || true); do
      printf '    %-12s' "$br"
      ovs-vsctl --timeout=5 --format=csv --no-headings --columns=target,role,is_connected list controller \
        $(ovs-vsctl --timeout=5 get bridge "$br" controller | tr -d '[],') 2>/dev/null \
        | awk -F, '{ gsub(/"/, "", $1); printf " %s=%s%s", $1, $2, ($3 == "true" ? "" : "(down)") } END { print "" }'
    done
  fi
}

cmd_kill() {
  load_env
  local i=${1:-} pid
  [[ $i =~ ^[0-9]+$ ]] && ((i >= 1 && i <= CLUSTER_INSTANCES)) || die "usage: cluster.sh kill N (1..$CLUSTER_INSTANCES)"
  pid=$(pid_of "$DIR/i$i/pid")
  alive "$pid" || die "instance $i is not running"
  local t; t=$(now_ms)
  kill -KILL "$pid"
  echo "$t" >"$DIR/i$i/killed_at_ms"
  log "instance $i (pid $pid) killed with SIGKILL at $t ms"
  echo "$t"
}

cmd_kill_redis_master() {
  load_env
  local m port i pidf pid t
  m=$(redis_master) || die "no sentinel names a master"
  port=${m##*:}
  for ((i = 0; i <= REPLICAS; i++)); do
    [[ $(eval echo "\$REDIS_PORT_$i") == "$port" ]] && pidf=$DIR/redis$i/redis.pid
  done
  [[ -n ${pidf:-} ]] || die "the master $m is none of this cluster's Redis servers"
  pid=$(pid_of "$pidf")
  alive "$pid" || die "Redis master $m (pid file $pidf) is not running"
  t=$(now_ms)
  kill -KILL "$pid"
  log "Redis master $m (pid $pid) killed with SIGKILL at $t ms"
  echo "$t"
}

case $CMD in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  kill) cmd_kill "$@" ;;
  start) load_env; [[ ${1:-} =~ ^[1-9]$ ]] || die "usage: cluster.sh start N"; start_instance "$1" ;;
  kill-redis-master) cmd_kill_redis_master ;;
  controllers) load_env; controllers tcp ;;
  ofbench-targets) load_env; controllers plain ;;
  env) load_env; cat "$ENV_FILE" ;;
  *) usage ;;
esac
