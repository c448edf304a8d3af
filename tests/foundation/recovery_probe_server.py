"""A kit service process for tests/foundation/test_recovery_channels.py: a retrieval servicer on
the kit's ServiceRunner (its server options, health service, interceptor) at a given port, which
stays NOT_SERVING for `warm_seconds` after it listens; a GetPassages call that reaches it before
it is warm is refused with FAILED_PRECONDITION (so the test sees a call the channel should not have
sent). Prints `SERVING <unix time>` once SERVING."""

from __future__ import annotations

import sys
import time

import grpc
from citetrace.kit.auth import AUTH_PREFIX, AuthSettings
from citetrace.kit.server import ServiceRunner, ServiceSpec
from citetrace.kit.settings import ServerSettings, load_settings
from citetrace.retrieval.v1 import retrieval_service_pb2 as ret_pb
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as ret_grpc


class Probe(ret_grpc.RetrievalServiceServicer):
    warm = False

    def GetPassages(self, request, context):
        if not self.warm:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "called while NOT_SERVING")
        return ret_pb.GetPassagesResponse()


def main() -> None:
    port, warm_seconds = int(sys.argv[1]), float(sys.argv[2])
    servicer = Probe()
    spec = ServiceSpec(name="retrieval", full_name=ret_pb.DESCRIPTOR.services_by_name["RetrievalService"].full_name,
                       servicer=servicer, register=ret_grpc.add_RetrievalServiceServicer_to_server)
    runner = ServiceRunner(spec, ServerSettings(host="127.0.0.1", port=port, metrics_port=-1, grace_seconds=0.2),
                           load_settings(AuthSettings, AUTH_PREFIX))
    runner.start()
    time.sleep(warm_seconds)
    servicer.warm = True
    runner.warm_up()
    print("SERVING", time.time(), flush=True)
    runner.serve_forever()


if __name__ == "__main__":
    main()
