"""Page locators end to end between real services: retrieval stores them, the validator checks a
citation's page and printed label against the store (LOCATOR_MISMATCH), the citation carries them
and its pinned link opens the page; a passage awaiting review is no evidence."""

from __future__ import annotations

import grpc
import pytest
from citetrace.citation_validator.v1 import citation_validator_service_pb2 as cv_pb
from citetrace.citation_validator.v1 import citation_validator_service_pb2_grpc as cv_grpc
from citetrace.common.v1 import common_pb2
from citetrace.identity import page_locator
from citetrace.kit.testing import serving

from services.citation_validator.bootstrap import build_spec as build_validator
from services.citation_validator.settings import Settings as ValidatorSettings

from . import fixtures
from .test_ingest_sources import service

CLAIM = "Except for emergencies, patients must arrive 15 minutes before an MRI appointment."


@pytest.fixture(scope="module")
def stack(auth, tmp_path_factory, handbook_pdf):
    with service(auth, tmp_path_factory.mktemp("locators")) as retrieval:
        retrieval.ingest("handbook", handbook_pdf, filename="handbook.pdf")
        notes = retrieval.ingest("notes", fixtures.notes_and_tables_pdf(), filename="notes.pdf")
        fees = retrieval.ingest("fees", fixtures.long_table_pdf(), filename="fees.pdf")
        settings = ValidatorSettings(port=0, metrics_port=-1, retrieval_target=retrieval.core_address)
        with serving(build_validator(settings), auth) as runner, grpc.insecure_channel(runner.address) as channel:
            yield retrieval, cv_grpc.CitationValidatorServiceStub(channel), notes, fees


def validate(stack, passage: common_pb2.Passage, text: str = CLAIM, claim_type=common_pb2.CLAIM_TYPE_ARRIVAL_RULE,
             intent=common_pb2.INTENT_ARRIVAL_PREPARATION):
    retrieval, validator = stack[0], stack[1]
    offered = common_pb2.LabelledPassage(label="S1")
    offered.passage.CopyFrom(passage)
    request = cv_pb.ValidateRequest(
        claims=[common_pb2.Claim(claim_id="c1", text=text, evidence_labels=["S1"], claim_type=claim_type)],
        offered=[offered], intent=intent)
    return validator.Validate(request, timeout=20, metadata=retrieval.md(("patient",)))


def reasons(response) -> set[str]:
    return {common_pb2.FailureReason.Name(f.reason).removeprefix("FAILURE_REASON_")
            for c in response.claims for f in c.findings}


def arrival(stack) -> common_pb2.Passage:
    return stack[0].search("arrive 15 minutes before an MRI appointment", k=1).hits[0].passage


def test_a_citation_carries_the_page_and_its_link_opens_it(stack):
    passage = arrival(stack)
    response = validate(stack, passage)
    assert response.passed, response
    citation = response.claims[0].citations[0]
    ident = passage.identity
    assert (citation.page_start, citation.page_end, citation.page_label_start, citation.page_label_end) == \
        (4, 4, "A-1", "A-1")
    assert citation.link.endswith(f"/versions/{ident.version_id}#page=4&chars={ident.start}-{ident.end}")
    assert page_locator(citation.page_start, citation.page_end, citation.page_label_start,
                        citation.page_label_end) == "p. A-1 (viewer page 4)"


@pytest.mark.parametrize("field, value", [("page_label_start", "A-2"), ("page_label_end", "3"),
                                          ("page_start", 9), ("page_end", 5)])
def test_the_same_text_on_another_page_is_a_locator_mismatch(stack, field, value):
    passage = common_pb2.Passage()
    passage.CopyFrom(arrival(stack))
    setattr(passage.identity, field, value)  # text, digest and span kept: only the page changes
    response = validate(stack, passage)
    assert not response.passed and reasons(response) == {"LOCATOR_MISMATCH"}
    assert response.claims[0].withheld and not response.claims[0].citations
    message = response.claims[0].findings[0].message
    assert "viewer pages 4-4" in message and "'A-1'" in message


def test_a_passage_awaiting_review_is_not_evidence(stack):
    retrieval, _, notes, _ = stack
    pending = retrieval.get(notes.extraction.passages_needing_review).passages[0]
    response = validate(stack, pending, text="An orphan remark applies.")
    assert "PASSAGE_NEEDS_REVIEW" in reasons(response) and response.claims[0].withheld


def test_a_table_row_cited_from_the_second_page_carries_its_header(stack):
    """The row is on viewer page 2 (F-2), in a passage that begins after the table's first page, so
    the header row is not in its text: it travels in the passage's context, and the citation of the
    row passes the validator with the page of the row."""
    retrieval, _, _, fees = stack
    row = "| Service 60 | 600 USD | 84 hours |"
    (passage,) = [p for p in retrieval.get([p.passage_id for p in fees.passages]).passages if row in p.text]
    ident = passage.identity
    offset = ident.start + passage.text.index(row)
    (page_of_row,) = [p for p in fees.extraction.pages if p.start <= offset < p.end]
    assert (page_of_row.viewer_page, page_of_row.page_label, page_of_row.verified) == (2, "F-2", True)
    assert ident.page_start == 2 and (ident.page_label_start, ident.page_label_end) == ("F-2", f"F-{ident.page_end}")
    assert "| Service | Fee | Notice |" not in passage.text, "the header repeated on page 2 is not copied in"
    assert "table header: | Service | Fee | Notice |" in passage.heading_context
    response = validate(stack, passage, text="The fee for Service 60 is 600 USD.",
                        claim_type=common_pb2.CLAIM_TYPE_CANCELLATION_TERM,
                        intent=common_pb2.INTENT_CANCELLATION_RESCHEDULING)
    assert response.passed, response
    citation = response.claims[0].citations[0]
    assert (citation.page_start, citation.page_label_start) == (2, "F-2")
    assert citation.link.endswith(f"#page=2&chars={ident.start}-{ident.end}")
