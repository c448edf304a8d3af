"""A PDF and an HTML source of the sample corpus answer questions end to end (six processes): the
citation carries the PDF page and its printed label through retrieval, orchestrator and validator,
the pinned link opens the page, and the trace keeps them."""

from __future__ import annotations

import pytest
from citetrace.common.v1 import common_pb2 as c
from citetrace.identity import page_locator

from .conftest import BOTH_BACKENDS

# Page labels and anchors come through retrieval: on both search backends.
pytestmark = [pytest.mark.slow, pytest.mark.parametrize("stack", BOTH_BACKENDS, indirect=True)]


def citations(response):
    return [cit for part in response.parts for claim in part.claims for cit in claim.citations]


def test_a_pdf_answer_cites_the_printed_page_and_the_viewer_page(stack):
    response = stack.ask("Can I wear deodorant to my mammogram at Harbor Imaging Center?")
    assert [p.outcome for p in response.parts] == [c.PART_OUTCOME_ANSWERED]
    # The lead claim answers the question from the PDF (later claims may qualify it from other sources).
    (cit,) = response.parts[0].claims[0].citations
    assert cit.document_id == "acme-harbor-handbook"
    assert (cit.page_start, cit.page_end, cit.page_label_start, cit.page_label_end) == (3, 3, "H-1", "H-1")
    assert cit.link.endswith(f"#page=3&chars={cit.start}-{cit.end}")
    assert page_locator(cit.page_start, cit.page_end, cit.page_label_start, cit.page_label_end) == \
        "p. H-1 (viewer page 3)"
    record = stack.get_trace(response.trace_id).record
    (stored,) = [x for x in record.parts[0].citations if x.passage_id == cit.passage_id]
    assert (stored.page_start, stored.page_label_start) == (3, "H-1")


def test_an_html_answer_comes_from_the_page_without_its_boilerplate(stack):
    response = stack.ask("How long does Northside Family Clinic keep lost phones?")
    assert [p.outcome for p in response.parts] == [c.PART_OUTCOME_ANSWERED]
    cited = citations(response)
    assert cited and {x.document_id for x in cited} == {"acme-northside-lost-property"}
    assert all(x.page_start == 0 and "#chars=" in x.link and "#page=" not in x.link for x in cited)
    assert "60 days" in " ".join(claim.text for claim in response.parts[0].claims)
