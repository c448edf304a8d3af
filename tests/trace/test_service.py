"""The trace service over real gRPC on SQLite and PostgreSQL: writing, idempotency, tenant and role
checks, filters and paging, reviews and re-review, retention, chain verification."""

from __future__ import annotations

import datetime as dt

import grpc
import pytest
from citetrace.common.v1 import common_pb2 as c
from citetrace.kit.clients import error_info
from citetrace.kit.testing import service_metadata, through
from citetrace.trace.v1 import trace_service_pb2 as pb
from tracefixtures import (
    CANCEL_RULE,
    MRI_OTHER,
    MRI_RULE,
    OTHER_TENANT,
    TENANT,
    make_record,
    trace_service,
    ts,
)

SERVICE = ("service",)


def record(stub, md, rec):
    return stub.RecordTrace(pb.RecordTraceRequest(record=rec), timeout=10, metadata=md)


def expect_error(call, code, reason):
    with pytest.raises(grpc.RpcError) as caught:
        call()
    assert caught.value.code() == code, caught.value.details()
    assert error_info(caught.value).reason == reason
    return caught.value


def test_record_then_get_round_trips_the_record(trace, metadata_for):
    _, stub, _ = trace
    rec = make_record("t-roundtrip")
    reply = record(stub, service_metadata(TENANT), rec)
    assert reply.created and len(reply.record_hash) == 64
    reply_full = stub.GetTrace(pb.GetTraceRequest(trace_id="t-roundtrip"), timeout=10,
                               metadata=metadata_for(TENANT, ("auditor", "patient")))
    got = reply_full.record
    assert got.record_hash == reply.record_hash and got.sequence == 1
    assert got.previous_hash == "0" * 64
    # Everything the orchestrator sent comes back unchanged (service-set fields aside), except
    # passage text: the record keeps passages by identity only.
    expected = pb.TraceRecord()
    expected.CopyFrom(rec)
    for part in expected.parts:
        for hit in part.retrieval.retrieved:
            hit.passage.text = ""
    for name in ("previous_hash", "record_hash", "sequence"):
        got.ClearField(name)
    assert got == expected
    assert got.parts[0].retrieval.retrieved[1].passage.identity == MRI_OTHER.identity
    assert list(got.parts[0].citations)[0].passage_id == MRI_RULE.identity.passage_id
    # This service has no retrieval to read the text back from, and says so.
    assert "no retrieval target" in reply_full.passage_text.unavailable_reason


def test_retried_write_is_idempotent_and_a_different_record_conflicts(trace, metadata_for):
    _, stub, _ = trace
    md = service_metadata(TENANT)
    rec = make_record("t-idem")
    first = record(stub, md, rec)
    again = record(stub, md, rec)
    assert first.created and not again.created and again.record_hash == first.record_hash
    changed = make_record("t-idem", question="Something else entirely?", created_at=rec.created_at.ToDatetime())
    expect_error(lambda: record(stub, md, changed), grpc.StatusCode.ALREADY_EXISTS, "TRACE_ID_CONFLICT")
    changed_body = make_record("t-idem", outcome=c.PART_OUTCOME_UNRESOLVED, created_at=rec.created_at.ToDatetime())
    expect_error(lambda: record(stub, md, changed_body), grpc.StatusCode.ALREADY_EXISTS, "TRACE_ID_CONFLICT")
    listed = stub.ListTraces(pb.ListTracesRequest(), timeout=10, metadata=metadata_for(TENANT, ("auditor",)))
    assert [t.trace_id for t in listed.traces] == ["t-idem"]


def test_retry_without_created_at_is_still_idempotent(trace, metadata_for):
    _, stub, _ = trace
    md = service_metadata(TENANT)
    rec = make_record("t-nocreated")
    rec.ClearField("created_at")
    first = record(stub, md, rec)
    again = record(stub, md, rec)
    assert first.created and not again.created and again.record_hash == first.record_hash


