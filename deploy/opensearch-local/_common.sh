# Shared by build.sh, up.sh and down.sh (sourced, not executed).
# Knobs (environment):
#   OPENSEARCH_JAVA_HOME     JDK to use (default: a Java 17 found on this machine)
#   OPENSEARCH_PORT          HTTP port (default 9200)
#   OPENSEARCH_TRANSPORT_PORT transport port (default 9300)
#   OPENSEARCH_DATA_DIR      node home/data/logs (default .citetrace/opensearch under the repo root;
#                            a relative path is taken from the repo root)
#   OPENSEARCH_HEAP          heap size for -Xms/-Xmx (default 1g)
#   OPENSEARCH_START_TIMEOUT seconds to wait for yellow (default 180)
#   OPENSEARCH_STOP_TIMEOUT  seconds to wait for exit after SIGTERM before SIGKILL (default 30)
#   OPENSEARCH_JAVA_OPTS     extra JVM flags
#   MVN                      maven command and extra args (default mvn)

OSL_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OSL_REPO_ROOT="$(cd "$OSL_DIR/../.." && pwd)"
OSL_TARGET="$OSL_DIR/target"
OSL_MAIN_CLASS="citetrace.opensearch.LocalNode"

OSL_PORT="${OPENSEARCH_PORT:-9200}"
OSL_TRANSPORT_PORT="${OPENSEARCH_TRANSPORT_PORT:-9300}"
OSL_DATA_DIR="${OPENSEARCH_DATA_DIR:-.citetrace/opensearch}"
case "$OSL_DATA_DIR" in
  /*) ;;
  *) OSL_DATA_DIR="$OSL_REPO_ROOT/$OSL_DATA_DIR" ;;
esac
OSL_PID_FILE="$OSL_DATA_DIR/opensearch.pid"
OSL_LOG_FILE="$OSL_DATA_DIR/opensearch.log"

osl_log() { echo "opensearch-local: $*" >&2; }
osl_die() { echo "opensearch-local: ERROR: $*" >&2; exit 1; }

# Major version of a java binary, e.g. 17.
osl_java_major() {
  "$1" -version 2>&1 | sed -n 's/.*version "\([0-9][0-9]*\)[."].*/\1/p' | head -n1
}

# Sets OSL_JAVA_HOME to a Java 17 (OpenSearch 2.19 + this route were verified on 17 only).
osl_find_java17() {
  local cand
  if [ -n "${OPENSEARCH_JAVA_HOME:-}" ]; then
    [ -x "$OPENSEARCH_JAVA_HOME/bin/java" ] || osl_die "OPENSEARCH_JAVA_HOME=$OPENSEARCH_JAVA_HOME has no bin/java"
    OSL_JAVA_HOME="$OPENSEARCH_JAVA_HOME"
    return 0
  fi
  for cand in "${JAVA_HOME:-}" /usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/jvm/java-17-openjdk-arm64 \
              /usr/lib/jvm/java-17-openjdk /usr/lib/jvm/temurin-17-jdk-amd64 /usr/lib/jvm/*17*; do
    if [ -n "$cand" ] && [ -x "$cand/bin/java" ] && [ "$(osl_java_major "$cand/bin/java")" = "17" ]; then
      OSL_JAVA_HOME="$cand"
      return 0
    fi
  done
  if command -v java >/dev/null 2>&1 && [ "$(osl_java_major java)" = "17" ]; then
    OSL_JAVA_HOME="$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")"
    return 0
  fi
  osl_die "no Java 17 found (set OPENSEARCH_JAVA_HOME); on Debian: apt-get install openjdk-17-jdk-headless"
}

# Prints the cluster status (green/yellow/red) of the node on $1, or nothing.
osl_health() {
  python3 - "$1" "${2:-0}" <<'PY' 2>/dev/null
import json, sys, urllib.request
port, wait = sys.argv[1], sys.argv[2]
url = f"http://127.0.0.1:{port}/_cluster/health"
if wait != "0":
    url += f"?wait_for_status=yellow&timeout={wait}s"
try:
    with urllib.request.urlopen(url, timeout=int(wait) + 5) as r:
        print(json.load(r).get("status", ""))
except Exception:
    pass
PY
}

# Exit 0 if something listens on 127.0.0.1:$1.
osl_port_open() {
  python3 - "$1" <<'PY' 2>/dev/null
import socket, sys
s = socket.socket()
s.settimeout(1)
sys.exit(0 if s.connect_ex(("127.0.0.1", int(sys.argv[1]))) == 0 else 1)
PY
}

# Exit 0 if $1 is a live process running our launcher.
osl_is_our_node() {
  local pid="$1"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "$OSL_MAIN_CLASS"
}
