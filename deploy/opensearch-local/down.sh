#!/usr/bin/env bash
# Stops the node started by up.sh (via its pid file): SIGTERM, wait, SIGKILL after
# OPENSEARCH_STOP_TIMEOUT seconds (default 30). Leaves alone a node it did not start.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/_common.sh"

timeout="${OPENSEARCH_STOP_TIMEOUT:-30}"

if [ ! -f "$OSL_PID_FILE" ]; then
  if [ -n "$(osl_health "$OSL_PORT")" ]; then
    osl_log "no pid file at $OSL_PID_FILE; the node on port $OSL_PORT was not started by up.sh with this data dir, leaving it"
  else
    osl_log "not running (no pid file at $OSL_PID_FILE)"
  fi
  exit 0
fi

pid="$(cat "$OSL_PID_FILE" 2>/dev/null || true)"
if ! osl_is_our_node "$pid"; then
  osl_log "pid ${pid:-?} from $OSL_PID_FILE is not running (stale pid file removed)"
  rm -f "$OSL_PID_FILE"
  exit 0
fi

start=$(date +%s)
kill -TERM "$pid" 2>/dev/null || true
while kill -0 "$pid" 2>/dev/null; do
  if [ $(( $(date +%s) - start )) -ge "$timeout" ]; then
    osl_log "pid $pid still alive after ${timeout}s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    break
  fi
  sleep 0.2
done
kill -0 "$pid" 2>/dev/null && osl_die "pid $pid did not exit"
rm -f "$OSL_PID_FILE"
osl_log "stopped pid $pid in $(( $(date +%s) - start ))s"
