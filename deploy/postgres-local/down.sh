#!/usr/bin/env bash
# Stops the local PostgreSQL started by up.sh.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
data="${PGDATA_DIR:-$repo/.citetrace/postgres}"
bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)"
[ -n "$bindir" ] && [ -f "$data/postmaster.pid" ] || { echo "postgres-local: not running"; exit 0; }
if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$bindir/pg_ctl" -D "$data" -m fast -w stop >/dev/null
else "$bindir/pg_ctl" -D "$data" -m fast -w stop >/dev/null; fi
echo "postgres-local: stopped"
