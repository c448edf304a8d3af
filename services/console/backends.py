"""Adapters: the console's only way to the other services, their gRPC contracts, always with the
signed-in user's token (never a service token), so every read goes through the same tenant and role
checks as anywhere else. gRPC failures become the few errors the pages distinguish."""

from __future__ import annotations

import dataclasses
from typing import Protocol

import grpc
from citetrace.common.v1 import common_pb2
from citetrace.kit import errors
from citetrace.kit.clients import call, domain_error, stub
from citetrace.orchestrator.v1 import orchestrator_service_pb2 as orch_pb
from citetrace.orchestrator.v1 import orchestrator_service_pb2_grpc as orch_grpc
from citetrace.retrieval.v1 import retrieval_service_pb2 as ret_pb
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as ret_grpc
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as sched_pb
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2_grpc as sched_grpc
from citetrace.trace.v1 import trace_service_pb2 as trace_pb
from citetrace.trace.v1 import trace_service_pb2_grpc as trace_grpc


class BackendError(Exception):
    """A call failed; `reason` is the ErrorInfo reason when the service sent one."""

    def __init__(self, code: str, reason: str, message: str) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message


class NotVisible(BackendError):
    """Does not exist, or the caller may not read it: the two look exactly alike to the reader."""


class Unavailable(BackendError):
    """The service did not answer in time (UNAVAILABLE, DEADLINE_EXCEEDED)."""


class IntegrityFailure(BackendError):
    """DATA_LOSS: the store's text no longer matches its digest; the service refused to serve it."""


class Rejected(BackendError):
    """The request was refused (INVALID_ARGUMENT, FAILED_PRECONDITION, ...): shown with its reason."""


class SignInAgain(BackendError):
    """UNAUTHENTICATED: the token expired or is invalid."""


def translate(err: grpc.RpcError, service: str, *, hide_denied: bool = True) -> BackendError:
    """The kit's mapping of a failed call (code, ErrorInfo reason), sorted into what a page shows."""
    error = domain_error(err, service)
    args = (error.code.value, error.reason, error.message)
    if isinstance(error, errors.NotFound) or (hide_denied and isinstance(error, errors.PermissionDenied)):
        return NotVisible(*args)
    if isinstance(error, errors.Unavailable | errors.DeadlineExceeded):
        return Unavailable(*args)
    if isinstance(error, errors.DataLoss):
        return IntegrityFailure(*args)
    if isinstance(error, errors.Unauthenticated):
        return SignInAgain(*args)
    return Rejected(*args)


@dataclasses.dataclass(frozen=True)
class VersionText:
    """A whole version as retrieval serves it to this reader."""

    version: common_pb2.DocumentVersion
    text: str


class Backends(Protocol):
    """What the console needs from the rest of the system (one method per question it asks)."""

    def ask(self, token: str, request: orch_pb.AskRequest) -> orch_pb.AskResponse: ...

    def locations(self, token: str) -> list[sched_pb.Location]: ...

    def passage(self, token: str, passage_id: str) -> tuple[common_pb2.Passage, common_pb2.DocumentVersion]: ...

    def version_text(self, token: str, version_id: str, length: int | None = None) -> VersionText: ...

    def trace(self, token: str, trace_id: str) -> trace_pb.GetTraceResponse: ...

    def list_traces(self, token: str, request: trace_pb.ListTracesRequest) -> trace_pb.ListTracesResponse: ...

    def record_review(self, token: str, request: trace_pb.RecordReviewRequest) -> trace_pb.Review: ...

    def verify_chain(self, token: str) -> trace_pb.VerifyChainResponse: ...

    def passages_retrievable(self, token: str, passage_ids: list[str]) -> tuple[dict[str, dict], str]: ...


