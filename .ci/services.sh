#!/usr/bin/env bash
# Real PostgreSQL and Redis servers on loopback for the store and state tests (issue 39), from
# Debian's packages. Sourced by .ci/run:
#   source .ci/services.sh && services_start    # installs if missing, starts, exports the URLs
#   services_stop                               # stops both and removes their data
# The tests read BOT_TOOLSEARCH_TEST_POSTGRES and BOT_TOOLSEARCH_TEST_REDIS and skip, saying so,
# where they are unset (a developer machine without the servers). Nothing listens beyond 127.0.0.1.

services_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

services_start() {
  local pg_bin
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || ! command -v redis-server >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql redis-server >/dev/null
  fi
  pg_bin=$(dirname "$(ls /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n 1)")
  SERVICES_DIR=$(mktemp -d /tmp/bot_toolsearch-services.XXXXXX)
  chmod 755 "$SERVICES_DIR"
  local pg_port redis_port
  pg_port=$(services_free_port)
  redis_port=$(services_free_port)
  # initdb refuses to run as root: the cluster belongs to Debian's postgres user.
  install -d -o postgres -g postgres "$SERVICES_DIR/pg"
  runuser -u postgres -- "$pg_bin/initdb" -D "$SERVICES_DIR/pg" -U postgres -A trust \
    --no-sync -E UTF8 >/dev/null
  runuser -u postgres -- "$pg_bin/pg_ctl" -D "$SERVICES_DIR/pg" -w -l "$SERVICES_DIR/pg/server.log" \
    -o "-h 127.0.0.1 -p $pg_port -k $SERVICES_DIR/pg -c fsync=off -c max_connections=200" start >/dev/null
  runuser -u postgres -- "$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U postgres bot_toolsearch_test
  redis-server --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no --daemonize yes \
    --pidfile "$SERVICES_DIR/redis.pid" --logfile "$SERVICES_DIR/redis.log" --dir "$SERVICES_DIR"
  export SERVICES_DIR SERVICES_PG_BIN="$pg_bin"
  export BOT_TOOLSEARCH_TEST_POSTGRES="postgresql://postgres@127.0.0.1:$pg_port/bot_toolsearch_test"
  export BOT_TOOLSEARCH_TEST_REDIS="redis://127.0.0.1:$redis_port/0"
  for _ in $(seq 50); do
    redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break
    sleep 0.1
  done
  echo "services: PostgreSQL on 127.0.0.1:$pg_port, Redis on 127.0.0.1:$redis_port"
}

services_stop() {
  [ -n "${SERVICES_DIR:-}" ] || return 0
  runuser -u postgres -- "$SERVICES_PG_BIN/pg_ctl" -D "$SERVICES_DIR/pg" -m immediate stop >/dev/null 2>&1 || true
  [ -f "$SERVICES_DIR/redis.pid" ] && kill "$(cat "$SERVICES_DIR/redis.pid")" 2>/dev/null || true
  rm -rf "$SERVICES_DIR"
  unset SERVICES_DIR BOT_TOOLSEARCH_TEST_POSTGRES BOT_TOOLSEARCH_TEST_REDIS
}
