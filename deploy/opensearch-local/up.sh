#!/usr/bin/env bash
# Starts the embedded single-node OpenSearch (k-NN, lucene engine) in the background and waits
# for cluster health yellow. Reuses a node that is already healthy on the port (exit 0).
# Knobs: see _common.sh (OPENSEARCH_PORT, OPENSEARCH_TRANSPORT_PORT, OPENSEARCH_DATA_DIR, ...).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/_common.sh"

timeout="${OPENSEARCH_START_TIMEOUT:-180}"
heap="${OPENSEARCH_HEAP:-1g}"

status="$(osl_health "$OSL_PORT")"
if [ "$status" = "green" ] || [ "$status" = "yellow" ]; then
  osl_log "reusing the node already healthy ($status) on 127.0.0.1:$OSL_PORT"
  exit 0
fi

mkdir -p "$OSL_DATA_DIR/tmp"
pid=""
if [ -f "$OSL_PID_FILE" ]; then
  old="$(cat "$OSL_PID_FILE" 2>/dev/null || true)"
  if osl_is_our_node "$old"; then
    osl_log "node pid $old is running but not healthy yet; waiting for it"
    pid="$old"
  else
    rm -f "$OSL_PID_FILE"
  fi
fi

if [ -z "$pid" ]; then
  osl_port_open "$OSL_PORT" && osl_die "port $OSL_PORT is taken by something that is not a healthy OpenSearch (set OPENSEARCH_PORT)"
  osl_port_open "$OSL_TRANSPORT_PORT" && osl_die "transport port $OSL_TRANSPORT_PORT is taken (set OPENSEARCH_TRANSPORT_PORT)"
  "$OSL_DIR/build.sh"
  osl_find_java17
  [ -f "$OSL_LOG_FILE" ] && mv -f "$OSL_LOG_FILE" "$OSL_LOG_FILE.1"
  # Flags: the requested ones, plus those the distribution's launcher always sets that matter
  # here (log4j must not shut itself down before the node's own shutdown hook has logged).
  # shellcheck disable=SC2086
  setsid "$OSL_JAVA_HOME/bin/java" \
    -Xms"$heap" -Xmx"$heap" -XX:+UseG1GC -Djava.awt.headless=true -Dfile.encoding=UTF-8 \
    -Xss1m -XX:-OmitStackTraceInFastThrow -Djna.nosys=true -Djava.locale.providers=SPI,COMPAT \
    -Dio.netty.noUnsafe=true -Dio.netty.noKeySetOptimization=true -Dio.netty.recycler.maxCapacityPerThread=0 \
    -Dlog4j.shutdownHookEnabled=false -Dlog4j2.disable.jmx=true \
    -Djava.io.tmpdir="$OSL_DATA_DIR/tmp" \
    ${OPENSEARCH_JAVA_OPTS:-} \
    -cp "$OSL_TARGET/opensearch-local.jar:$OSL_TARGET/lib/*:$OSL_TARGET/knn/*" \
    "$OSL_MAIN_CLASS" \
    "path.home=$OSL_DATA_DIR" \
    "path.conf=$OSL_DIR/config" \
    "path.data=$OSL_DATA_DIR/data" \
    "path.logs=$OSL_DATA_DIR/logs" \
    "http.port=$OSL_PORT" \
    "transport.port=$OSL_TRANSPORT_PORT" \
    ${OPENSEARCH_NODE_ARGS:-} \
    </dev/null >"$OSL_LOG_FILE" 2>&1 &
  pid=$!
  echo "$pid" >"$OSL_PID_FILE"
  osl_log "started pid $pid (http 127.0.0.1:$OSL_PORT, transport $OSL_TRANSPORT_PORT, data $OSL_DATA_DIR, log $OSL_LOG_FILE)"
fi

# A cluster member cannot be healthy alone: cluster.sh starts every node, then waits itself.
[ "${OPENSEARCH_NO_WAIT:-0}" = "1" ] && exit 0

start=$(date +%s)
while :; do
  status="$(osl_health "$OSL_PORT" 2)"
  if [ "$status" = "green" ] || [ "$status" = "yellow" ]; then
    cpu=""
    if [ -r "/proc/$pid/stat" ]; then
      cpu="$(awk -v hz="$(getconf CLK_TCK)" '{printf ", JVM cpu %.0fs", ($14 + $15) / hz}' "/proc/$pid/stat" 2>/dev/null || true)"
    fi
    osl_log "healthy ($status) on 127.0.0.1:$OSL_PORT after $(( $(date +%s) - start ))s$cpu"
    exit 0
  fi
  if ! kill -0 "$pid" 2>/dev/null; then
    rm -f "$OSL_PID_FILE"
    tail -n 60 "$OSL_LOG_FILE" >&2 || true
    osl_die "node exited during start-up (log: $OSL_LOG_FILE)"
  fi
  if [ $(( $(date +%s) - start )) -ge "$timeout" ]; then
    tail -n 60 "$OSL_LOG_FILE" >&2 || true
    osl_log "not healthy after ${timeout}s; stopping pid $pid"
    "$OSL_DIR/down.sh" || true
    osl_die "start-up timed out (log: $OSL_LOG_FILE)"
  fi
  sleep 1
done
