"""The embedded index against a brute-force reference, plus its concurrency."""

from __future__ import annotations

import dataclasses
import math
import random
import threading
from collections import Counter
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from services.retrieval.index import (
    BM25Settings,
    EmbeddedIndex,
    FusionSettings,
    IndexedPassage,
    ScopeFilter,
    SearchQuery,
)
from services.retrieval.index.analyzer import EnglishAnalyzer
from services.retrieval.index.fusion import canonical_ranking

T0 = datetime(2024, 1, 1, tzinfo=UTC)
WORDS = [
    "arrive",
    "early",
    "cancel",
    "fee",
    "fasting",
    "insurance",
    "card",
    "parking",
    "clinic",
    "referral",
    "child",
    "vaccine",
    "desk",
]
analyze = EnglishAnalyzer()


def random_corpus(seed: int, n: int = 400, dim: int = 16) -> list[IndexedPassage]:
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    corpus = []
    for i in range(n):
        valid_from = T0 + timedelta(days=rng.randint(0, 300))
        corpus.append(
            IndexedPassage(
                passage_id=f"p{i:04d}", tenant_id=rng.choice(["t1", "t2"]), document_id=f"d{i % 37}",
                version_id=f"v{i % 53}", source_class="handbook",
                text=" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12))),
                roles=tuple(rng.sample(["patient", "staff", "admin"], rng.randint(0, 2))),
                location_scope=tuple(rng.sample(["a", "b", "c"], rng.randint(0, 2))),
                intents=tuple(rng.sample(["arrival", "cancellation", "billing"], rng.randint(0, 2))),
                locale=rng.choice(["en", "es"]), status=rng.choice(["draft", "approved", "approved", "retired"]),
                valid_from=valid_from, valid_to=rng.choice([None, valid_from + timedelta(days=rng.randint(1, 200))]),
                vector=None if rng.random() < 0.1 else nrng.standard_normal(dim).astype(np.float32),
            )
        )  # fmt: skip
    return corpus


def random_scope(rng: random.Random) -> ScopeFilter:
    return ScopeFilter(
        tenant_id=rng.choice(["t1", "t2"]),
        roles=tuple(rng.sample(["patient", "staff", "admin"], rng.randint(0, 2))),
        location_ids=tuple(rng.sample(["a", "b", "c"], rng.randint(0, 2))),
        intents=tuple(rng.sample(["arrival", "cancellation", "billing"], rng.randint(0, 1))),
        locale=rng.choice([None, "en", "es"]),
        as_of=T0 + timedelta(days=rng.randint(0, 500)),
    )


def reference_bm25(corpus, terms, scope, text, settings: BM25Settings) -> list[tuple[str, float]]:
    """Textbook BM25 (Lucene form): statistics over the whole index, scores over eligible passages."""
    n, avgdl = len(corpus), sum(sum(t.values()) for t in terms.values()) / len(corpus)
    df = Counter(term for t in terms.values() for term in t)
    scored = []
    for p in corpus:
        if not scope.admits(p):
            continue
        tf, dl, total, matched = terms[p.passage_id], sum(terms[p.passage_id].values()), 0.0, False
        for term, qtf in Counter(analyze(text)).items():
            if tf[term]:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                total += (
                    qtf
                    * idf
                    * tf[term]
                    / (tf[term] + settings.k1 * (1 - settings.b + settings.b * dl / avgdl))
                )
                matched = True
        if matched:
            scored.append((p.passage_id, total))
    return scored


def reference_cosine(corpus, scope, query) -> list[tuple[str, float]]:
    q = query / np.linalg.norm(query)
    return [
        (p.passage_id, float(np.dot(p.vector / np.linalg.norm(p.vector), q)))
        for p in corpus
        if p.vector is not None and scope.admits(p)
    ]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_matches_a_brute_force_reference_on_random_scopes(seed):
    corpus = random_corpus(seed)
    index = EmbeddedIndex(BM25Settings(k1=1.2, b=0.75))
    assert index.upsert(corpus).indexed == len(corpus)
    rng, nrng = random.Random(seed), np.random.default_rng(seed + 100)
    terms = {p.passage_id: Counter(analyze(p.text)) for p in corpus}
    for _ in range(40):
        scope = random_scope(rng)
        text = " ".join(rng.sample(WORDS, 3))
        vector = nrng.standard_normal(16).astype(np.float32)
        fusion = FusionSettings(mode="hybrid", candidate_k=1000)
        hits = index.search(SearchQuery(text, vector, scope, 1000, fusion))
        lexical = canonical_ranking(reference_bm25(corpus, terms, scope, text, index.bm25), 1000)
        vector_ref = canonical_ranking(reference_cosine(corpus, scope, vector), 1000)
        got_lexical = sorted(
            ((h.passage_id, h.lexical_score) for h in hits if h.lexical_rank), key=lambda c: c[0]
        )
        got_vector = sorted(
            ((h.passage_id, h.vector_score) for h in hits if h.vector_rank), key=lambda c: c[0]
        )
        assert [pid for pid, _ in got_lexical] == sorted(pid for pid, _ in lexical)
        assert [s for _, s in got_lexical] == pytest.approx([s for _, s in sorted(lexical)], rel=1e-5)
        assert [pid for pid, _ in got_vector] == sorted(pid for pid, _ in vector_ref)
        assert [s for _, s in got_vector] == pytest.approx([s for _, s in sorted(vector_ref)], abs=1e-5)


