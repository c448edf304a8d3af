"""Container health check over the standard gRPC health protocol (grpc.health.v1):

    python -m citetrace.kit.healthcheck 127.0.0.1:50052 [--service NAME] [--timeout 2]

Exit 0 when the server answers SERVING, 1 otherwise (NOT_SERVING while warming up or draining,
unreachable, or timed out). Used by the Dockerfiles' HEALTHCHECK and the Kubernetes exec probes; it
connects with the process's own transport settings (CITETRACE_TLS_*: its certificate under mTLS)."""

from __future__ import annotations

import argparse
import sys

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from citetrace.kit.tls import open_channel, transport_from_environment


def check(target: str, service: str = "", timeout: float = 2.0) -> str:
    """SERVING, NOT_SERVING, SERVICE_UNKNOWN, UNKNOWN, or the gRPC status code name on failure."""
    with open_channel(target, transport_from_environment()) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=timeout)
        except grpc.RpcError as err:
            return err.code().name
    return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m citetrace.kit.healthcheck", description=__doc__)
    parser.add_argument("target", help="host:port of the gRPC server")
    parser.add_argument("--service", default="", help="service name to check ('' = the whole server)")
    parser.add_argument("--timeout", type=float, default=2.0)
    args = parser.parse_args(argv)
    status = check(args.target, args.service, args.timeout)
    print(status)
    return 0 if status == "SERVING" else 1


if __name__ == "__main__":
    sys.exit(main())