def test_only_the_service_role_writes_and_only_for_its_tenant(trace, metadata_for):
    _, stub, _ = trace
    # Only the orchestrator records Asks (kit.callers); a user's token through it still needs the role.
    expect_error(lambda: record(stub, metadata_for(TENANT, ("auditor", "reviewer")), make_record("t-w1")),
                 grpc.StatusCode.PERMISSION_DENIED, "CALLER_NOT_ALLOWED")
    expect_error(lambda: record(stub, through(metadata_for(TENANT, ("auditor", "reviewer")), "orchestrator"),
                                make_record("t-w1")), grpc.StatusCode.PERMISSION_DENIED, "ROLE_REQUIRED")
    expect_error(lambda: record(stub, service_metadata(TENANT, "generation"), make_record("t-w1")),
                 grpc.StatusCode.PERMISSION_DENIED, "CALLER_NOT_ALLOWED")
    expect_error(lambda: record(stub, service_metadata(OTHER_TENANT), make_record("t-w2", tenant=TENANT)),
                 grpc.StatusCode.PERMISSION_DENIED, "TENANT_MISMATCH")
    # An empty tenant_id is filled from the token.
    rec = make_record("t-w3")
    rec.tenant_id = ""
    assert record(stub, service_metadata(OTHER_TENANT), rec).created
    got = stub.GetTrace(pb.GetTraceRequest(trace_id="t-w3"), timeout=10,
                        metadata=metadata_for(OTHER_TENANT, ("auditor",))).record
    assert got.tenant_id == OTHER_TENANT


def test_another_tenants_trace_is_not_found(trace, metadata_for):
    _, stub, _ = trace
    record(stub, service_metadata(TENANT), make_record("t-tenant"))
    other = metadata_for(OTHER_TENANT, ("auditor", "reviewer"))
    expect_error(lambda: stub.GetTrace(pb.GetTraceRequest(trace_id="t-tenant"), timeout=10, metadata=other),
                 grpc.StatusCode.NOT_FOUND, "TRACE_NOT_FOUND")
    assert not stub.ListTraces(pb.ListTracesRequest(), timeout=10, metadata=other).traces
    expect_error(lambda: stub.RecordReview(pb.RecordReviewRequest(
        trace_id="t-tenant", decision=pb.REVIEW_DECISION_ACCEPTED), timeout=10,
        metadata=metadata_for(OTHER_TENANT, ("reviewer",))), grpc.StatusCode.NOT_FOUND, "TRACE_NOT_FOUND")
    expect_error(lambda: stub.VerifyChain(pb.VerifyChainRequest(tenant_id=TENANT), timeout=10, metadata=other),
                 grpc.StatusCode.NOT_FOUND, "TENANT_NOT_FOUND")


def test_query_text_only_for_reviewer_and_auditor(trace, metadata_for):
    _, stub, _ = trace
    record(stub, service_metadata(TENANT), make_record("t-query"))

    def query_for(roles):
        return stub.GetTrace(pb.GetTraceRequest(trace_id="t-query"), timeout=10,
                             metadata=metadata_for(TENANT, roles)).record.query

    assert query_for(("reviewer",)).raw == "When should I arrive for my MRI?"
    assert query_for(("auditor",)).normalized == "when should i arrive for my mri?"
    for roles in (("staff",), ("policy_admin",)):
        query = query_for(roles)
        assert query.raw == "" and query.normalized == "" and not query.redacted
    expect_error(lambda: query_for(("patient",)), grpc.StatusCode.PERMISSION_DENIED, "ROLE_REQUIRED")


