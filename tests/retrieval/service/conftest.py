"""A real retrieval service (in-process, port 0, real gRPC, real SQLite or PostgreSQL store) and a
small client for the service-level tests of issue #3."""

from __future__ import annotations

import contextlib
import dataclasses
from datetime import UTC, datetime
from pathlib import Path

import grpc
import pytest
from citetrace.common.v1 import common_pb2
from citetrace.kit.clients import error_info
from citetrace.kit.testing import serving, token_metadata
from citetrace.kit.timestamps import to_timestamp
from citetrace.retrieval.v1 import retrieval_service_pb2 as pb
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as pb_grpc
from citetrace.vocab import INTENT, INTENTS, VERSION_STATUS, VERSION_STATUSES

from services.retrieval.bootstrap import build_spec
from services.retrieval.settings import Settings

REPO = Path(__file__).resolve().parents[3]
SAMPLES = REPO / "deploy" / "samples" / "corpus"
T2024 = datetime(2024, 1, 1, tzinfo=UTC)
T2025 = datetime(2025, 1, 1, tzinfo=UTC)
STATUS = {name: VERSION_STATUS.number(name) for name in VERSION_STATUSES}
ts = to_timestamp


def intent_numbers(names) -> list[int]:
    """The Intent enum numbers of intent names; a name the contract lacks becomes a number it lacks
    (1000 + its position), so tests can send an unknown intent."""
    return [INTENT.number(name) if name in INTENTS else 1000 + i for i, name in enumerate(names)]


@dataclasses.dataclass
class Client:
    """Calls the service as a given principal; errors come back as (code, reason)."""

    stub: pb_grpc.RetrievalServiceStub
    auth: object
    runner: object
    core: object

    def md(self, tenant, roles=("patient",), locations=()):
        return token_metadata(self.auth, tenant, roles, locations)

    def ingest(self, tenant, document_id, text, *, caller_tenant=None, caller_roles=("policy_admin",),
               source_class="scheduling_policy", title="A synthetic document", status=None,
               valid_from=T2025, valid_to=None, roles=("patient", "staff"), location_scope=(),
               intents=("arrival_preparation",), locale="en"):
        request = pb.IngestDocumentRequest(
            document=common_pb2.Document(tenant_id=tenant, document_id=document_id, source_class=source_class,
                                         title=title),
            text=text, status=STATUS[status] if status else 0, valid_from=ts(valid_from), valid_to=ts(valid_to),
            roles=list(roles), location_scope=list(location_scope), intents=intent_numbers(intents), locale=locale)
        return self.stub.IngestDocument(request, timeout=30,
                                        metadata=self.md(caller_tenant or tenant, caller_roles))

    def search(self, tenant, query, *, roles=("patient",), locations=(), k=10, scope_locations=(), intents=(),
               locale="", as_of=None, mode=pb.SEARCH_MODE_HYBRID, source_classes=()):
        request = pb.SearchRequest(query=query, k=k, as_of=ts(as_of), mode=mode, scope=pb.SearchScope(
            location_ids=list(scope_locations), intents=intent_numbers(intents), locale=locale,
            source_classes=list(source_classes)))
        return self.stub.Search(request, timeout=30, metadata=self.md(tenant, roles, locations))

    def set_status(self, tenant, version_id, status, roles=("policy_admin",)):
        return self.stub.SetVersionStatus(pb.SetVersionStatusRequest(version_id=version_id, status=STATUS[status]),
                                          timeout=30, metadata=self.md(tenant, roles))

    def get(self, tenant, passage_ids=(), spans=(), roles=("patient",)):
        request = pb.GetPassagesRequest(passage_ids=list(passage_ids),
                                        spans=[pb.SpanRef(version_id=v, start=s, end=e) for v, s, e in spans])
        return self.stub.GetPassages(request, timeout=30, metadata=self.md(tenant, roles))

    def versions(self, tenant, document_id="", roles=("policy_admin",), page_size=0, page_token="", status=None):
        request = pb.ListVersionsRequest(document_id=document_id, page_size=page_size, page_token=page_token,
                                         status=STATUS[status] if status else 0)
        return self.stub.ListVersions(request, timeout=30, metadata=self.md(tenant, roles))


def failure(call, *args, **kwargs) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as caught:
        call(*args, **kwargs)
    info = error_info(caught.value)
    return caught.value.code(), info.reason if info else ""


@contextlib.contextmanager
def running_service(auth, data_dir: Path, **overrides):
    settings = Settings(port=0, metrics_port=-1, data_dir=data_dir, **overrides)
    spec = build_spec(settings)
    with serving(spec, auth) as runner, grpc.insecure_channel(runner.address) as channel:
        yield Client(pb_grpc.RetrievalServiceStub(channel), auth, runner, spec.servicer.core)


@pytest.fixture(scope="module")
def svc(auth, tmp_path_factory):
    """One service per test module; tests use their own tenants or document ids."""
    with running_service(auth, tmp_path_factory.mktemp("retrieval")) as client:
        yield client


@pytest.fixture
def fresh(auth, tmp_path):
    """A service with an empty store, for tests that count or restart."""
    with running_service(auth, tmp_path) as client:
        yield client
