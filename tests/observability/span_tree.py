"""Prints the span tree of one two-part question through the real stack (processes, OTLP to a
local receiver), with each span's service and duration:

    .venv/bin/python tests/observability/span_tree.py [--question Q] [--location L] [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from citetrace.orchestrator.v1 import orchestrator_service_pb2 as pb  # noqa: E402
from citetrace.orchestrator.v1 import orchestrator_service_pb2_grpc as pb_grpc  # noqa: E402

from apps.cli.common import dev_token  # noqa: E402
from observability.harness import ROOT, OtlpReceiver, running_stack  # noqa: E402


def print_tree(spans) -> None:
    children: dict[str, list] = {}
    ids = {s.span_id for s in spans}
    for span in sorted(spans, key=lambda s: s.start_ns):
        children.setdefault(span.parent_span_id if span.parent_span_id in ids else "", []).append(span)

    def walk(parent: str, depth: int) -> None:
        for span in children.get(parent, []):
            print(f"{'  ' * depth}{span.name:<{70 - 2 * depth}} {span.service:<30} {span.duration_ms:8.1f} ms")
            walk(span.span_id, depth + 1)

    walk("", 0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--question", default="Can I book cardiology tomorrow, and when should I arrive?")
    parser.add_argument("--location", default="acme-northside")
    parser.add_argument("--repeat", type=int, default=1, help="ask N times; print the tree of the last")
    args = parser.parse_args()
    receiver = OtlpReceiver()
    with tempfile.TemporaryDirectory() as tmp, running_stack(Path(tmp), receiver.endpoint) as stack:
        stack.cli("ingest", str(ROOT / "deploy" / "samples" / "corpus"), "--target", stack.target("retrieval"))
        stack.cli("slots", "load", str(ROOT / "deploy" / "samples" / "slots.yaml"))
        token = dev_token(stack.data_dir, "acme-health", ["patient"])
        walls = []
        with stack.channel("orchestrator") as ch:
            for _ in range(args.repeat):
                started = time.perf_counter()
                reply = pb_grpc.OrchestratorServiceStub(ch).Ask(
                    pb.AskRequest(question=args.question, location_id=args.location),
                    metadata=[("authorization", f"Bearer {token}")], timeout=60)
                walls.append((time.perf_counter() - started) * 1000)
        time.sleep(1.5)
        spans = receiver.spans(reply.trace_id)
        print(f"trace {reply.trace_id}: {len(spans)} spans from {len({s.service for s in spans})} services")
        print_tree(spans)
        print(f"Ask wall time over {len(walls)} call(s): median {statistics.median(walls):.1f} ms, "
              f"max {max(walls):.1f} ms (first {walls[0]:.1f} ms)")
    receiver.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