def test_list_filters_and_paging(trace, metadata_for):
    _, stub, _ = trace
    md = service_metadata(TENANT)
    base = dt.datetime(2026, 11, 1, 12, 0)
    record(stub, md, make_record("t-a", created_at=base))
    record(stub, md, make_record("t-b", created_at=base + dt.timedelta(days=1), cited=(CANCEL_RULE,),
                                 retrieved=(CANCEL_RULE,)))
    record(stub, md, make_record("t-c", created_at=base + dt.timedelta(days=2), cited=(),
                                 outcome=c.PART_OUTCOME_ABSTAINED_NO_EVIDENCE,
                                 reasons=(c.FAILURE_REASON_CITATION_GAP,),
                                 verdict=c.SUPPORT_VERDICT_UNSUPPORTED))
    reader = metadata_for(TENANT, ("auditor",))

    def ids(**kwargs):
        return [t.trace_id for t in stub.ListTraces(pb.ListTracesRequest(**kwargs), timeout=10,
                                                    metadata=reader).traces]

    assert ids() == ["t-c", "t-b", "t-a"]
    assert ids(outcome=c.PART_OUTCOME_ABSTAINED_NO_EVIDENCE) == ["t-c"]
    assert ids(outcome=c.PART_OUTCOME_ANSWERED) == ["t-b", "t-a"]
    assert ids(failure_reason=c.FAILURE_REASON_CITATION_GAP) == ["t-c"]
    assert ids(failure_reason=c.FAILURE_REASON_STALE_VERSION) == []
    assert ids(document_id="acme-cancellation") == ["t-b"]
    assert ids(version_id=MRI_RULE.identity.version_id) == ["t-a"]
    assert ids(created_after=ts(base + dt.timedelta(hours=1))) == ["t-c", "t-b"]
    assert ids(created_after=ts(base), created_before=ts(base + dt.timedelta(days=1))) == ["t-a"]
    summary = stub.ListTraces(pb.ListTracesRequest(document_id="acme-cancellation"), timeout=10,
                              metadata=reader).traces[0]
    assert list(summary.cited_version_ids) == [CANCEL_RULE.identity.version_id]
    assert summary.outcome == c.PART_OUTCOME_ANSWERED

    seen, token = [], ""
    while True:
        page = stub.ListTraces(pb.ListTracesRequest(page_size=2, page_token=token), timeout=10, metadata=reader)
        assert len(page.traces) <= 2
        seen += [t.trace_id for t in page.traces]
        token = page.next_page_token
        if not token:
            break
    assert seen == ["t-c", "t-b", "t-a"]
    expect_error(lambda: stub.ListTraces(pb.ListTracesRequest(page_token="garbage!"), timeout=10, metadata=reader),
                 grpc.StatusCode.INVALID_ARGUMENT, "INVALID_PAGE_TOKEN")
    expect_error(lambda: stub.ListTraces(pb.ListTracesRequest(created_after=ts(base), created_before=ts(base)),
                                         timeout=10, metadata=reader),
                 grpc.StatusCode.INVALID_ARGUMENT, "INVALID_TIME_RANGE")


