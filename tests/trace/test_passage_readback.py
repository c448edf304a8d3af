"""Passage text in a trace comes from retrieval, under the reader's own access: the record stores
passage identities only; GetTrace (TRACE_VIEW_FULL) reads the text back through retrieval's
GetPassages with the reader's token and shows it only when it matches the digest the chained
record holds. Real retrieval and real trace services over gRPC."""

from __future__ import annotations

import grpc
import pytest
from citetrace.common.v1 import common_pb2 as c
from citetrace.kit.testing import service_metadata, serving, token_metadata
from citetrace.retrieval.v1 import retrieval_service_pb2 as ret
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as ret_grpc
from citetrace.trace.v1 import trace_service_pb2 as pb
from tracefixtures import TENANT, make_record, trace_service

from services.retrieval.bootstrap import build_spec as retrieval_spec
from services.retrieval.settings import Settings as RetrievalSettings

PATIENT_TEXT = "# Arrival\n\nArrive 20 minutes before an MRI at Harbor Imaging Center (synthetic).\n"
STAFF_TEXT = "# Overbooking\n\nStaff may overbook the first slot of the day by one patient (synthetic).\n"


def _ingest(stub, md, document_id, text, roles):
    reply = stub.IngestDocument(ret.IngestDocumentRequest(
        document=c.Document(tenant_id=TENANT, document_id=document_id, source_class="scheduling_policy",
                            title=f"{document_id} (synthetic)"),
        text=text, status=c.VERSION_STATUS_APPROVED, roles=list(roles), intents=[c.INTENT_ARRIVAL_PREPARATION],
        locale="en"), timeout=60, metadata=md)
    return reply.passages[0]


@pytest.fixture(scope="module")
def retrieval(auth, tmp_path_factory):
    data = tmp_path_factory.mktemp("retrieval")
    with serving(retrieval_spec(RetrievalSettings(port=0, metrics_port=-1, data_dir=data), auth=auth), auth) as runner, \
            grpc.insecure_channel(runner.address) as channel:
        stub = ret_grpc.RetrievalServiceStub(channel)
        admin = token_metadata(auth, TENANT, ("policy_admin",))
        patient = _ingest(stub, admin, "acme-mri-arrival", PATIENT_TEXT, ("patient",))
        staff = _ingest(stub, admin, "acme-overbooking", STAFF_TEXT, ("staff",))
        texts = {p.identity.passage_id: p.text for p in stub.GetPassages(
            ret.GetPassagesRequest(passage_ids=[patient.passage_id, staff.passage_id]), timeout=30,
            metadata=admin).passages}
        yield runner, patient, staff, texts


def _passage(identity) -> c.Passage:
    # The sender's copy of the text is deliberately wrong: the trace service never keeps it.
    return c.Passage(identity=identity, text="a forged copy of the text", title="synthetic")


def _get(stub, metadata_for, trace_id, roles, view=pb.TRACE_VIEW_UNSPECIFIED):
    return stub.GetTrace(pb.GetTraceRequest(trace_id=trace_id, view=view), timeout=10,
                         metadata=metadata_for(TENANT, roles))


def _texts(reply):
    return [h.passage.text for h in reply.record.parts[0].retrieval.retrieved]


