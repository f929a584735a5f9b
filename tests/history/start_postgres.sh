#!/usr/bin/env bash
# A throwaway PostgreSQL server for the history store's tests, started under
# DIR (initdb, pg_ctl) from Debian's `postgresql` package and listening only
# on a Unix socket in DIR/sock (no TCP port: nothing else can reach it).
#
#   start_postgres.sh DIR        start; prints LAGGARD_TEST_POSTGRES=URI
#   start_postgres.sh DIR stop   stop it
#
# As root, the server runs as the `postgres` user (PostgreSQL refuses root).
# Exits 77 when the package is absent, 1 when the server does not start
# within 60 s.
set -euo pipefail
dir=$1
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
  [ "${2:-}" = stop ] && exit 0
  echo "SKIP: PostgreSQL not found (apt-get install postgresql)" >&2
  exit 77
fi
as_server() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
if [ "${2:-}" = stop ]; then
  as_server "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  exit 0
fi
mkdir -p "$dir/sock"
[ "$(id -u)" -eq 0 ] && chown -R postgres "$dir"
as_server "$bin/initdb" -D "$dir/data" -U postgres -A trust --no-sync >"$dir/initdb.log" 2>&1 ||
  { cat "$dir/initdb.log" >&2; exit 1; }
as_server "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-c listen_addresses='' -k $dir/sock -c fsync=off -c synchronous_commit=off" start \
  >/dev/null 2>&1 || { echo "PostgreSQL did not start:" >&2; cat "$dir/server.log" >&2; exit 1; }
# Two databases: laggard_test for the store's cases, laggard_cli for the
# command line's.
as_server "$bin/createdb" -h "$dir/sock" -U postgres laggard_test
as_server "$bin/createdb" -h "$dir/sock" -U postgres laggard_cli
echo "LAGGARD_TEST_POSTGRES=postgresql:///laggard_test?host=$dir/sock&user=postgres"