def test_review_binds_answer_and_evidence_versions_and_version_events_flag_rereview(trace, metadata_for):
    _, stub, _ = trace
    md = service_metadata(TENANT)
    created = dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(minutes=5)
    first = record(stub, md, make_record("t-rev", created_at=created))
    record(stub, md, make_record("t-other", created_at=created, cited=(CANCEL_RULE,), retrieved=(CANCEL_RULE,)))
    reviewer = metadata_for(TENANT, ("reviewer",), subject="reviewer-42")
    reader = metadata_for(TENANT, ("auditor",))

    expect_error(lambda: stub.RecordReview(pb.RecordReviewRequest(trace_id="t-rev", decision=1), timeout=10,
                                           metadata=metadata_for(TENANT, ("auditor",))),
                 grpc.StatusCode.PERMISSION_DENIED, "ROLE_REQUIRED")
    expect_error(lambda: stub.RecordReview(pb.RecordReviewRequest(trace_id="t-rev"), timeout=10, metadata=reviewer),
                 grpc.StatusCode.INVALID_ARGUMENT, "MISSING_DECISION")
    expect_error(lambda: stub.RecordReview(pb.RecordReviewRequest(
        trace_id="t-rev", decision=1, answer_record_hash="f" * 64), timeout=10, metadata=reviewer),
        grpc.StatusCode.FAILED_PRECONDITION, "ANSWER_VERSION_MISMATCH")
    review = stub.RecordReview(pb.RecordReviewRequest(
        trace_id="t-rev", decision=pb.REVIEW_DECISION_ACCEPTED, rubric_note="claim c1 matches S1 verbatim",
        answer_record_hash=first.record_hash), timeout=10, metadata=reviewer).review
    assert review.answer_record_hash == first.record_hash
    assert list(review.evidence_version_ids) == [MRI_RULE.identity.version_id]
    assert review.source_policy_version == "sp-1" and review.reviewer_ref == "reviewer-42"

    def needing():
        return [t.trace_id for t in stub.ListTraces(pb.ListTracesRequest(needs_review=True), timeout=10,
                                                    metadata=reader).traces]

    assert needing() == []
    expect_error(lambda: stub.RecordVersionEvent(pb.RecordVersionEventRequest(
        version_id=MRI_RULE.identity.version_id, kind=1), timeout=10, metadata=through(reviewer, "cli")),
        grpc.StatusCode.PERMISSION_DENIED, "ROLE_REQUIRED")
    affected = stub.RecordVersionEvent(pb.RecordVersionEventRequest(
        version_id=MRI_RULE.identity.version_id, kind=pb.VERSION_EVENT_KIND_SUPERSEDED,
        replaced_by_version_id="v" + "3" * 63), timeout=10,
        metadata=through(metadata_for(TENANT, ("policy_admin",)), "cli"))
    assert affected.affected_traces == 1
    assert needing() == ["t-rev"]
    got = stub.GetTrace(pb.GetTraceRequest(trace_id="t-rev"), timeout=10, metadata=reader)
    assert got.record.needs_review and got.record.record_hash == first.record_hash  # never rewritten
    assert len(got.reviews) == 1
    # A new review after the event clears the flag; both reviews are kept.
    stub.RecordReview(pb.RecordReviewRequest(trace_id="t-rev", decision=pb.REVIEW_DECISION_NEEDS_CHANGE,
                                             rubric_note="edition B moved the rule"), timeout=10, metadata=reviewer)
    assert needing() == []
    reviews = stub.ListReviews(pb.ListReviewsRequest(trace_id="t-rev", page_size=1), timeout=10, metadata=reader)
    assert len(reviews.reviews) == 1 and reviews.next_page_token
    rest = stub.ListReviews(pb.ListReviewsRequest(trace_id="t-rev", page_token=reviews.next_page_token),
                            timeout=10, metadata=reader)
    assert [r.decision for r in list(reviews.reviews) + list(rest.reviews)] == [
        pb.REVIEW_DECISION_ACCEPTED, pb.REVIEW_DECISION_NEEDS_CHANGE]
    # A trace created after the version event is not affected by it.
    record(stub, md, make_record("t-later"))
    assert needing() == []
    assert stub.VerifyChain(pb.VerifyChainRequest(), timeout=10, metadata=reader).ok


def test_retention_redacts_query_text_as_recorded_event_and_chain_still_verifies(trace, metadata_for):
    _, stub, _ = trace
    md = service_metadata(TENANT)
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    old_record = make_record("t-old", created_at=now - dt.timedelta(days=40))
    record(stub, md, old_record)
    record(stub, md, make_record("t-new", created_at=now - dt.timedelta(days=1)))
    auditor = metadata_for(TENANT, ("auditor",))
    expect_error(lambda: stub.ApplyRetention(pb.ApplyRetentionRequest(retention_days=30), timeout=10,
                                             metadata=metadata_for(TENANT, ("reviewer",))),
                 grpc.StatusCode.PERMISSION_DENIED, "ROLE_REQUIRED")
    assert stub.ApplyRetention(pb.ApplyRetentionRequest(retention_days=30), timeout=10, metadata=auditor).redacted == 1
    assert stub.ApplyRetention(pb.ApplyRetentionRequest(retention_days=30), timeout=10, metadata=auditor).redacted == 0
    old = stub.GetTrace(pb.GetTraceRequest(trace_id="t-old"), timeout=10, metadata=auditor)
    assert old.record.query.redacted and old.record.query.raw == "" and old.record.query.normalized == ""
    assert [e.reason for e in old.redactions] == ["retention: query text older than 30 days"]
    # Evidence identities stay.
    assert old.record.parts[0].citations[0].passage_id == MRI_RULE.identity.passage_id
    new = stub.GetTrace(pb.GetTraceRequest(trace_id="t-new"), timeout=10, metadata=auditor)
    assert new.record.query.raw and not new.redactions
    report = stub.VerifyChain(pb.VerifyChainRequest(), timeout=10, metadata=auditor)
    assert report.ok and report.records_checked == 3  # two records and the redaction's link
    # A retried write of the redacted record is still recognised as the same record.
    assert not record(stub, md, old_record).created


