"""Versioning and lifecycle: new versions, supersession, draft -> approved -> retired."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import grpc
import pytest
from citetrace.common.v1 import common_pb2

from .conftest import T2024, T2025, failure

QUERY = "when should I arrive before my appointment"


@pytest.fixture
def tenant(request) -> str:
    """A tenant of its own per test: vector search always finds something of the tenant."""
    return "t-" + re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())[:60]


def hit_versions(reply) -> list[str]:
    return [h.passage.identity.version_id for h in reply.hits]


def test_changed_text_creates_a_new_version_and_supersedes_the_old(svc, tenant):
    old = svc.ingest(tenant, "arrival", "Arrive 10 minutes before your appointment.", valid_from=T2024)
    new = svc.ingest(tenant, "arrival", "Arrive 15 minutes before your appointment.", valid_from=T2025)
    assert new.created and new.version.version_id != old.version.version_id
    assert list(new.superseded_version_ids) == [old.version.version_id]
    listed = {v.version_id: v for v in svc.versions(tenant, document_id="arrival").versions}
    before = listed[old.version.version_id]
    # The old version keeps its text, status and start; its window closes where the new one starts.
    assert before.status == common_pb2.VERSION_STATUS_APPROVED
    assert before.valid_to.ToDatetime(tzinfo=UTC) == T2025
    assert before.superseded_by_version_id == new.version.version_id
    # Now: only the new version is eligible. In 2024: only the old one.
    assert hit_versions(svc.search(tenant, QUERY)) == [new.version.version_id]
    in_2024 = svc.search(tenant, QUERY, as_of=datetime(2024, 6, 1, tzinfo=UTC))
    assert hit_versions(in_2024) == [old.version.version_id]
    # The old version stays readable for audit.
    text = svc.get(tenant, passage_ids=[old.passages[0].passage_id]).passages[0].text
    assert text == "Arrive 10 minutes before your appointment."


def test_a_new_version_with_the_same_start_empties_the_old_window(svc, tenant):
    old = svc.ingest(tenant, "same-start", "Bring a photo ID to every visit.", valid_from=T2025)
    new = svc.ingest(tenant, "same-start", "Bring a photo ID and your insurance card.", valid_from=T2025)
    assert list(new.superseded_version_ids) == [old.version.version_id]
    hits = svc.search(tenant, "photo ID", as_of=T2025 + timedelta(days=1))
    assert hit_versions(hits) == [new.version.version_id]


def test_a_retired_import_does_not_supersede_anything(svc, tenant):
    current = svc.ingest(tenant, "import", "Cancel 24 hours ahead.", valid_from=T2025)
    retired = svc.ingest(tenant, "import", "Cancel 48 hours ahead.", valid_from=T2024, valid_to=T2025,
                         status="retired")
    assert list(retired.superseded_version_ids) == []
    assert retired.version.status == common_pb2.VERSION_STATUS_RETIRED
    listed = {v.version_id: v for v in svc.versions(tenant, document_id="import").versions}
    assert not listed[current.version.version_id].HasField("valid_to")
    # Retired is never eligible, not even inside its own window.
    hits = svc.search(tenant, "cancel hours ahead", as_of=datetime(2024, 6, 1, tzinfo=UTC))
    assert retired.version.version_id not in hit_versions(hits)


def test_draft_is_invisible_until_approved_then_retired_disappears(svc, tenant):
    draft = svc.ingest(tenant, "video", "Join the video visit 5 minutes early.", status="draft")
    assert hit_versions(svc.search(tenant, "video visit")) == []
    approved = svc.set_status(tenant, draft.version.version_id, "approved")
    assert approved.version.status == common_pb2.VERSION_STATUS_APPROVED
    assert hit_versions(svc.search(tenant, "video visit")) == [draft.version.version_id]
    retired = svc.set_status(tenant, draft.version.version_id, "retired")
    assert retired.version.status == common_pb2.VERSION_STATUS_RETIRED
    assert hit_versions(svc.search(tenant, "video visit")) == []
    # Retired stays readable (audit), with its status for the validator's STALE_VERSION check.
    got = svc.get(tenant, passage_ids=[draft.passages[0].passage_id])
    assert got.versions[0].status == common_pb2.VERSION_STATUS_RETIRED


def test_approving_a_draft_supersedes_the_current_approved_version(svc, tenant):
    old = svc.ingest(tenant, "approve-later", "Arrive 12 minutes early.", valid_from=T2024)
    draft = svc.ingest(tenant, "approve-later", "Arrive 18 minutes early.", valid_from=T2025, status="draft")
    assert list(draft.superseded_version_ids) == []
    svc.set_status(tenant, draft.version.version_id, "approved")
    listed = {v.version_id: v for v in svc.versions(tenant, document_id="approve-later").versions}
    assert listed[old.version.version_id].superseded_by_version_id == draft.version.version_id
    assert hit_versions(svc.search(tenant, "arrive minutes early")) == [draft.version.version_id]


@pytest.mark.parametrize(("start", "target"), [("approved", "draft"), ("retired", "approved"),
                                              ("retired", "draft"), ("draft", "retired")])
def test_illegal_transitions_are_failed_precondition(svc, tenant, start, target):
    reply = svc.ingest(tenant, f"illegal-{start}-{target}", f"Rule text for {start} to {target}.",
                       status=start, valid_to=T2025 + timedelta(days=30) if start == "retired" else None)
    code, reason = failure(svc.set_status, tenant, reply.version.version_id, target)
    assert (code, reason) == (grpc.StatusCode.FAILED_PRECONDITION, "ILLEGAL_STATUS_TRANSITION")
    listed = svc.versions(tenant, document_id=f"illegal-{start}-{target}").versions
    assert listed[0].status == {"draft": 1, "approved": 2, "retired": 3}[start]


def test_setting_the_same_status_again_is_a_no_op(svc, tenant):
    reply = svc.ingest(tenant, "noop", "Arrive on time.")
    again = svc.set_status(tenant, reply.version.version_id, "approved")
    assert again.version.status == common_pb2.VERSION_STATUS_APPROVED


def test_status_changes_need_policy_admin_and_the_callers_tenant(svc, tenant):
    reply = svc.ingest(tenant, "guarded", "Only admins may retire this.")
    code, reason = failure(svc.set_status, tenant, reply.version.version_id, "retired", roles=("staff",))
    assert (code, reason) == (grpc.StatusCode.PERMISSION_DENIED, "POLICY_ADMIN_REQUIRED")
    code, reason = failure(svc.set_status, "t-other", reply.version.version_id, "retired")
    assert (code, reason) == (grpc.StatusCode.NOT_FOUND, "VERSION_NOT_FOUND")
    code, reason = failure(svc.set_status, tenant, "0" * 64, "retired")
    assert (code, reason) == (grpc.StatusCode.NOT_FOUND, "VERSION_NOT_FOUND")


def test_list_versions_pages_newest_first(fresh):
    ids = [fresh.ingest("t-page", f"doc-{i}", f"Rule number {i}.").version.version_id for i in range(5)]
    seen, token = [], ""
    while True:
        page = fresh.versions("t-page", page_size=2, page_token=token)
        assert len(page.versions) <= 2
        seen.extend(v.version_id for v in page.versions)
        token = page.next_page_token
        if not token:
            break
    assert seen == list(reversed(ids))
    code, reason = failure(fresh.versions, "t-page", page_token="not-a-token")
    assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_PAGE_TOKEN")
    # A patient does not list drafts or staff-only versions.
    fresh.ingest("t-page", "staff-only", "Staff rule.", roles=("staff",))
    fresh.ingest("t-page", "a-draft", "Draft rule.", status="draft")
    patient_view = fresh.versions("t-page", roles=("patient",), page_size=50).versions
    assert len(patient_view) == 5


def test_the_index_is_rebuilt_from_the_store_at_warm_up(auth, tmp_path):
    from .conftest import running_service

    with running_service(auth, tmp_path) as first:
        old = first.ingest("t-rebuild", "arrival", "Arrive 10 minutes early.", valid_from=T2024)
        new = first.ingest("t-rebuild", "arrival", "Arrive 20 minutes early.", valid_from=T2025)
        retired = first.ingest("t-rebuild", "video", "Join the video visit early.")
        first.set_status("t-rebuild", retired.version.version_id, "retired")
        before = first.search("t-rebuild", "arrive early video", k=10)
        generation = before.settings.index_generation
    with running_service(auth, tmp_path) as second:
        after = second.search("t-rebuild", "arrive early video", k=10)
        assert [h.passage.identity.passage_id for h in after.hits] == \
               [h.passage.identity.passage_id for h in before.hits]
        assert hit_versions(after) == [new.version.version_id]
        assert after.settings.index_generation == generation
        past = second.search("t-rebuild", "arrive early", as_of=datetime(2024, 3, 1, tzinfo=UTC))
        assert hit_versions(past) == [old.version.version_id]


@pytest.mark.parametrize("order", ["old-first", "new-first"])
def test_supersession_does_not_depend_on_ingestion_order(svc, tenant, order):
    texts = {T2024: "Arrive 11 minutes before your appointment.", T2025: "Arrive 22 minutes before your appointment."}
    starts = [T2024, T2025] if order == "old-first" else [T2025, T2024]
    replies = {start: svc.ingest(tenant, "ordered", texts[start], valid_from=start) for start in starts}
    listed = {v.version_id: v for v in svc.versions(tenant, document_id="ordered").versions}
    old, new = listed[replies[T2024].version.version_id], listed[replies[T2025].version.version_id]
    assert old.valid_to.ToDatetime(tzinfo=UTC) == T2025 and old.superseded_by_version_id == new.version_id
    assert not new.HasField("valid_to")
    assert hit_versions(svc.search(tenant, QUERY)) == [new.version_id]
    assert hit_versions(svc.search(tenant, QUERY, as_of=datetime(2024, 6, 1, tzinfo=UTC))) == [old.version_id]


def test_approving_an_older_draft_behind_a_newer_version_closes_the_drafts_window(svc, tenant):
    newer = svc.ingest(tenant, "late-approval", "Arrive 25 minutes early.", valid_from=T2025)
    older = svc.ingest(tenant, "late-approval", "Arrive 5 minutes early.", valid_from=T2024, status="draft")
    approved = svc.set_status(tenant, older.version.version_id, "approved").version
    assert approved.valid_to.ToDatetime(tzinfo=UTC) == T2025
    assert approved.superseded_by_version_id == newer.version.version_id
    assert hit_versions(svc.search(tenant, "arrive minutes early")) == [newer.version.version_id]
    past = svc.search(tenant, "arrive minutes early", as_of=datetime(2024, 6, 1, tzinfo=UTC))
    assert hit_versions(past) == [older.version.version_id]
