"""Issue 16: a database writer cannot make retrieval serve forged evidence.

Each attack edits the store of record behind a running service (its own connection, raw rows),
on SQLite and on PostgreSQL. Every read that would serve the edited version (GetPassages by ID, by
span, Search after a restart, ListVersions, SetVersionStatus) refuses it with DATA_LOSS and the
exact reason; the index rebuild at start-up leaves it out, counts it and reports it; and the store
walk behind `citetrace index verify` names it."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime

import grpc
import pytest
from prometheus_client import REGISTRY

from services.retrieval.core import verify_store

from .attacks import Attacker
from .conftest import T2024, failure, running_service

TENANT = "acme-health"
DATA_LOSS = grpc.StatusCode.DATA_LOSS
NOT_FOUND = (grpc.StatusCode.NOT_FOUND, "PASSAGE_NOT_FOUND")
ADMIN = ("policy_admin",)

DOCS = {
    "text-only": "# Arrival\n\nArrive 30 minutes before an MRI (synthetic text-only).\n\n"
                 "# Metal\n\nRemove jewellery before the scan (synthetic text-only).\n",
    "text-and-sha": "# Arrival\n\nArrive 45 minutes before a CT scan (synthetic text-and-sha).\n\n"
                    "# Forms\n\nBring the signed consent form (synthetic text-and-sha).\n",
    "rewritten": "# Parking\n\nParking costs 5 USD per hour at Harbor garage (synthetic rewritten).\n\n"
                 "# Validation\n\nThe front desk validates tickets (synthetic rewritten).\n",
    "audience": "# Staff note\n\nStaff confirm MRI safety forms at the front desk (synthetic audience).\n",
    "validity": "# Future rule\n\nFrom 2099 arrive 50 minutes early for fasting labs (synthetic validity).\n",
    "status": "# Retired rule\n\nArrive 90 minutes early for cardiology (synthetic status, retired).\n",
    "heading": "# Interpreters\n\nAsk for an interpreter when booking (synthetic heading).\n",
    "unsigned": "# Wheelchairs\n\nWheelchairs wait at the main entrance (synthetic unsigned).\n",
    "control": "# Control\n\nCheck in at the kiosk with your booking code (synthetic control).\n",
}


def counter(name: str, **labels) -> float:
    return REGISTRY.get_sample_value(name, {"service": "retrieval", **labels}) or 0.0


def integrity_counters() -> dict[str, float]:
    return {
        "signature": counter("citetrace_signature_failures_total", kind="version"),
        **{kind: counter("citetrace_digest_failures_total", kind=kind)
           for kind in ("version_text", "passage_span", "passage_identity")},
    }


def delta(before: dict[str, float]) -> dict[str, float]:
    return {k: v - before[k] for k, v in integrity_counters().items() if v != before[k]}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_overrides(request, tmp_path):
    if request.param == "sqlite":
        return {}
    return {"database_url": request.getfixturevalue("postgres_url")}


def _ingest_world(svc) -> dict:
    out = {}
    for name, text in DOCS.items():
        kwargs = {"valid_from": T2024}
        if name == "audience":
            kwargs["roles"] = ("staff",)
        if name == "validity":
            kwargs["valid_from"] = datetime(2099, 1, 1, tzinfo=UTC)
        out[name] = svc.ingest(TENANT, f"acme-{name}", text, **kwargs)
    svc.set_status(TENANT, out["status"].version.version_id, "retired")
    return out


def _attack(attacker: Attacker, world: dict) -> dict[str, str]:
    """Applies every attack; returns the forged version ID of the thorough rewrite."""
    vid = {name: reply.version.version_id for name, reply in world.items()}
    attacker.edit_text(TENANT, vid["text-only"], "30 minutes", "03 minutes", recompute_passage_digests=False)
    attacker.edit_text(TENANT, vid["text-and-sha"], "45 minutes", "04 minutes", recompute_passage_digests=True)
    forged = attacker.rewrite_version(TENANT, vid["rewritten"], "5 USD per hour", "99 USD per hr!")
    attacker.set_version(TENANT, vid["audience"], roles=["patient", "staff"])
    attacker.set_version(TENANT, vid["validity"], valid_from=T2024)
    attacker.set_version(TENANT, vid["status"], status="approved")
    attacker.set_passage(world["heading"].passages[0].passage_id, heading_context="Interpreters cost 200 USD")
    attacker.strip_signature(TENANT, vid["unsigned"])
    return {"rewritten": forged}


# What the walk over the store (rebuild, `index verify`) reports for each attacked version.
EXPECTED_REFUSALS = {
    "text-only": "VERSION_DIGEST_MISMATCH",
    "text-and-sha": "VERSION_DIGEST_MISMATCH",
    "rewritten": "VERSION_SIGNATURE_INVALID",
    "audience": "VERSION_SIGNATURE_INVALID",
    "validity": "VERSION_SIGNATURE_INVALID",
    "status": "VERSION_SIGNATURE_INVALID",
    "heading": "PASSAGE_SET_MISMATCH",
    "unsigned": "VERSION_SIGNATURE_MISSING",
}


def test_every_attack_on_the_store_is_refused_at_every_read_and_at_the_rebuild(auth, tmp_path, store_overrides):
    with running_service(auth, tmp_path, **store_overrides) as svc:
        world = _ingest_world(svc)
        vid = {name: reply.version.version_id for name, reply in world.items()}
        url = svc.core.settings.resolved_database_url()
        attacker = Attacker(url)
        forged = _attack(attacker, world)
        before = integrity_counters()

        # GetPassages by ID: the passage's own span first, then its version's text, signature first of all.
        text_only = world["text-only"].passages
        assert failure(svc.get, TENANT, [text_only[0].passage_id]) == (DATA_LOSS, "PASSAGE_DIGEST_MISMATCH")
        assert failure(svc.get, TENANT, [text_only[1].passage_id]) == (DATA_LOSS, "VERSION_DIGEST_MISMATCH")
        assert failure(svc.get, TENANT, spans=[(vid["text-only"], text_only[1].start, text_only[1].end)]) == (
            DATA_LOSS, "VERSION_DIGEST_MISMATCH")
        # Recomputed passage digests: the version's text no longer derives its version ID.
        assert failure(svc.get, TENANT, [world["text-and-sha"].passages[0].passage_id]) == (
            DATA_LOSS, "VERSION_DIGEST_MISMATCH")
        # Every sha256 recomputed (version ID, passage IDs, passage digests): the signature fails.
        forged_ids = attacker.passage_ids(TENANT, forged["rewritten"])
        assert failure(svc.get, TENANT, forged_ids[:1]) == (DATA_LOSS, "VERSION_SIGNATURE_INVALID")
        assert failure(svc.get, TENANT, spans=[(forged["rewritten"], 0, 10)]) == (DATA_LOSS, "VERSION_SIGNATURE_INVALID")
        assert failure(svc.get, TENANT, [world["rewritten"].passages[0].passage_id]) == NOT_FOUND
        # Metadata: audience widened (a patient never sees the staff note), validity, status.
        assert failure(svc.get, TENANT, [world["audience"].passages[0].passage_id], roles=("patient",)) == (
            DATA_LOSS, "VERSION_SIGNATURE_INVALID")
        for name in ("validity", "status"):
            assert failure(svc.get, TENANT, [world[name].passages[0].passage_id], roles=ADMIN) == (
                DATA_LOSS, "VERSION_SIGNATURE_INVALID"), name
        assert failure(svc.get, TENANT, [world["heading"].passages[0].passage_id]) == (DATA_LOSS, "PASSAGE_SET_MISMATCH")
        assert failure(svc.get, TENANT, [world["unsigned"].passages[0].passage_id]) == (
            DATA_LOSS, "VERSION_SIGNATURE_MISSING")
        # Listing shows signed metadata only; a forged lifecycle change is not signed over.
        assert failure(svc.versions, TENANT, document_id="acme-status") == (DATA_LOSS, "VERSION_SIGNATURE_INVALID")
        assert failure(svc.set_status, TENANT, vid["status"], "retired") == (DATA_LOSS, "VERSION_SIGNATURE_INVALID")
        # The untouched document is served as before.
        assert "kiosk" in svc.get(TENANT, [world["control"].passages[0].passage_id]).passages[0].text
        assert delta(before) == {"signature": 8, "version_text": 3, "passage_span": 1, "passage_identity": 1}

    # A restart rebuilds the index from the store: every attacked version is left out and reported.
    before = integrity_counters()
    with running_service(auth, tmp_path, **store_overrides) as svc:
        refused = {r.version_id: r.reason for r in svc.core.integrity.refused}
        expected = {vid[name]: reason for name, reason in EXPECTED_REFUSALS.items() if name != "rewritten"}
        expected[forged["rewritten"]] = EXPECTED_REFUSALS["rewritten"]
        assert refused == expected
        assert svc.core.integrity.versions_checked == len(DOCS)
        assert delta(before) == {"signature": 5, "version_text": 2, "passage_identity": 1}
        served = set()
        for query in ("arrive minutes before", "parking USD per hour", "staff safety forms", "interpreter",
                      "wheelchairs entrance", "cardiology early", "kiosk booking code", "fasting labs"):
            for roles in (("patient",), ("patient", "staff")):
                for hit in svc.search(TENANT, query, roles=roles, k=20).hits:
                    served.add(hit.passage.identity.document_id)
                    assert "03 minutes" not in hit.passage.text and "99 USD" not in hit.passage.text
                    assert "200 USD" not in hit.passage.heading_context
        assert served == {"acme-control"}
        # Reads after the restart refuse exactly as before.
        assert failure(svc.get, TENANT, forged_ids[:1]) == (DATA_LOSS, "VERSION_SIGNATURE_INVALID")

        report = verify_store(svc.core.store)
        assert {r.version_id: r.reason for r in report.refused} == expected
        assert report.versions_checked == len(DOCS) and not report.ok
    attacker.close()


def test_index_verify_command_names_each_refused_version(auth, tmp_path, store_overrides):
    with running_service(auth, tmp_path, **store_overrides) as svc:
        doc = svc.ingest(TENANT, "acme-cli", DOCS["rewritten"], valid_from=T2024)
        svc.ingest(TENANT, "acme-cli-ok", DOCS["control"], valid_from=T2024)
        url = svc.core.settings.resolved_database_url()
    cmd = [sys.executable, "-m", "apps.cli.main", "index", "verify", "--data-dir", str(tmp_path),
           "--database-url", url]
    clean = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert clean.returncode == 0, clean.stderr
    assert "2 versions, 3 passages checked" in clean.stdout and ": ok" in clean.stdout
    attacker = Attacker(url)
    attacker.set_version(TENANT, doc.version.version_id, roles=["patient", "staff", "auditor"])
    attacker.close()
    broken = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert broken.returncode == 1
    assert f"REFUSED {TENANT} acme-cli {doc.version.version_id} VERSION_SIGNATURE_INVALID" in broken.stdout
    assert "1 version(s) refused" in broken.stdout


def test_a_forged_version_is_never_re_signed_by_a_supersession(auth, tmp_path):
    """Approving a newer version closes the older one's window and re-signs it, but only when the
    older one verifies: a forged older version is left as it is (still refused)."""
    with running_service(auth, tmp_path) as svc:
        old = svc.ingest(TENANT, "acme-superseded", DOCS["text-only"], valid_from=T2024)
        attacker = Attacker(svc.core.settings.resolved_database_url())
        attacker.set_version(TENANT, old.version.version_id, roles=["patient", "staff", "auditor"])
        new = svc.ingest(TENANT, "acme-superseded", DOCS["text-and-sha"], valid_from=datetime(2025, 1, 1, tzinfo=UTC))
        assert list(new.superseded_version_ids) == []
        assert failure(svc.get, TENANT, [old.passages[0].passage_id], roles=ADMIN) == (
            DATA_LOSS, "VERSION_SIGNATURE_INVALID")
        assert svc.get(TENANT, [new.passages[0].passage_id]).passages[0].text.startswith("Arrive 45")
        attacker.close()


def test_a_version_stored_before_signing_is_adopted_by_re_ingesting_it(auth, tmp_path):
    with running_service(auth, tmp_path) as svc:
        doc = svc.ingest(TENANT, "acme-legacy", DOCS["unsigned"], valid_from=T2024)
        attacker = Attacker(svc.core.settings.resolved_database_url())
        attacker.strip_signature(TENANT, doc.version.version_id)  # what migration 0003 leaves on old rows
        pid = doc.passages[0].passage_id
        assert failure(svc.get, TENANT, [pid]) == (DATA_LOSS, "VERSION_SIGNATURE_MISSING")
        again = svc.ingest(TENANT, "acme-legacy", DOCS["unsigned"], valid_from=T2024)
        assert not again.created
        assert svc.get(TENANT, [pid]).passages[0].text.startswith("Wheelchairs")
        # An unsigned row whose text was also changed is not adopted.
        other = svc.ingest(TENANT, "acme-legacy-2", DOCS["heading"], valid_from=T2024)
        attacker.strip_signature(TENANT, other.version.version_id)
        attacker.edit_text(TENANT, other.version.version_id, "interpreter", "INTERPRETER",
                           recompute_passage_digests=True)
        assert failure(svc.ingest, TENANT, "acme-legacy-2", DOCS["heading"], valid_from=T2024) == (
            DATA_LOSS, "VERSION_DIGEST_MISMATCH")
        attacker.close()


def _key_ids(svc) -> dict[str, str]:
    bundles = svc.core.store.version_bundles(TENANT, [v.version_id for v in svc.versions(TENANT).versions])
    return {b.version.document_id: b.version.seal.key_id for b in bundles.values()}


def test_key_rotation_several_public_keys_verify_one_private_key_signs(auth, tmp_path):
    from citetrace.signing import generate_key_files, public_file_of

    key_a, key_b = tmp_path / "keys" / "a.pem", tmp_path / "keys" / "b.pem"
    id_a, id_b = generate_key_files(key_a), generate_key_files(key_b)
    data = tmp_path / "data"
    with running_service(auth, data, signing_key_file=key_a, signing_key_create=False) as svc:
        one = svc.ingest(TENANT, "acme-one", DOCS["control"], valid_from=T2024).passages[0].passage_id
    # Rotation: B signs, A's public half still verifies.
    with running_service(auth, data, signing_key_file=key_b, signing_key_create=False,
                         verify_key_files=(str(public_file_of(key_a)),)) as svc:
        assert not svc.core.integrity.refused
        assert svc.get(TENANT, [one]).passages[0].text.startswith("Check in")
        two = svc.ingest(TENANT, "acme-two", DOCS["heading"], valid_from=T2024).passages[0].passage_id
        assert _key_ids(svc) == {"acme-one": id_a, "acme-two": id_b}
    # A dropped too early: what A signed is refused (and named), what B signed is served.
    with running_service(auth, data, signing_key_file=key_b, signing_key_create=False) as svc:
        assert [(r.document_id, r.reason) for r in svc.core.integrity.refused] == [
            ("acme-one", "VERSION_SIGNATURE_UNKNOWN_KEY")]
        assert failure(svc.get, TENANT, [one]) == (DATA_LOSS, "VERSION_SIGNATURE_UNKNOWN_KEY")
        assert svc.get(TENANT, [two]).passages[0].text.startswith("Ask for")
    # `citetrace index resign` with A still verifying re-signs A's versions with B ...
    env = {"CITETRACE_RETRIEVAL_SIGNING_KEY_FILE": str(key_b),
           "CITETRACE_RETRIEVAL_VERIFY_KEY_FILES": str(public_file_of(key_a))}
    resign = subprocess.run([sys.executable, "-m", "apps.cli.main", "index", "resign", "--data-dir", str(data)],
                            capture_output=True, text=True, timeout=120, env={**_base_env(), **env})
    assert resign.returncode == 0, resign.stderr
    assert f"signed with {id_b}: 1 re-signed, 0 adopted, 0 refused" in resign.stdout
    # ... after which A can go.
    with running_service(auth, data, signing_key_file=key_b, signing_key_create=False) as svc:
        assert not svc.core.integrity.refused
        assert _key_ids(svc) == {"acme-one": id_b, "acme-two": id_b}
        assert svc.get(TENANT, [one]).passages[0].text.startswith("Check in")


def _base_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("CITETRACE_RETRIEVAL_")}


def test_a_missing_signing_key_is_never_silently_replaced(auth, tmp_path):
    from citetrace.signing import KeyFileError

    from services.retrieval.core import build_sealer
    from services.retrieval.settings import Settings

    with running_service(auth, tmp_path) as svc:
        svc.ingest(TENANT, "acme-one", DOCS["control"], valid_from=T2024)
        store = svc.core.store
        key = svc.core.settings.resolved_signing_key()
        key.rename(key.with_suffix(".moved"))
        with pytest.raises(KeyFileError, match="holds versions signed by ed25519:"):
            build_sealer(Settings(data_dir=tmp_path), store)
        with pytest.raises(KeyFileError, match="does not exist; generate one"):
            build_sealer(Settings(data_dir=tmp_path, signing_key_create=False), store)
        assert not key.exists()
        # Verification alone works from the public half.
        assert build_sealer(Settings(data_dir=tmp_path), store, sign=False).signer is None