def test_retention_uses_the_configured_period(auth, tmp_path, metadata_for):
    with trace_service(auth, tmp_path, retention_days=10) as (_, stub, _):
        now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        record(stub, service_metadata(TENANT), make_record("t-11d", created_at=now - dt.timedelta(days=11)))
        record(stub, service_metadata(TENANT), make_record("t-9d", created_at=now - dt.timedelta(days=9)))
        reply = stub.ApplyRetention(pb.ApplyRetentionRequest(), timeout=10, metadata=metadata_for(TENANT, ("auditor",)))
        assert reply.redacted == 1


def test_invalid_requests_name_the_field(sqlite_trace, metadata_for):
    _, stub, _ = sqlite_trace
    md = service_metadata(TENANT)
    expect_error(lambda: record(stub, md, pb.TraceRecord()), grpc.StatusCode.INVALID_ARGUMENT, "MISSING_TRACE_ID")
    expect_error(lambda: record(stub, md, pb.TraceRecord(trace_id="bad id with spaces")),
                 grpc.StatusCode.INVALID_ARGUMENT, "INVALID_TRACE_ID")
    long_doc = make_record("t-long")
    long_doc.parts[0].citations[0].document_id = "d" * 300
    expect_error(lambda: record(stub, md, long_doc), grpc.StatusCode.INVALID_ARGUMENT, "FIELD_TOO_LONG")
    # Nothing half-stored: the trace ID is still free.
    assert record(stub, md, make_record("t-long")).created
    expect_error(lambda: stub.RecordVersionEvent(pb.RecordVersionEventRequest(version_id="v1"), timeout=10,
                                                 metadata=service_metadata(TENANT, "retrieval")),
                 grpc.StatusCode.INVALID_ARGUMENT, "MISSING_KIND")
    expect_error(lambda: stub.ApplyRetention(pb.ApplyRetentionRequest(retention_days=-1), timeout=10,
                                             metadata=metadata_for(TENANT, ("auditor",))),
                 grpc.StatusCode.INVALID_ARGUMENT, "RETENTION_OUT_OF_RANGE")


def test_the_service_applies_the_configured_retention_on_its_own(auth, tmp_path, metadata_for):
    import time

    with trace_service(auth, tmp_path, retention_days=30, retention_interval_seconds=0.2) as (_, stub, _):
        now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        record(stub, service_metadata(TENANT), make_record("t-auto-old", created_at=now - dt.timedelta(days=31)))
        record(stub, service_metadata(OTHER_TENANT),
               make_record("t-auto-other", tenant=OTHER_TENANT, created_at=now - dt.timedelta(days=45)))
        record(stub, service_metadata(TENANT), make_record("t-auto-new", created_at=now))
        deadline = time.monotonic() + 10

        def get(trace_id, tenant=TENANT):
            return stub.GetTrace(pb.GetTraceRequest(trace_id=trace_id), timeout=10,
                                 metadata=metadata_for(tenant, ("auditor",)))

        while time.monotonic() < deadline and not (get("t-auto-other", OTHER_TENANT).redactions
                                                   and get("t-auto-old").redactions):
            time.sleep(0.1)
        old, other, new = get("t-auto-old"), get("t-auto-other", OTHER_TENANT), get("t-auto-new")
        assert old.record.query.redacted and other.record.query.redacted and not new.record.query.redacted
        assert old.redactions[0].reason == "retention: query text older than 30 days"
        assert stub.VerifyChain(pb.VerifyChainRequest(), timeout=10, metadata=metadata_for(TENANT, ("auditor",))).ok
