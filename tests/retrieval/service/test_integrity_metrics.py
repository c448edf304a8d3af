"""Metrics owed by retrieval (DESIGN §7): scope violations blocked. A request for an existing
passage outside the caller's scope answers NOT_FOUND exactly as for a passage that does not exist,
and is counted. (Digest and signature failures: test_signed_versions.py.)"""

from __future__ import annotations

import grpc
import pytest
import sqlalchemy as sa
from prometheus_client import REGISTRY

from .conftest import T2024, failure, running_service

TENANT, OTHER = "acme-health", "borealis-clinics"
TEXT = ("# MRI preparation\n\nArrive 30 minutes before an MRI at Harbor Imaging Center (synthetic).\n\n"
        "# Metal\n\nRemove jewellery and other metal before the scan (synthetic).\n")
STAFF_TEXT = "# Staff note\n\nStaff confirm MRI safety forms at the front desk (synthetic, staff only).\n"


def digest_failures() -> float:
    return REGISTRY.get_sample_value("citetrace_digest_failures_total",
                                     {"service": "retrieval", "kind": "version_text"}) or 0.0


def blocked() -> float:
    return REGISTRY.get_sample_value("citetrace_scope_violations_blocked_total", {"service": "retrieval"}) or 0.0


@pytest.fixture
def svc(auth, tmp_path):
    with running_service(auth, tmp_path) as client:
        yield client


def _engine(client):
    return sa.create_engine(client.core.settings.resolved_database_url())


def test_an_existing_passage_outside_the_callers_scope_is_not_found_and_counted(svc):
    public = svc.ingest(TENANT, "acme-mri-public", TEXT, valid_from=T2024).passages[0].passage_id
    staff = svc.ingest(TENANT, "acme-staff-note", STAFF_TEXT, roles=("staff",), valid_from=T2024)
    staff_pid = staff.passages[0].passage_id
    draft = svc.ingest(TENANT, "acme-draft", "# Draft\n\nA draft arrival rule (synthetic).\n", status="draft",
                       valid_from=T2024).passages[0].passage_id
    svc.ingest(OTHER, "bor-anything", "# Fjordview\n\nSynthetic Fjordview note.\n", valid_from=T2024)

    start = blocked()
    not_found = (grpc.StatusCode.NOT_FOUND, "PASSAGE_NOT_FOUND")
    assert failure(svc.get, OTHER, [public]) == not_found  # another tenant's passage
    assert blocked() == start + 1
    assert failure(svc.get, TENANT, [staff_pid], roles=("patient",)) == not_found  # audience
    assert blocked() == start + 2
    assert failure(svc.get, TENANT, [draft], roles=("patient",)) == not_found  # a draft
    assert blocked() == start + 3
    assert failure(svc.get, TENANT, ["f" * 64]) == not_found  # does not exist: same answer, not counted
    assert blocked() == start + 3
    version_not_found = (grpc.StatusCode.NOT_FOUND, "VERSION_NOT_FOUND")
    assert failure(svc.get, OTHER, spans=[(staff.version.version_id, 0, 5)]) == version_not_found
    assert failure(svc.get, TENANT, spans=[(staff.version.version_id, 0, 5)], roles=("patient",)) == \
        version_not_found
    assert blocked() == start + 5
    assert failure(svc.get, TENANT, spans=[("e" * 64, 0, 5)]) == version_not_found
    assert blocked() == start + 5
    # Readers in scope are served and nothing is counted.
    assert svc.get(TENANT, [staff_pid], roles=("staff",)).passages[0].text.startswith("Staff confirm")
    assert blocked() == start + 5
