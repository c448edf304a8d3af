"""What the pipeline needs from other services, as small interfaces (no grpc here). Adapters
raise kit DomainErrors (Unavailable, DeadlineExceeded, InvalidArgument, ...) on failure."""

from __future__ import annotations

from typing import Protocol

from citetrace.citation_validator.v1 import citation_validator_service_pb2 as cv_pb
from citetrace.generation.v1 import generation_service_pb2 as gen_pb
from citetrace.retrieval.v1 import retrieval_service_pb2 as ret_pb
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as sched_pb
from citetrace.trace.v1 import trace_service_pb2 as trace_pb


class Scheduler(Protocol):
    def list_locations(self, request: sched_pb.ListLocationsRequest, timeout: float) -> sched_pb.ListLocationsResponse: ...
    def find_slots(self, request: sched_pb.FindSlotsRequest, timeout: float) -> sched_pb.FindSlotsResponse: ...


class Retrieval(Protocol):
    def search(self, request: ret_pb.SearchRequest, timeout: float) -> ret_pb.SearchResponse: ...
    def get_passages(self, request: ret_pb.GetPassagesRequest, timeout: float) -> ret_pb.GetPassagesResponse: ...


class Generation(Protocol):
    def generate(self, request: gen_pb.GenerateRequest, timeout: float) -> gen_pb.GenerateResponse: ...


class Validator(Protocol):
    def validate(self, request: cv_pb.ValidateRequest, timeout: float) -> cv_pb.ValidateResponse: ...


class TraceSink(Protocol):
    def submit(self, record: trace_pb.TraceRecord) -> bool:
        """Stores the record durably; True when it was delivered to the trace service now."""
        ...