class GrpcBackends:
    """The real services over gRPC (shared, instrumented channels from the kit)."""

    def __init__(self, *, orchestrator: str, retrieval: str, scheduler_gateway: str, trace: str,
                 ask_timeout: float, call_timeout: float) -> None:
        self._orchestrator = stub(orch_grpc.OrchestratorServiceStub, orchestrator)
        self._retrieval = stub(ret_grpc.RetrievalServiceStub, retrieval)
        self._scheduler = stub(sched_grpc.SchedulerGatewayServiceStub, scheduler_gateway)
        self._trace = stub(trace_grpc.TraceServiceStub, trace)
        self._ask_timeout = ask_timeout
        self._timeout = call_timeout

    def _call(self, service: str, method, request, token: str, timeout: float | None = None,
              hide_denied: bool = True):
        try:
            return call(method, request, timeout=timeout or self._timeout, token=token)
        except grpc.RpcError as err:
            raise translate(err, service, hide_denied=hide_denied) from None

    def ask(self, token: str, request: orch_pb.AskRequest) -> orch_pb.AskResponse:
        return self._call("orchestrator", self._orchestrator.Ask, request, token, self._ask_timeout,
                          hide_denied=False)

    def locations(self, token: str) -> list[sched_pb.Location]:
        out: list[sched_pb.Location] = []
        page = ""
        while True:
            reply = self._call("scheduler_gateway", self._scheduler.ListLocations,
                               sched_pb.ListLocationsRequest(page_size=100, page_token=page), token)
            out.extend(reply.locations)
            page = reply.next_page_token
            if not page or len(out) >= 500:
                return out

    def passage(self, token: str, passage_id: str) -> tuple[common_pb2.Passage, common_pb2.DocumentVersion]:
        reply = self._call("retrieval", self._retrieval.GetPassages,
                           ret_pb.GetPassagesRequest(passage_ids=[passage_id]), token)
        return _one(reply, passage_id)

    def version_text(self, token: str, version_id: str, length: int | None = None) -> VersionText:
        # Unless the length is known (from a passage read just now), a read of the first character
        # tells it (and whether this reader may read the version at all); the second read serves the
        # whole text, which retrieval checks against the version ID before serving it.
        if length is None:
            head = self._call("retrieval", self._retrieval.GetPassages, ret_pb.GetPassagesRequest(
                spans=[ret_pb.SpanRef(version_id=version_id, start=0, end=1)]), token)
            length = _one(head, version_id)[1].text_length
        whole = self._call("retrieval", self._retrieval.GetPassages, ret_pb.GetPassagesRequest(
            spans=[ret_pb.SpanRef(version_id=version_id, start=0, end=length)]), token)
        passage, version = _one(whole, version_id)
        return VersionText(version=version, text=passage.text)

    def trace(self, token: str, trace_id: str) -> trace_pb.GetTraceResponse:
        return self._call("trace", self._trace.GetTrace, trace_pb.GetTraceRequest(trace_id=trace_id), token)

    def list_traces(self, token: str, request: trace_pb.ListTracesRequest) -> trace_pb.ListTracesResponse:
        return self._call("trace", self._trace.ListTraces, request, token)

    def record_review(self, token: str, request: trace_pb.RecordReviewRequest) -> trace_pb.Review:
        return self._call("trace", self._trace.RecordReview, request, token, hide_denied=False).review

    def verify_chain(self, token: str) -> trace_pb.VerifyChainResponse:
        return self._call("trace", self._trace.VerifyChain, trace_pb.VerifyChainRequest(), token, timeout=30.0)

    def passages_retrievable(self, token: str, passage_ids: list[str]) -> tuple[dict[str, dict], str]:
        from citetrace.receipts import check_retrievable

        return check_retrievable(self._retrieval, token, passage_ids, timeout=self._timeout)


def _one(reply: ret_pb.GetPassagesResponse, wanted: str) -> tuple[common_pb2.Passage, common_pb2.DocumentVersion]:
    if not reply.passages:
        raise NotVisible("NOT_FOUND", "", f"nothing served for {wanted}")
    passage = reply.passages[0]
    versions = {v.version_id: v for v in reply.versions}
    version = versions.get(passage.identity.version_id)
    if version is None:
        raise NotVisible("NOT_FOUND", "", f"no version metadata served for {wanted}")
    return passage, version
