#!/usr/bin/env bash
# Starts a throw-away local PostgreSQL for tests and development (idempotent).
# Installs the Debian package when missing; runs as user postgres when invoked as root.
# Env: PGPORT (default 55432), PGDATA_DIR (default <repo>/.citetrace/postgres).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
port="${PGPORT:-55432}"
data="${PGDATA_DIR:-$repo/.citetrace/postgres}"
bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)"
if [ -z "$bindir" ]; then
  echo "postgres-local: installing postgresql (apt)"
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  bindir="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)"
fi
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
if "$bindir/pg_isready" -q -h 127.0.0.1 -p "$port"; then
  echo "postgres-local: already running on 127.0.0.1:$port"; exit 0
fi
mkdir -p "$data"
[ "$(id -u)" = 0 ] && chown postgres "$data" "$(dirname "$data")" 2>/dev/null || true
chmod 700 "$data"
if [ ! -f "$data/PG_VERSION" ]; then
  as_pg "$bindir/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
fi
as_pg "$bindir/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 \
  -o "-p $port -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null
echo "postgres-local: running on 127.0.0.1:$port (data $data)"
