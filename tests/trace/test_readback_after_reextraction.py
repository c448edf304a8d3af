"""An old trace still resolves after its PDF is extracted again by a new extractor (issue 19): the
same bytes, a new extraction whose text differs (a new version under the same source digest,
superseding the old); the trace record written before it keeps pointing at the old passage, and
GetTrace reads back exactly the old text, page and digest through retrieval. Real retrieval and
real trace services over gRPC, the same stores before and after."""

from __future__ import annotations

import hashlib

from citetrace.common.v1 import common_pb2 as c
from citetrace.kit.testing import service_metadata
from citetrace.trace.v1 import trace_service_pb2 as pb
from documents import fixtures
from documents.test_ingest_sources import TENANT, ReorderingPdfExtractor, service
from tracefixtures import make_record, trace_service

from services.retrieval.extract import Extractors
from services.retrieval.extract.html import HtmlExtractor
from services.retrieval.extract.markdown import MarkdownExtractor

QUESTION = "arrive 15 minutes before an MRI appointment"


def test_an_old_trace_resolves_to_the_old_extraction(auth, tmp_path, metadata_for):
    handbook = fixtures.handbook_pdf()
    with service(auth, tmp_path / "retrieval") as old_retrieval:
        old = old_retrieval.ingest("handbook", handbook, filename="handbook.pdf")
        cited = old_retrieval.search(QUESTION, k=1).hits[0].passage
    assert "[1] Measured from the appointment time" in cited.text and cited.identity.page_label_start == "A-1"
    record = make_record("t-reextracted", tenant=TENANT, retrieved=(cited,), cited=(cited,))
    with trace_service(auth, tmp_path / "trace") as (_, stub, _):
        stub.RecordTrace(pb.RecordTraceRequest(record=record), timeout=10, metadata=service_metadata(TENANT))

    newer = Extractors([ReorderingPdfExtractor(rules_revision=2), HtmlExtractor(), MarkdownExtractor()])
    with service(auth, tmp_path / "retrieval", extractors=newer) as new_retrieval:
        new = new_retrieval.ingest("handbook", handbook, filename="handbook.pdf")
        assert new.created and new.version.source_sha256 == old.version.source_sha256
        assert old.version.version_id in new.superseded_version_ids
        current = new_retrieval.search(QUESTION, k=1).hits[0].passage
        assert current.identity.version_id == new.version.version_id
        assert current.identity.passage_id != cited.identity.passage_id and current.text != cited.text

        with trace_service(auth, tmp_path / "trace", retrieval_target=new_retrieval.core_address) as (_, stub, _):
            reply = stub.GetTrace(pb.GetTraceRequest(trace_id="t-reextracted", view=pb.TRACE_VIEW_FULL), timeout=20,
                                  metadata=metadata_for(TENANT, ("auditor",)))
    assert (reply.passage_text.filled, reply.passage_text.digest_mismatch, reply.passage_text.not_visible) == (1, 0, 0)
    (hit,) = reply.record.parts[0].retrieval.retrieved
    assert hit.passage.text == cited.text
    assert hashlib.sha256(hit.passage.text.encode()).hexdigest() == cited.identity.content_sha256
    assert hit.passage.identity == cited.identity, "version, extraction version, span and pages as cited"
    (citation,) = reply.record.parts[0].citations
    assert (citation.passage_id, citation.version_id) == (cited.identity.passage_id, old.version.version_id)
    assert reply.record.parts[0].outcome == c.PART_OUTCOME_ANSWERED
