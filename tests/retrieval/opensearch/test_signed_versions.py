"""Issue 16 on the OpenSearch backend: the rebuild at start-up verifies every version, leaves the
failing ones out (also out of a kept generation) and reports them; a hit resolved from the store
is verified and a failing one never returned."""

from __future__ import annotations

import grpc
import pytest

from ..service.attacks import Attacker
from ..service.conftest import T2024, failure
from .test_service import os_service

pytestmark = pytest.mark.opensearch

TENANT = "os-sig"
GOOD = "Check in at the kiosk with your booking code before the appointment (synthetic good)."
EDITED = "Arrive 30 minutes before your appointment at the Harbor clinic (synthetic edited)."
FORGED = "Parking costs 5 USD per hour before your appointment (synthetic forged)."
STAFF = "Staff arrive 40 minutes before the appointment block (synthetic staff)."
QUERY = "before your appointment"


@pytest.mark.parametrize("rebuild_on_start", [True, False])
def test_rebuild_and_search_leave_out_what_fails_verification(auth, tmp_path, opensearch_url, prefix,
                                                              rebuild_on_start):
    with os_service(auth, tmp_path, opensearch_url, prefix) as svc:
        good = svc.ingest(TENANT, "good", GOOD, valid_from=T2024)
        edited = svc.ingest(TENANT, "edited", EDITED, valid_from=T2024)
        forged = svc.ingest(TENANT, "forged", FORGED, valid_from=T2024)
        staff = svc.ingest(TENANT, "staff", STAFF, valid_from=T2024, roles=("staff",))
        assert {h.passage.identity.document_id for h in svc.search(TENANT, QUERY, roles=("patient", "staff")).hits} \
            == {"good", "edited", "forged", "staff"}
        attacker = Attacker(svc.core.settings.resolved_database_url())
        attacker.edit_text(TENANT, edited.version.version_id, "30 minutes", "03 minutes", recompute_passage_digests=True)
        attacker.rewrite_version(TENANT, forged.version.version_id, "5 USD per hour", "99 USD per hr!")
        attacker.set_version(TENANT, staff.version.version_id, roles=["patient", "staff"])
        # Live, before any restart: OpenSearch hits are resolved from the store and verified.
        live = svc.search(TENANT, QUERY, roles=("patient", "staff"), k=10)
        assert {h.passage.identity.document_id for h in live.hits} == {"good"}
        attacker.close()
    with os_service(auth, tmp_path, opensearch_url, prefix, opensearch_rebuild_on_start=rebuild_on_start) as svc:
        assert {r.document_id: r.reason for r in svc.core.integrity.refused} == {
            "edited": "VERSION_DIGEST_MISMATCH", "forged": "VERSION_SIGNATURE_INVALID",
            "staff": "VERSION_SIGNATURE_INVALID"}
        for roles in (("patient",), ("patient", "staff")):
            hits = svc.search(TENANT, QUERY, roles=roles, k=10).hits
            assert [h.passage.identity.document_id for h in hits] == ["good"]
        # The refused versions are not even in the index, a kept generation included. (A kept
        # generation still holds the rewritten version's ORIGINAL passages: their rows are gone from
        # the store, so a hit on them resolves to nothing and is never returned, as searched above.)
        assert svc.core.backend.count() == (1 if rebuild_on_start else 2)
        assert failure(svc.get, TENANT, [edited.passages[0].passage_id]) == (
            grpc.StatusCode.DATA_LOSS, "VERSION_DIGEST_MISMATCH")
        assert svc.get(TENANT, [good.passages[0].passage_id]).passages[0].text == GOOD
