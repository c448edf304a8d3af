"""The rerank stage and the relevance of every hit (issue 15), through the real Search RPC: the span,
the settings in SearchResponse, labels following the reranked order, the remote /rerank endpoint in
both the TEI and the Cohere shapes (a real local HTTP server stands in for the model server), and
the fused order kept when that endpoint fails."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from citetrace.kit.telemetry import add_span_processor, setup_tracing
from citetrace.retrieval.v1 import retrieval_service_pb2 as pb
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from services.retrieval.rerank import RemoteRerank, reorder

from .conftest import running_service

DOCS = {  # synthetic
    "rr-walkin": "# Walk-ins\n\nWalk-in visits are not possible; every visit needs an appointment booked in advance.\n",
    "rr-arrival": "# Arrival\n\nPlease arrive 15 minutes before your appointment for check-in.\n",
    "rr-parking": "# Parking\n\nParking is free in the garage for the first two hours of your appointment.\n",
}


def _ingest(client, tenant):
    for doc, text in DOCS.items():
        client.ingest(tenant, doc, text, title=doc.replace("rr-", "").title() + " (synthetic)")


class _Rerank(BaseHTTPRequestHandler):
    mode = "tei"

    def log_message(self, *args):
        pass

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        texts = body["texts"]
        # Prefers the parking passage whatever the fused order says.
        scores = [1.0 if "Parking" in t else 0.1 * i for i, t in enumerate(texts)]
        if type(self).mode == "tei":
            payload = [{"index": i, "score": s} for i, s in enumerate(scores)]
        elif type(self).mode == "cohere":
            payload = {"results": [{"index": i, "relevance_score": s} for i, s in enumerate(scores)]}
        else:
            payload = {"unexpected": True}
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def rerank_url():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Rerank)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_reorder_is_by_score_then_fused_rank():
    assert reorder([0.2, 0.9, 0.9], [1, 3, 2]) == [2, 1, 0]


@pytest.mark.parametrize("mode", ["tei", "cohere"])
def test_remote_rerank_orders_hits_and_reports_its_settings(auth, tmp_path, rerank_url, mode):
    _Rerank.mode = mode
    exporter = InMemorySpanExporter()
    setup_tracing("retrieval")
    add_span_processor(SimpleSpanProcessor(exporter))
    with running_service(auth, tmp_path, rerank_backend="remote", rerank_url=rerank_url, rerank_depth=10) as svc:
        _ingest(svc, "rr-tenant")
        reply = svc.search("rr-tenant", "when should I arrive for my appointment", k=3)
    hits = list(reply.hits)
    assert hits[0].passage.identity.document_id == "rr-parking"
    assert [h.label for h in hits] == ["S1", "S2", "S3"]
    assert [h.rerank_rank for h in hits] == [1, 2, 3]
    assert hits[0].fused_rank != 1  # the reranker moved it up; the fused rank is kept
    s = reply.settings
    assert (s.rerank_backend, s.rerank_depth, s.rerank_fallback) == ("remote", 3, False)
    assert s.rerank_model.endswith("/rerank") and s.rerank_ms > 0
    assert any(span.name == "retrieval.rerank" for span in exporter.get_finished_spans())


def test_a_failing_reranker_keeps_the_fused_order(auth, tmp_path, rerank_url):
    _Rerank.mode = "broken"
    with running_service(auth, tmp_path, rerank_backend="remote", rerank_url=rerank_url) as svc:
        _ingest(svc, "rr-tenant")
        reply = svc.search("rr-tenant", "when should I arrive for my appointment", k=3)
    assert reply.settings.rerank_fallback
    assert [h.fused_rank for h in reply.hits] == [1, 2, 3]


def test_unreachable_reranker_is_a_fallback_not_a_failure():
    outcome = RemoteRerank("http://127.0.0.1:9", timeout_seconds=0.3).rerank("q", [("a", ""), ("b", "")], [2.0, 1.0])
    assert outcome.fallback and outcome.scores == [2.0, 1.0]


def test_embedded_rerank_and_relevance_on_every_hit(auth, tmp_path):
    with running_service(auth, tmp_path, rerank_backend="embedded", relevance=True) as svc:
        _ingest(svc, "rr-tenant")
        reply = svc.search("rr-tenant", "Can I just walk in without an appointment?", k=3)
    hits = list(reply.hits)
    assert hits[0].passage.identity.document_id == "rr-walkin"
    assert reply.settings.rerank_backend == "embedded" and reply.settings.relevance_model.startswith("relevance-")
    assert 0 < reply.settings.relevance_threshold < 1
    assert all(0.0 <= h.relevance <= 1.0 for h in hits)
    assert all(h.relevant == (h.relevance >= reply.settings.relevance_threshold) for h in hits)
    assert hits[0].relevance > max(h.relevance for h in hits[1:])


def test_rerank_settings_are_validated():
    from citetrace.kit.settings import SettingsError

    from services.retrieval.settings import Settings

    with pytest.raises(SettingsError, match="rerank_url"):
        Settings(port=0, metrics_port=-1, rerank_backend="remote")
    with pytest.raises(SettingsError, match="rerank_backend"):
        Settings(port=0, metrics_port=-1, rerank_backend="magic")


def _counting(monkeypatch, embedder) -> list[str]:
    """The texts the encoder is asked to read from now on, for token vectors or for a search vector."""
    seen: list[str] = []
    tokens, vectors = embedder.encode_tokens, embedder.embed

    def encode_tokens(texts, batch_size=16):
        seen.extend(texts)
        return tokens(texts, batch_size=batch_size)

    def embed(texts, batch_size=16):
        seen.extend(texts)
        return vectors(texts, batch_size=batch_size)

    monkeypatch.setattr(embedder, "encode_tokens", encode_tokens)
    monkeypatch.setattr(embedder, "embed", embed)
    return seen


def test_passage_sides_are_computed_when_indexed_and_no_search_computes_them(auth, tmp_path, monkeypatch):
    with running_service(auth, tmp_path, rerank_backend="embedded", relevance=True) as svc:
        _ingest(svc, "rr-tenant")
        preparation = svc.core.passage_sides
        assert preparation.wait_idle(120)
        assert len(preparation.model.store) == len(DOCS) and preparation.computed == len(DOCS)
        assert preparation.model.embedder is svc.core.embedder  # one encoder for the search and the judgments
        seen = _counting(monkeypatch, svc.core.embedder)
        question = "Can I just walk in without an appointment?"
        first = svc.search("rr-tenant", question, k=3)
        # only the question is encoded, once for the query vector, the rerank and the relevance of the kept
        # hits: every passage side came from the store
        assert seen == [question]
    # A restarted service finds them stored: the rebuild at warm-up submits every passage, none is computed,
    # and its searches score exactly as before.
    with running_service(auth, tmp_path, rerank_backend="embedded", relevance=True) as svc:
        preparation = svc.core.passage_sides
        assert preparation.wait_idle(120) and preparation.computed == 0
        seen = _counting(monkeypatch, svc.core.embedder)
        again = svc.search("rr-tenant", question, k=3)
        assert seen == [question]
    assert [(h.passage.identity.passage_id, h.relevance) for h in again.hits] == \
        [(h.passage.identity.passage_id, h.relevance) for h in first.hits]


def test_with_the_query_cache_off_every_search_encodes_its_question_once(auth, tmp_path, monkeypatch):
    """No hidden query cache in the judgments: with QUERY_CACHE_SIZE 0 a repeated question is encoded
    again, and still once per search (the query vector, the rerank and the gate share the run)."""
    with running_service(auth, tmp_path, rerank_backend="embedded", relevance=True, query_cache_size=0) as svc:
        _ingest(svc, "rr-tenant")
        assert svc.core.passage_sides.wait_idle(120)
        seen = _counting(monkeypatch, svc.core.embedder)
        question = "Can I just walk in without an appointment?"
        first = svc.search("rr-tenant", question, k=3)
        again = svc.search("rr-tenant", question, k=3)
        lexical = svc.search("rr-tenant", question, k=3, mode=pb.SEARCH_MODE_LEXICAL)
    assert seen == [question, question, question]
    assert [h.relevance for h in first.hits] == [h.relevance for h in again.hits]
    assert lexical.settings.rerank_backend == "embedded" and all(0 < h.relevance < 1 for h in lexical.hits)
