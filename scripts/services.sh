#!/usr/bin/env bash
# The database servers the data-layer tests and benchmarks use: a private PostgreSQL cluster and a
# Redis server, both on loopback, both under one state directory, never the system's own. `up`
# prints (and writes to DIR/env) the environment the tests read:
#   SDNATOR_PG_DSN      libpq conninfo of the test database
#   SDNATOR_REDIS_PORT  port of the shared Redis server (tests that kill Redis start their own)
#
# usage: scripts/services.sh up|down|status [--dir DIR]     (default DIR /tmp/sdnator-services)
#   PG_PORT=55432 REDIS_PORT=56379   ports (defaults shown)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

CMD=${1:-}; shift || true
DIR=/tmp/sdnator-services
while (($#)); do
  case $1 in
    --dir) DIR=$2; shift 2 ;;
    *) die "unknown argument $1" ;;
  esac
done
PG_PORT=${PG_PORT:-55432}
REDIS_PORT=${REDIS_PORT:-56379}
PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)

as_pg() {   # run as the postgres user when we are root (PostgreSQL refuses to run as root)
  if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_up() {
  [[ -n $PG_BIN ]] || die "PostgreSQL server binaries not found (run scripts/setup.sh)"
  local data=$DIR/pg
  mkdir -p "$data"
  [[ $(id -u) -eq 0 ]] && chown postgres: "$DIR" "$data"
  chmod 700 "$data"
  if [[ ! -f $data/PG_VERSION ]]; then
    as_pg "$PG_BIN/initdb" -D "$data" -U postgres --auth=trust -E UTF8 >"$DIR/initdb.log" 2>&1 \
      || { cat "$DIR/initdb.log"; die "initdb failed"; }
  fi
  if ! as_pg "$PG_BIN/pg_ctl" -D "$data" status >/dev/null 2>&1; then
    as_pg "$PG_BIN/pg_ctl" -D "$data" -l "$DIR/pg.log" -w -t 30 \
      -o "-p $PG_PORT -k $data -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null \
      || { cat "$DIR/pg.log"; die "PostgreSQL did not start"; }
  fi
  as_pg "$PG_BIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -tAc \
    "SELECT 1 FROM pg_database WHERE datname='sdnator'" | grep -q 1 \
    || as_pg "$PG_BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U postgres sdnator
}

redis_up() {
  command -v redis-server >/dev/null || die "redis-server not found (run scripts/setup.sh)"
  mkdir -p "$DIR/redis"
  if ! redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1; then
    redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save '' --appendonly no \
      --dir "$DIR/redis" --daemonize yes --pidfile "$DIR/redis/redis.pid" \
      --logfile "$DIR/redis/redis.log"
    for _ in $(seq 50); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
    redis-cli -p "$REDIS_PORT" ping >/dev/null || die "Redis did not start (see $DIR/redis/redis.log)"
  fi
}

case $CMD in
  up)
    mkdir -p "$DIR"
    pg_up
    redis_up
    {
      echo "export SDNATOR_PG_DSN='host=127.0.0.1 port=$PG_PORT user=postgres dbname=sdnator'"
      echo "export SDNATOR_REDIS_PORT=$REDIS_PORT"
    } >"$DIR/env"
    cat "$DIR/env"
    ;;
  down)
    if [[ -f $DIR/redis/redis.pid ]]; then
      kill "$(cat "$DIR/redis/redis.pid")" 2>/dev/null || true
      rm -f "$DIR/redis/redis.pid"
    fi
    if [[ -n $PG_BIN && -f $DIR/pg/PG_VERSION ]]; then
      as_pg "$PG_BIN/pg_ctl" -D "$DIR/pg" -m fast -w stop >/dev/null 2>&1 || true
    fi
    ;;
  status)
    redis-cli -p "$REDIS_PORT" ping 2>/dev/null || echo "redis: down"
    [[ -n $PG_BIN ]] && as_pg "$PG_BIN/pg_ctl" -D "$DIR/pg" status 2>/dev/null | head -1 || echo "postgres: down"
    ;;
  *) sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
