#!/usr/bin/env bash
# Starts (up) or stops (down) an N-node local OpenSearch cluster: one JVM per node, node i on
# http $OPENSEARCH_PORT+i-1 / transport $OPENSEARCH_TRANSPORT_PORT+i-1, data under
# $OPENSEARCH_DATA_DIR/node-i, zen discovery among the nodes, every node cluster-manager-eligible
# and data. Idempotent: a healthy cluster is reused; down stops only nodes it started (pid files).
# Usage: cluster.sh up|down N   (make opensearch-up NODES=3 / make opensearch-down NODES=3)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
action="$1"; nodes="$2"
base_http="${OPENSEARCH_PORT:-9201}"
base_tr="${OPENSEARCH_TRANSPORT_PORT:-9301}"
data="${OPENSEARCH_DATA_DIR:-.citetrace/opensearch-cluster}"
heap="${OPENSEARCH_HEAP:-512m}"
timeout="${OPENSEARCH_START_TIMEOUT:-240}"

seeds=""; managers=""
for i in $(seq 1 "$nodes"); do
  seeds+="${seeds:+,}127.0.0.1:$((base_tr + i - 1))"
  managers+="${managers:+,}citetrace-node-$i"
done

node_env() {  # i -> runs the rest of the args with node i's knobs
  local i="$1"; shift
  OPENSEARCH_PORT=$((base_http + i - 1)) OPENSEARCH_TRANSPORT_PORT=$((base_tr + i - 1)) \
  OPENSEARCH_DATA_DIR="$data/node-$i" OPENSEARCH_HEAP="$heap" \
  OPENSEARCH_NODE_ARGS="node.name=citetrace-node-$i cluster.name=citetrace-cluster discovery.type=zen discovery.seed_hosts=$seeds cluster.initial_cluster_manager_nodes=$managers" \
  "$@"
}

case "$action" in
  up)
    for i in $(seq 1 "$nodes"); do OPENSEARCH_NO_WAIT=1 node_env "$i" bash "$here/up.sh"; done
    python3 - "$base_http" "$nodes" "$timeout" <<'PY'
import json, sys, time, urllib.request
port, nodes, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
deadline = time.monotonic() + timeout
url = f"http://127.0.0.1:{port}/_cluster/health?wait_for_nodes={nodes}&wait_for_status=yellow&timeout=5s"
while True:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            h = json.load(r)
        if h.get("number_of_nodes") == nodes and h.get("status") in ("green", "yellow"):
            print(f"opensearch-local: cluster {h['cluster_name']} {h['status']} with {nodes} nodes", file=sys.stderr)
            sys.exit(0)
    except Exception:
        pass
    if time.monotonic() > deadline:
        sys.exit(f"opensearch-local: ERROR: cluster not formed with {nodes} nodes after {timeout}s")
    time.sleep(1)
PY
    ;;
  down)
    for i in $(seq 1 "$nodes"); do node_env "$i" bash "$here/down.sh"; done
    ;;
  *) echo "usage: cluster.sh up|down N" >&2; exit 2 ;;
esac
