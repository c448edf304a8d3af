"""Stored text changed behind retrieval's back: retrieval refuses to serve it (DATA_LOSS) and the
validator reports the cited span as SPAN_DIGEST_MISMATCH, never a pass and never 'unavailable'."""

from __future__ import annotations

import hashlib

import sqlalchemy as sa
from citetrace.citation_validator.v1 import citation_validator_service_pb2 as cv_pb
from citetrace.common.v1 import common_pb2

from .conftest import ACME, World, claim, reasons, retrieval_service, validator_service

TEXT = "# Arrival\n\nPlease arrive 15 minutes before your appointment time (synthetic).\n"
RULE = "Please arrive 15 minutes before your appointment time (synthetic)."


def test_text_corrupted_in_the_store_of_record_is_a_span_digest_mismatch(auth, tmp_path):
    with retrieval_service(auth, tmp_path) as (runner, stub):
        world = World(auth, stub, runner.address, {})
        reply = world.ingest("corrupted-arrival", TEXT)
        passage_id = reply.passages[0].passage_id
        world.passages["corrupted-arrival"] = world.load(passage_id)
        offered = world.offered("corrupted-arrival")
        request = cv_pb.ValidateRequest(claims=[claim("c1", RULE, "S1")], offered=offered,
                                        intent=common_pb2.INTENT_ARRIVAL_PREPARATION)
        with validator_service(auth, runner.address) as validator:
            before = validator.Validate(request, timeout=15, metadata=world.md(ACME))
            assert reasons(before.claims[0]) == [] and before.passed

            url = runner.spec.servicer.core.settings.resolved_database_url()
            engine = sa.create_engine(url)
            with engine.begin() as conn:
                conn.execute(sa.text("UPDATE ret_passages SET content_sha256 = :d WHERE passage_id = :p"),
                             {"d": hashlib.sha256(b"tampered").hexdigest(), "p": passage_id})
            engine.dispose()

            after = validator.Validate(request, timeout=15, metadata=world.md(ACME))
    assert reasons(after.claims[0]) == ["SPAN_DIGEST_MISMATCH"]
    assert after.claims[0].withheld and not after.passed
