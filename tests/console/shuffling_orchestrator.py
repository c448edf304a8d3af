"""A test backend in front of the real orchestrator: it forwards each Ask with the caller's token and
reorders what the console receives while keeping every identifier: claims in reverse order, each
claim's citations and each part's conflicts permuted, and the S-labels handed out again in the new
order. A console that binds a marker to a position (or a label) opens the wrong passage; one that
binds it to the passage ID does not. Served over real gRPC on a free port."""

from __future__ import annotations

import contextlib
import random
import threading
from collections.abc import Iterator
from concurrent import futures

import grpc
from citetrace.kit.tls import PLAINTEXT, TransportSettings, open_channel, server_credentials
from citetrace.orchestrator.v1 import orchestrator_service_pb2 as pb
from citetrace.orchestrator.v1 import orchestrator_service_pb2_grpc as pb_grpc


def _permuted(items: list, rng: random.Random) -> list:
    """A permutation that moves something whenever there are two or more items."""
    if len(items) < 2:
        return list(items)
    order = list(range(len(items)))
    while order == sorted(order):
        rng.shuffle(order)
    return [items[i] for i in order]


def shuffle_response(response: pb.AskResponse, seed: int = 7) -> pb.AskResponse:
    rng = random.Random(seed)
    out = pb.AskResponse()
    out.CopyFrom(response)
    for part in out.parts:
        claims = [pb.AnsweredClaim.FromString(c.SerializeToString()) for c in part.claims]
        claims.reverse()
        for claim in claims:
            citations = [type(c).FromString(c.SerializeToString()) for c in claim.citations]
            del claim.citations[:]
            claim.citations.extend(_permuted(citations, rng))
        del part.claims[:]
        part.claims.extend(claims)
        conflicts = [pb.ConflictingSource.FromString(c.SerializeToString()) for c in part.conflicts]
        del part.conflicts[:]
        part.conflicts.extend(_permuted(conflicts, rng))
        labels: dict[str, str] = {}
        for claim in part.claims:
            for citation in claim.citations:
                citation.label = labels.setdefault(citation.passage_id, f"S{len(labels) + 1}")
    return out


class ShufflingOrchestrator(pb_grpc.OrchestratorServiceServicer):
    def __init__(self, target: str, transport: TransportSettings) -> None:
        self._channel = open_channel(target, transport)
        self._stub = pb_grpc.OrchestratorServiceStub(self._channel)
        self.lock = threading.Lock()
        self.original: list[pb.AskResponse] = []
        self.shuffled: list[pb.AskResponse] = []

    def close(self) -> None:
        self._channel.close()

    def Ask(self, request, context):
        metadata = [(k, v) for k, v in context.invocation_metadata() if k == "authorization"]
        try:
            response = self._stub.Ask(request, timeout=context.time_remaining(), metadata=metadata)
        except grpc.RpcError as err:
            context.abort(err.code(), err.details())
        shuffled = shuffle_response(response)
        with self.lock:
            self.original.append(response)
            self.shuffled.append(shuffled)
        return shuffled


@contextlib.contextmanager
def shuffling_orchestrator(target: str, transport: TransportSettings = PLAINTEXT) -> Iterator[tuple[str, ShufflingOrchestrator]]:
    servicer = ShufflingOrchestrator(target, transport)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    pb_grpc.add_OrchestratorServiceServicer_to_server(servicer, server)
    # Under the stack's mutual TLS it serves and calls with the certificate `transport` names.
    port = (server.add_insecure_port("127.0.0.1:0") if transport.plaintext
            else server.add_secure_port("127.0.0.1:0", server_credentials(transport)))
    server.start()
    try:
        yield f"127.0.0.1:{port}", servicer
    finally:
        server.stop(0.5).wait()
        servicer.close()
