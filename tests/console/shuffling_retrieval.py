"""A test backend in front of the real retrieval service: every call is forwarded unchanged with the
caller's token, except that each Search reply comes back with its hits swapped in pairs (1<->2,
3<->4, ...), every identifier kept. The orchestrator offers hits to the generator in the order it
receives them, so the passages are offered under other S-labels than the stack would give them; the
top hits stay the same set (conflict detection looks at the top four). A console that binds a marker
to a label or a position opens the wrong passage; one that binds it to the passage ID does not.
Served over real gRPC on a free port."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from concurrent import futures

import grpc
from citetrace.kit.tls import PLAINTEXT, TransportSettings, open_channel, server_credentials
from citetrace.retrieval.v1 import retrieval_service_pb2 as pb

SEARCH = "/citetrace.retrieval.v1.RetrievalService/Search"


def swap_pairs(reply: pb.SearchResponse) -> pb.SearchResponse:
    out = pb.SearchResponse()
    out.CopyFrom(reply)
    hits = [pb.SearchHit.FromString(h.SerializeToString()) for h in reply.hits]
    for i in range(0, len(hits) - 1, 2):
        hits[i], hits[i + 1] = hits[i + 1], hits[i]
    for rank, hit in enumerate(hits, start=1):  # as a retrieval that ranked them so would label them
        hit.label = f"S{rank}"
    del out.hits[:]
    out.hits.extend(hits)
    return out


class _Forward(grpc.GenericRpcHandler):
    def __init__(self, target: str, transport: TransportSettings) -> None:
        self.channel = open_channel(target, transport)
        self.lock = threading.Lock()
        self.searches: list[tuple[pb.SearchResponse, pb.SearchResponse]] = []

    def service(self, details):
        method = details.method
        if method.endswith("/Watch") or "Reflection" in method:
            return None
        forward = self.channel.unary_unary(method)  # raw bytes both ways

        def handle(request: bytes, context) -> bytes:
            metadata = [(k, v) for k, v in context.invocation_metadata() if k == "authorization"]
            try:
                reply = forward(request, timeout=context.time_remaining(), metadata=metadata)
            except grpc.RpcError as err:
                context.set_trailing_metadata(err.trailing_metadata() or ())
                context.abort(err.code(), err.details())
            if method != SEARCH:
                return reply
            original = pb.SearchResponse.FromString(reply)
            swapped = swap_pairs(original)
            with self.lock:
                self.searches.append((original, swapped))
            return swapped.SerializeToString()

        return grpc.unary_unary_rpc_method_handler(handle)


@contextlib.contextmanager
def shuffling_retrieval(target: str, transport: TransportSettings = PLAINTEXT) -> Iterator[tuple[str, _Forward]]:
    handler = _Forward(target, transport)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), handlers=[handler])
    # Under the stack's mutual TLS it serves and calls with the certificate `transport` names.
    port = (server.add_insecure_port("127.0.0.1:0") if transport.plaintext
            else server.add_secure_port("127.0.0.1:0", server_credentials(transport)))
    server.start()
    try:
        yield f"127.0.0.1:{port}", handler
    finally:
        server.stop(0.5).wait()
        handler.channel.close()
