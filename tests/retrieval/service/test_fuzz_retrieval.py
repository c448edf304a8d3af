"""The fuzz suite (issue 17 §3, tests/fuzzing.py) over every RPC of the retrieval service, over real
gRPC on its store (SQLite, and PostgreSQL) and embedded index with one document ingested: generated, mutated and raw
requests with tokens of every role and invalid ones. Never INTERNAL/UNKNOWN, never a hang past the
deadline, INVALID_ARGUMENT names its field, a failed call leaves every table's row count unchanged
(documents, versions, passages, outbox), and the service is still SERVING afterwards."""

from __future__ import annotations

import contextlib

import fuzzing
import grpc
import pytest
from citetrace.common.v1 import common_pb2
from citetrace.retrieval.v1 import retrieval_service_pb2 as pb
from google.protobuf.timestamp_pb2 import Timestamp

from .conftest import T2025, intent_numbers, running_service, ts

SERVICE = pb.DESCRIPTOR.services_by_name["RetrievalService"]
TENANT = "fuzz-retrieval"
TEXT = "# Arrival\n\nArrive 30 minutes before an MRI appointment at Harbor Imaging. Bring your referral.\n"
REGRESSIONS = (
    fuzzing.Regression("Search", pb.SearchRequest(query="mri", as_of=Timestamp(seconds=1, nanos=-1)).SerializeToString(),
                       "patient", "a negative-nanos Timestamp was INTERNAL (issue 17)"),
    fuzzing.Regression("IngestDocument", pb.IngestDocumentRequest(
        document=common_pb2.Document(tenant_id=TENANT, document_id="probe-nl\n", source_class="scheduling_policy"),
        text=TEXT).SerializeToString(), "policy_admin", "a trailing newline slipped through the ID pattern (issue 17)"),
)


def _ingest_request(document_id: str) -> pb.IngestDocumentRequest:
    return pb.IngestDocumentRequest(
        document=common_pb2.Document(tenant_id=TENANT, document_id=document_id, source_class="preparation_instructions",
                                     title="Arrival (synthetic)"),
        text=TEXT, valid_from=ts(T2025), roles=["patient", "staff"], intents=intent_numbers(["arrival_preparation"]),
        locale="en")


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def world(request, auth, tmp_path_factory):
    data = tmp_path_factory.mktemp("fuzz-retrieval")
    with contextlib.ExitStack() as stack:
        if request.param == "sqlite":
            # passage_sides: derived data the background worker writes after an ingest, behind the call
            # (a later call that fails may see it grow); every other table is written by calls only.
            overrides, counts = {}, fuzzing.directory_counts(data, skip=("passage_sides",))
        else:
            url = stack.enter_context(fuzzing.postgres_database())
            overrides, counts = {"database_url": url}, fuzzing.sql_counts(url)
        yield stack.enter_context(_world(auth, data, counts, **overrides))


@contextlib.contextmanager
def _world(auth, data, counts, **overrides):
    with running_service(auth, data, **overrides) as client, grpc.insecure_channel(client.runner.address) as channel:
        ingested = client.stub.IngestDocument(_ingest_request("fuzz-doc"), timeout=60,
                                              metadata=client.md(TENANT, ("policy_admin",)))
        version = ingested.version.version_id
        passage = ingested.passages[0]
        seeds = {
            "IngestDocument": _ingest_request("fuzz-doc-2"),
            "SetVersionStatus": pb.SetVersionStatusRequest(version_id=version, status=common_pb2.VERSION_STATUS_RETIRED),
            "Search": pb.SearchRequest(query="when should I arrive for my MRI", k=3, mode=pb.SEARCH_MODE_HYBRID,
                                       scope=pb.SearchScope(intents=intent_numbers(["arrival_preparation"]),
                                                            locale="en")),
            "GetPassages": pb.GetPassagesRequest(passage_ids=[passage.passage_id],
                                                 spans=[pb.SpanRef(version_id=version, start=passage.start,
                                                                   end=passage.end)]),
            "ListVersions": pb.ListVersionsRequest(document_id="fuzz-doc", page_size=5),
            "ApprovePassages": pb.ApprovePassagesRequest(passage_ids=[passage.passage_id]),
        }
        yield fuzzing.World(channel, SERVICE, auth, TENANT, counts, seeds=seeds, timeout=30)


test_generated, test_mutated, test_raw, test_regressions, test_still_serving = fuzzing.suite(REGRESSIONS)
