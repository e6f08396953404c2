#!/usr/bin/env bash
# Throw-away PostgreSQL and Redis on free loopback ports, for tests, `make run`
# and `make demo`.
#
#   scripts/services.sh start DIR        start both; writes DIR/env and prints the URLs
#   scripts/services.sh stop DIR         stop both (by pid) and remove DIR
#   scripts/services.sh start-pg|stop-pg|start-redis|stop-redis DIR
#                                        one service, on the port it had before
#
# Data lives in DIR only. PostgreSQL runs as the `postgres` user because
# initdb refuses root. HOOKD_PG_FSYNC=off trades crash durability of the
# *database server* for test speed (hookd's own guarantees do not change).
# HOOKD_PG_OPTS adds server settings (`-c name=value ...`; later ones win),
# e.g. the production settings of `make bench-scale`.
set -euo pipefail

PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
cmd=${1:?usage: services.sh start|stop|start-pg|stop-pg|start-redis|stop-redis DIR}
dir=${2:?usage: services.sh $cmd DIR}

free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

as_pg() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start_pg() {
  local port
  port=$(cat "$dir/pg.port" 2>/dev/null || free_port)
  echo "$port" >"$dir/pg.port"
  if [ ! -f "$dir/pg/PG_VERSION" ]; then
    mkdir -p "$dir/pg"
    [ "$(id -u)" -ne 0 ] || chown postgres: "$dir" "$dir/pg"
    as_pg "$PGBIN/initdb" -D "$dir/pg" -U postgres -A trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 \
      || { cat "$dir/initdb.log" >&2; exit 1; }
  fi
  as_pg "$PGBIN/pg_ctl" -D "$dir/pg" -l "$dir/pg/server.log" -w -t 60 \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=${HOOKD_PG_FSYNC:-on} -c shared_buffers=128MB ${HOOKD_PG_OPTS:-}" \
    start >/dev/null
  as_pg "$PGBIN/psql" -qAt -h 127.0.0.1 -p "$port" -U postgres -d postgres \
    -c "SELECT 1 FROM pg_database WHERE datname='hookd'" | grep -q 1 \
    || as_pg "$PGBIN/createdb" -h 127.0.0.1 -p "$port" -U postgres hookd
}

stop_pg() {
  [ -f "$dir/pg/postmaster.pid" ] || return 0
  as_pg "$PGBIN/pg_ctl" -D "$dir/pg" -m immediate -w -t 60 stop >/dev/null 2>&1 || true
}

start_redis() {
  local port
  port=$(cat "$dir/redis.port" 2>/dev/null || free_port)
  echo "$port" >"$dir/redis.port"
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
    --daemonize yes --pidfile "$dir/redis.pid" --dir "$dir" --logfile "$dir/redis.log" >/dev/null
  for _ in $(seq 1 100); do
    redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG && return 0
    sleep 0.05
  done
  echo "services: redis did not come up on port $port (see $dir/redis.log)" >&2
  exit 1
}

stop_redis() {
  [ -f "$dir/redis.pid" ] || return 0
  local pid
  pid=$(cat "$dir/redis.pid")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$dir/redis.pid"
}

write_env() {
  cat >"$dir/env" <<ENV
HOOKD_PG_URL=postgresql://postgres@127.0.0.1:$(cat "$dir/pg.port")/hookd
HOOKD_REDIS_URL=redis://127.0.0.1:$(cat "$dir/redis.port")/0
ENV
  cat "$dir/env"
}

case "$cmd" in
  start)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    chmod 755 "$dir"
    start_pg
    start_redis
    write_env
    ;;
  stop)
    [ -d "$dir" ] || exit 0
    stop_redis
    stop_pg
    rm -rf "$dir"
    ;;
  start-pg) dir=$(cd "$dir" && pwd); start_pg ;;
  stop-pg) stop_pg ;;
  start-redis) dir=$(cd "$dir" && pwd); start_redis ;;
  stop-redis) stop_redis ;;
  *) echo "services.sh: unknown command '$cmd'" >&2; exit 2 ;;
esac