def test_many_scattered_eligible_rows_take_the_gather_path():
    """Alternating tenants make every eligible row its own run (> 64 runs)."""
    nrng = np.random.default_rng(7)
    corpus = [
        IndexedPassage(f"p{i:04d}", f"t{i % 2}", "d", "v", "c", "arrive", (), (), (), "en", "approved", T0,
                       vector=nrng.standard_normal(8).astype(np.float32))
        for i in range(400)
    ]  # fmt: skip
    index = EmbeddedIndex()
    index.upsert(corpus)
    scope = ScopeFilter("t1", (), (), (), None, T0)
    query = nrng.standard_normal(8).astype(np.float32)
    hits = index.search(
        SearchQuery("arrive", query, scope, 500, FusionSettings(mode="vector", candidate_k=500))
    )
    expected = canonical_ranking(reference_cosine(corpus, scope, query), 500)
    assert [h.passage_id for h in hits] == [pid for pid, _ in expected]


def test_equal_vectors_score_bit_identically_wherever_they_sit():
    nrng = np.random.default_rng(3)
    shared = nrng.standard_normal(384).astype(np.float32)
    corpus = [
        IndexedPassage(f"p{i:04d}", "t1", "d", "v", "c", "text", (), (), (), "en", "approved", T0,
                       vector=shared if i % 97 == 0 else nrng.standard_normal(384).astype(np.float32))
        for i in range(2000)
    ]  # fmt: skip
    index = EmbeddedIndex()
    index.upsert(corpus)
    scope = ScopeFilter("t1", (), (), (), None, T0)
    hits = index.search(SearchQuery("text", shared, scope, 21, FusionSettings(mode="vector", candidate_k=21)))
    assert [h.passage_id for h in hits] == [f"p{i:04d}" for i in range(0, 2000, 97)]
    assert len({h.vector_score for h in hits}) == 1


def test_searches_run_while_writes_happen():
    corpus = random_corpus(11, n=300)
    index = EmbeddedIndex()
    index.upsert(corpus[:100])
    errors: list[BaseException] = []
    stop = threading.Event()
    nrng = np.random.default_rng(0)

    def reader():
        rng = random.Random(threading.get_ident())
        while not stop.is_set():
            try:
                scope = random_scope(rng)
                hits = index.search(
                    SearchQuery("arrive early fee", nrng.standard_normal(16).astype(np.float32), scope, 50)
                )
                assert all(corpus_by_id[h.passage_id].tenant_id == scope.tenant_id for h in hits)
            except BaseException as exc:  # noqa: BLE001 - collected and re-raised below
                errors.append(exc)
                return

    corpus_by_id = {p.passage_id: p for p in corpus}
    readers = [threading.Thread(target=reader) for _ in range(3)]
    for t in readers:
        t.start()
    for start in range(100, 300, 20):
        index.upsert(corpus[start : start + 20])
        index.set_version_status("t1", f"v{start % 53}", "approved")
        index.remove_version("t2", f"v{start % 53}")
    stop.set()
    for t in readers:
        t.join()
    assert errors == []
    assert index.count() == len(expected_live_after_writes(corpus))


def expected_live_after_writes(corpus) -> set[str]:
    live = {p.passage_id for p in corpus[:100]}
    for start in range(100, 300, 20):
        live |= {p.passage_id for p in corpus[start : start + 20]}
        removed = f"v{start % 53}"
        live -= {p.passage_id for p in corpus if p.tenant_id == "t2" and p.version_id == removed}
    return live


def test_dead_rows_are_compacted_and_results_stay_the_same():
    corpus = random_corpus(21, n=700)
    index, fresh = EmbeddedIndex(), EmbeddedIndex()
    fresh.upsert(corpus)
    index.upsert(corpus)
    for _ in range(2):  # every re-index of a version leaves its old rows dead
        for version in {p.version_id for p in corpus}:
            for tenant in ("t1", "t2"):
                index.remove_version(tenant, version)
        index.upsert(corpus)
    assert index.row_count() < 2 * len(corpus)  # compacted instead of growing to 3x
    assert index.count() == fresh.count() == len(corpus)
    assert index.generation() == fresh.generation()
    rng, nrng = random.Random(5), np.random.default_rng(5)
    for _ in range(20):
        query = SearchQuery(
            "arrive fee card", nrng.standard_normal(16).astype(np.float32), random_scope(rng), 50
        )
        assert index.search(query) == fresh.search(query)


def test_generation_depends_on_content_not_on_history():
    draft = random_corpus(8, n=50)
    approved = [dataclasses.replace(p, status="approved") if p.version_id == "v3" else p for p in draft]
    a, b = EmbeddedIndex(), EmbeddedIndex()
    a.upsert(draft)
    a.set_version_status("t1", "v3", "approved")
    a.set_version_status("t2", "v3", "approved")
    b.upsert(list(reversed(approved)))
    assert a.generation() == b.generation()
