#!/usr/bin/env bash
# citetrace demo: start the six services on embedded defaults, ingest the SYNTHETIC sample corpus,
# load the SYNTHETIC sample slots, ask questions that show each part outcome, print the trace of
# one, and stop the stack again, also when a step fails.
#   usage: deploy/demo/run-demo.sh [CITETRACE] ; env: DEMO_DATA_DIR, DEMO_PORT_OFFSET (default 700)
set -euo pipefail
cd "$(dirname "$0")/../.."
CT="${1:-.venv/bin/citetrace}"
PY="$(dirname "$CT")/python"
OFFSET="${DEMO_PORT_OFFSET:-700}"
KEEP="${DEMO_DATA_DIR:+yes}"
DATA_DIR="${DEMO_DATA_DIR:-$(mktemp -d -t citetrace-demo.XXXXXX)}"
export OPENBLAS_NUM_THREADS=1

stop() {
  status=$?
  echo
  echo "== stopping the stack"
  "$CT" down --data-dir "$DATA_DIR" || true
  if [ $status -ne 0 ]; then
    echo "demo: FAILED (exit $status); logs in $DATA_DIR/logs" >&2
  elif [ -z "$KEEP" ]; then
    rm -rf "$DATA_DIR"
  fi
  exit $status
}
trap stop EXIT

echo "== starting the stack (data: $DATA_DIR, port offset $OFFSET)"
"$CT" up --detach --data-dir "$DATA_DIR" --port-offset "$OFFSET"
echo
echo "== ingesting the sample corpus"
"$CT" ingest --data-dir "$DATA_DIR" deploy/samples/corpus | tail -n 1
echo "== loading the sample slots"
"$CT" slots load --data-dir "$DATA_DIR" deploy/samples/slots.yaml

ask() {  # ask TITLE TENANT QUESTION
  echo
  echo "================================================================================"
  echo "== $1"
  echo "== [$2] $3"
  echo "================================================================================"
  "$CT" ask --data-dir "$DATA_DIR" --tenant "$2" --roles patient "$3" | tee "$DATA_DIR/last-answer.txt"
}

ask "answered with citations" acme-health "When should I arrive for my appointment at Northside Family Clinic?"
ask "live slots and a policy answer together" acme-health \
  "Can I book cardiology at Northside tomorrow, and when should I arrive?"
TRACE_ID="$(awk '/^trace: /{print $2}' "$DATA_DIR/last-answer.txt")"
ask "abstention: no eligible evidence" borealis-clinics "Where can I park my car?"
ask "clarification: which clinic?" acme-health "Can I book cardiology tomorrow?"
ask "out of scope: the clinical part gets the boundary, the booking part proceeds" acme-health \
  "Can I book cardiology at Northgate tomorrow and should I stop my blood thinner?"
ask "conflict: two current approved documents disagree" acme-health \
  "When should I arrive for my MRI at Harbor Imaging Center?"
ask "answered from a PDF: the citation shows the printed page and the viewer page" acme-health \
  "Can I wear deodorant to my mammogram at Harbor Imaging Center?"
grep -q "p\. H-1 (viewer page 3)" "$DATA_DIR/last-answer.txt" && grep -q "Do not use deodorant" "$DATA_DIR/last-answer.txt" \
  || { echo "demo: the PDF answer lost its page" >&2; exit 1; }
ask "answered from a web page (navigation and footer dropped at ingestion)" acme-health \
  "How long does Northside Family Clinic keep lost phones?"
grep -q "acme-northside-lost-property" "$DATA_DIR/last-answer.txt" && grep -q "60 days" "$DATA_DIR/last-answer.txt" \
  || { echo "demo: the HTML answer is missing" >&2; exit 1; }

echo
echo "================================================================================"
echo "== the evidence record of the two-part answer: $TRACE_ID"
echo "================================================================================"
if "$CT" trace show --help >/dev/null 2>&1; then
  "$CT" trace show --data-dir "$DATA_DIR" "$TRACE_ID" 2>/dev/null \
    || "$CT" trace show --data-dir "$DATA_DIR" --tenant acme-health --roles auditor,patient "$TRACE_ID"
else
  "$PY" - "$DATA_DIR" "$TRACE_ID" <<'PYEOF'
import sys
from pathlib import Path

import grpc
from google.protobuf import json_format

from apps.cli.common import dev_token, target
from citetrace.kit.auth import bearer_metadata
from citetrace.trace.v1 import trace_service_pb2 as pb, trace_service_pb2_grpc as pb_grpc

data_dir, trace_id = Path(sys.argv[1]), sys.argv[2]
token = dev_token(data_dir, "acme-health", ["auditor", "patient"])
with grpc.insecure_channel(target(data_dir, "trace")) as channel:
    reply = pb_grpc.TraceServiceStub(channel).GetTrace(pb.GetTraceRequest(trace_id=trace_id), timeout=10,
                                                        metadata=bearer_metadata(token))
print(json_format.MessageToJson(reply.record, indent=2))
PYEOF
fi
echo
echo "demo: done"