def test_text_is_read_back_under_the_readers_own_audience(auth, tmp_path, metadata_for, retrieval):
    runner, patient, staff, texts = retrieval
    with trace_service(auth, tmp_path, retrieval_target=runner.address) as (_, stub, _):
        rec = make_record("t-readback", retrieved=(_passage(patient), _passage(staff)), cited=())
        stub.RecordTrace(pb.RecordTraceRequest(record=rec), timeout=10, metadata=service_metadata(TENANT))

        basic = _get(stub, metadata_for, "t-readback", ("auditor",), pb.TRACE_VIEW_BASIC)
        assert _texts(basic) == ["", ""], "the stored record has identities only"
        assert not basic.HasField("passage_text")
        assert basic.record.parts[0].retrieval.retrieved[0].passage.identity == patient

        # Privileged readers see every source of their tenant (retrieval's rule, not trace's).
        for roles in (("auditor",), ("reviewer",), ("policy_admin",)):
            reply = _get(stub, metadata_for, "t-readback", roles)
            assert _texts(reply) == [texts[patient.passage_id], texts[staff.passage_id]]
            assert reply.passage_text.filled == 2 and not reply.passage_text.not_visible
        # A staff reader sees the staff source and not the patient one (its existence stays a
        # count, never its text).
        staff_view = _get(stub, metadata_for, "t-readback", ("staff",))
        assert _texts(staff_view) == ["", texts[staff.passage_id]]
        assert (staff_view.passage_text.filled, staff_view.passage_text.not_visible) == (1, 1)
        both = _get(stub, metadata_for, "t-readback", ("staff", "patient"))
        assert _texts(both) == [texts[patient.passage_id], texts[staff.passage_id]]


def test_text_that_does_not_match_the_recorded_digest_is_never_shown(auth, tmp_path, metadata_for, retrieval):
    runner, patient, staff, texts = retrieval
    tampered = c.PassageIdentity()
    tampered.CopyFrom(patient)
    tampered.content_sha256 = "0" * 64
    with trace_service(auth, tmp_path, retrieval_target=runner.address) as (_, stub, _):
        rec = make_record("t-digest", retrieved=(_passage(tampered), _passage(staff)), cited=())
        stub.RecordTrace(pb.RecordTraceRequest(record=rec), timeout=10, metadata=service_metadata(TENANT))
        reply = _get(stub, metadata_for, "t-digest", ("auditor",))
    assert _texts(reply) == ["", texts[staff.passage_id]]
    assert reply.passage_text.digest_mismatch == 1 and reply.passage_text.filled == 1


def test_retrieval_down_the_record_still_reads_by_identity(auth, tmp_path, metadata_for, retrieval):
    _, patient, _, _ = retrieval
    with socket_closed() as address, trace_service(auth, tmp_path, retrieval_target=address,
                                                   passage_read_timeout_seconds=1.0) as (_, stub, _):
        rec = make_record("t-down", retrieved=(_passage(patient),), cited=())
        stub.RecordTrace(pb.RecordTraceRequest(record=rec), timeout=10, metadata=service_metadata(TENANT))
        reply = _get(stub, metadata_for, "t-down", ("auditor",))
    assert _texts(reply) == [""]
    assert reply.passage_text.unavailable_reason and not reply.passage_text.filled
    assert reply.record.parts[0].retrieval.retrieved[0].passage.identity == patient


def test_a_record_sent_with_passage_text_is_stored_without_it_and_stays_idempotent(auth, tmp_path, metadata_for,
                                                                                     retrieval):
    _, patient, _, _ = retrieval
    with trace_service(auth, tmp_path) as (_, stub, _):
        md = service_metadata(TENANT)
        with_text = make_record("t-strip", retrieved=(_passage(patient),), cited=())
        first = stub.RecordTrace(pb.RecordTraceRequest(record=with_text), timeout=10, metadata=md)
        without = pb.TraceRecord()
        without.CopyFrom(with_text)
        without.parts[0].retrieval.retrieved[0].passage.text = ""
        again = stub.RecordTrace(pb.RecordTraceRequest(record=without), timeout=10, metadata=md)
    assert first.created and not again.created and again.record_hash == first.record_hash


def test_an_unknown_view_is_a_clear_error(auth, tmp_path, metadata_for):
    with trace_service(auth, tmp_path) as (_, stub, _):
        stub.RecordTrace(pb.RecordTraceRequest(record=make_record("t-view")), timeout=10,
                         metadata=service_metadata(TENANT))
        with pytest.raises(grpc.RpcError) as caught:
            _get(stub, metadata_for, "t-view", ("auditor",), view=7)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT


class socket_closed:
    """An address where nothing listens."""

    def __enter__(self) -> str:
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            return f"127.0.0.1:{sock.getsockname()[1]}"

    def __exit__(self, *exc) -> None:
        return None
