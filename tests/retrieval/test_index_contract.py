"""Contract of every SearchBackend (see conftest.py for how a backend joins the suite)."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from services.retrieval.index import (
    FusionSettings,
    IndexedPassage,
    ScopeFilter,
    SearchBackend,
    SearchQuery,
    fuse,
)

DIM = 384
T0 = datetime(2024, 1, 1, tzinfo=UTC)
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
MODES = ("lexical", "vector", "hybrid")


def vec(*weights_by_axis: tuple[int, float]) -> np.ndarray:
    """A unit vector from (axis, weight) pairs."""
    v = np.zeros(DIM, dtype=np.float32)
    for axis, weight in weights_by_axis:
        v[axis] = weight
    return v / np.linalg.norm(v)


E0, E1 = vec((0, 1.0)), vec((1, 1.0))


def passage(pid: str, text: str = "arrive fifteen minutes early", **overrides) -> IndexedPassage:
    fields = dict(
        passage_id=pid, tenant_id="t1", document_id="doc-1", version_id="ver-1", source_class="scheduling_policy",
        text=text, roles=(), location_scope=(), intents=(), locale="en", status="approved",
        valid_from=T0, valid_to=None, vector=E0,
    )  # fmt: skip
    fields.update(overrides)
    return IndexedPassage(**fields)


def scope(**overrides) -> ScopeFilter:
    fields = dict(tenant_id="t1", roles=("patient",), location_ids=(), intents=(), locale=None, as_of=NOW)
    fields.update(overrides)
    return ScopeFilter(**fields)


def search(backend, text="arrive early", *, vector=E0, k=10, mode="hybrid", **filter_and_fusion) -> list:
    fusion_keys = {"method", "rrf_k", "lexical_weight", "vector_weight", "candidate_k"}
    # Explicit RRF with equal weights unless a test says otherwise: the library defaults may be retuned.
    fusion_args = {"method": "rrf", "lexical_weight": 1.0, "vector_weight": 1.0, "mode": mode}
    fusion_args.update({k_: v for k_, v in filter_and_fusion.items() if k_ in fusion_keys})
    fusion = FusionSettings(**fusion_args)
    filters = {k_: v for k_, v in filter_and_fusion.items() if k_ not in fusion_keys}
    return backend.search(SearchQuery(text, vector, scope(**filters), k, fusion))


def ids(hits) -> list[str]:
    return [h.passage_id for h in hits]


@pytest.fixture
def backend(backend_factory) -> SearchBackend:
    b = backend_factory()
    assert isinstance(b, SearchBackend)
    return b


def load(backend, *passages: IndexedPassage) -> None:
    report = backend.upsert(list(passages))
    assert report.errors == [] and report.indexed == len(passages)


# -- scope: every rule, in every mode (the filter sits inside both sub-queries) ------------


@pytest.mark.parametrize("mode", MODES)
def test_cross_tenant_isolation(backend, mode):
    load(
        backend,
        passage("a-own", tenant_id="t1", text="arrive"),
        passage("b-other", tenant_id="t2", text="arrive early arrive early"),
        passage("c-other", tenant_id="t2", text="arrive early"),
    )
    assert ids(search(backend, mode=mode)) == ["a-own"]
    assert sorted(ids(search(backend, mode=mode, tenant_id="t2"))) == ["b-other", "c-other"]
    assert search(backend, mode=mode, tenant_id="t3") == []


@pytest.mark.parametrize("mode", MODES)
def test_roles(backend, mode):
    load(
        backend,
        passage("p-patient", roles=("patient",)),
        passage("p-staff", roles=("staff",)),
        passage("p-everyone", roles=()),
        passage("p-both", roles=("staff", "patient")),
    )
    assert sorted(ids(search(backend, mode=mode, roles=("patient",)))) == [
        "p-both",
        "p-everyone",
        "p-patient",
    ]
    assert sorted(ids(search(backend, mode=mode, roles=("staff", "admin")))) == [
        "p-both",
        "p-everyone",
        "p-staff",
    ]
    assert ids(search(backend, mode=mode, roles=())) == ["p-everyone"]


@pytest.mark.parametrize("mode", MODES)
def test_location_scope(backend, mode):
    load(
        backend,
        passage("l-a", location_scope=("clinic-a",)),
        passage("l-b", location_scope=("clinic-b",)),
        passage("l-all", location_scope=()),
    )
    assert sorted(ids(search(backend, mode=mode, location_ids=("clinic-a",)))) == ["l-a", "l-all"]
    assert sorted(ids(search(backend, mode=mode, location_ids=("clinic-c",)))) == ["l-all"]
    assert sorted(ids(search(backend, mode=mode, location_ids=("clinic-a", "clinic-b")))) == [
        "l-a",
        "l-all",
        "l-b",
    ]
    # A caller naming no location is not restricted by location.
    assert sorted(ids(search(backend, mode=mode, location_ids=()))) == ["l-a", "l-all", "l-b"]


@pytest.mark.parametrize("mode", MODES)
def test_intents(backend, mode):
    load(
        backend,
        passage("i-arrival", intents=("arrival",)),
        passage("i-cancel", intents=("cancellation", "rescheduling")),
        passage("i-none", intents=()),
    )
    assert ids(search(backend, mode=mode, intents=("arrival",))) == ["i-arrival"]
    assert ids(search(backend, mode=mode, intents=("rescheduling", "billing"))) == ["i-cancel"]
    assert sorted(ids(search(backend, mode=mode, intents=()))) == ["i-arrival", "i-cancel", "i-none"]


@pytest.mark.parametrize("mode", MODES)
def test_locale(backend, mode):
    load(backend, passage("en-1", locale="en"), passage("es-1", locale="es"))
    assert ids(search(backend, mode=mode, locale="es")) == ["es-1"]
    assert ids(search(backend, mode=mode, locale="en")) == ["en-1"]
    assert sorted(ids(search(backend, mode=mode, locale=None))) == ["en-1", "es-1"]
    assert search(backend, mode=mode, locale="fr") == []


@pytest.mark.parametrize("mode", MODES)
def test_source_classes(backend, mode):
    load(
        backend,
        passage("s-policy", source_class="scheduling_policy"),
        passage("s-prep", source_class="preparation_instructions"),
        passage("s-handbook", source_class="handbook"),
    )
    assert ids(search(backend, mode=mode, source_classes=("handbook",))) == ["s-handbook"]
    assert sorted(ids(search(backend, mode=mode, source_classes=("handbook", "scheduling_policy", "regulatory")))) \
        == ["s-handbook", "s-policy"]
    assert sorted(ids(search(backend, mode=mode, source_classes=()))) == ["s-handbook", "s-policy", "s-prep"]
    assert search(backend, mode=mode, source_classes=("regulatory",)) == []
    # Combined with the other clauses, not instead of them.
    assert search(backend, mode=mode, source_classes=("handbook",), tenant_id="t2") == []
    assert search(backend, mode=mode, source_classes=("handbook",), locale="nb") == []


@pytest.mark.parametrize("mode", MODES)
def test_effective_window(backend, mode):
    t1, t2 = T0 + timedelta(days=100), T0 + timedelta(days=200)
    load(
        backend,
        passage("w-old", valid_from=T0, valid_to=t1),
        passage("w-current", valid_from=t1, valid_to=None),
        passage("w-future", valid_from=t2),
    )
    assert search(backend, mode=mode, as_of=T0 - timedelta(seconds=1)) == []
    assert ids(search(backend, mode=mode, as_of=T0)) == ["w-old"]  # valid_from is inclusive
    assert ids(search(backend, mode=mode, as_of=t1 - timedelta(microseconds=1))) == ["w-old"]
    assert ids(search(backend, mode=mode, as_of=t1)) == ["w-current"]  # valid_to is exclusive
    assert sorted(ids(search(backend, mode=mode, as_of=t2))) == ["w-current", "w-future"]


@pytest.mark.parametrize("mode", MODES)
def test_only_approved_status_is_eligible(backend, mode):
    load(
        backend,
        passage("s-draft", status="draft", version_id="v-draft"),
        passage("s-approved", status="approved", version_id="v-approved"),
        passage("s-retired", status="retired", version_id="v-retired"),
    )
    assert ids(search(backend, mode=mode)) == ["s-approved"]


def test_set_version_status_takes_effect(backend):
    load(
        backend,
        passage("v2-a", status="draft", version_id="v2"),
        passage("v2-b", status="draft", version_id="v2", text="arrive early please"),
        passage("v1-a", status="approved", version_id="v1"),
        passage("other-tenant-v2", tenant_id="t2", status="draft", version_id="v2"),
    )
    assert ids(search(backend)) == ["v1-a"]
    assert backend.set_version_status("t1", "v2", "approved") == 2
    assert backend.set_version_status("t1", "v1", "retired") == 1
    assert sorted(ids(search(backend))) == ["v2-a", "v2-b"]
    assert search(backend, tenant_id="t2") == []  # the other tenant's version is untouched
    assert backend.set_version_status("t1", "v2", "approved") == 0  # already approved
    assert backend.set_version_status("t1", "v-unknown", "approved") == 0
    with pytest.raises(ValueError):
        backend.set_version_status("t1", "v2", "published")


def test_remove_version(backend):
    load(backend, passage("r-1", version_id="v1"), passage("r-2", version_id="v2"))
    assert backend.remove_version("t1", "v1") == 1
    assert ids(search(backend)) == ["r-2"]
    assert backend.count() == 1


# -- no broad fetch, no relaxation ------------------------------------------------------


@pytest.mark.parametrize("mode", ("lexical", "vector"))
def test_filter_is_applied_before_the_candidate_cut(backend, mode):
    """Many better-matching but ineligible passages must not crowd out the eligible one."""
    crowd = [passage(f"crowd-{i:03d}", tenant_id="t2", text="arrive early arrive early") for i in range(60)]
    crowd += [
        passage(f"staff-{i:03d}", roles=("staff",), text="arrive early arrive early") for i in range(60)
    ]
    weak = passage(
        "weak-eligible", text="arrive at the desk tomorrow morning", vector=vec((0, 1.0), (5, 3.0))
    )
    load(backend, *crowd, weak)
    hits = search(backend, mode=mode, k=3, candidate_k=3)
    assert ids(hits) == ["weak-eligible"]


@pytest.mark.parametrize("mode", MODES)
def test_empty_result_stays_empty(backend, mode):
    load(backend, passage("staff-only", roles=("staff",)), passage("draft", status="draft"))
    # Strong matches exist, but none is eligible: nothing is returned, whatever k.
    assert search(backend, mode=mode, roles=("patient",), k=50) == []


def test_lexical_mode_returns_nothing_without_a_matching_term(backend):
    load(backend, passage("x", text="bring your insurance card"))
    assert search(backend, text="parking garage", mode="lexical") == []
    assert search(backend, text="the of and", mode="lexical") == []  # stop words only


# -- determinism ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_ties_break_by_passage_id(backend, mode):
    same = ["tie-07", "tie-02", "tie-10", "tie-01", "tie-05"]
    random.Random(4).shuffle(same)
    load(backend, *(passage(pid, text="cancel at least 24 hours ahead", vector=E1) for pid in same))
    hits = search(backend, text="cancel 24 hours", vector=E1, mode=mode)
    assert ids(hits) == sorted(same)
    assert [h.fused_rank for h in hits] == [1, 2, 3, 4, 5]
    assert search(backend, text="cancel 24 hours", vector=E1, mode=mode) == hits  # same query, same answer


def test_insertion_order_does_not_change_the_ranking(backend_factory):
    texts = ["arrive early", "arrive fifteen minutes early", "early", "arrive", "bring your card early"]
    docs = [passage(f"o-{i}", text=t, vector=vec((0, 1.0), (i + 1, 0.3 * i))) for i, t in enumerate(texts)]
    forward, backward = backend_factory(), backend_factory()
    load(forward, *docs)
    load(backward, *reversed(docs))
    for mode in MODES:
        assert search(forward, mode=mode) == search(backward, mode=mode)


# -- upsert -----------------------------------------------------------------------------


def test_upsert_is_idempotent(backend):
    docs = [passage("u-1"), passage("u-2", text="bring your insurance card", vector=E1)]
    load(backend, *docs)
    before = (backend.count(), backend.generation(), search(backend))
    report = backend.upsert(docs)
    assert report.indexed == 2 and report.errors == []
    assert (backend.count(), backend.generation(), search(backend)) == before
    assert backend.count() == 2


def test_upsert_replaces_by_passage_id(backend):
    load(backend, passage("u-1", text="arrive early"))
    generation = backend.generation()
    load(backend, passage("u-1", text="bring your insurance card", vector=E1))
    assert backend.count() == 1
    assert backend.generation() != generation
    assert search(backend, text="arrive early", mode="lexical") == []
    assert ids(search(backend, text="insurance card", mode="lexical")) == ["u-1"]
    assert ids(search(backend, vector=E1, mode="vector")) == ["u-1"]


def test_later_copy_in_one_batch_wins(backend):
    report = backend.upsert(
        [passage("dup", text="arrive early"), passage("dup", text="insurance card", vector=E1)]
    )
    assert report.errors == [] and backend.count() == 1
    assert search(backend, text="arrive early", mode="lexical") == []
    assert ids(search(backend, text="insurance card", mode="lexical")) == ["dup"]


def test_generation_tracks_visible_changes(backend):
    empty = backend.generation()
    load(backend, passage("g-1", status="draft"))
    loaded = backend.generation()
    backend.set_version_status("t1", "ver-1", "approved")
    approved = backend.generation()
    assert len({empty, loaded, approved}) == 3


def test_invalid_passages_are_reported_and_the_rest_indexed(backend):
    report = backend.upsert([
        passage("ok-1"),
        passage("bad-dim", vector=np.ones(3, dtype=np.float32)),
        passage("bad-zero", vector=np.zeros(DIM, dtype=np.float32)),
        passage("bad-nan", vector=np.full(DIM, np.nan, dtype=np.float32)),
        passage("bad-empty", text="   "),
    ])  # fmt: skip
    assert report.indexed == 1
    assert sorted(e.passage_id for e in report.errors) == ["bad-dim", "bad-empty", "bad-nan", "bad-zero"]
    assert ids(search(backend)) == ["ok-1"]


# -- modes and fusion -------------------------------------------------------------------


def test_lexical_and_vector_modes_use_only_their_retriever(backend):
    load(
        backend,
        passage("words-only", text="parking garage entrance", vector=E1),
        passage("meaning-only", text="bring your insurance card", vector=E0),
    )
    lexical = search(backend, text="parking garage", vector=E0, mode="lexical")
    assert ids(lexical) == ["words-only"]
    assert lexical[0].vector_rank is None and lexical[0].vector_score is None and lexical[0].lexical_rank == 1
    vector = search(backend, text="parking garage", vector=E0, mode="vector")
    assert ids(vector) == ["meaning-only", "words-only"]  # every eligible passage with a vector
    assert all(h.lexical_rank is None and h.lexical_score is None for h in vector)
    assert [h.vector_rank for h in vector] == [1, 2]


def test_lexical_mode_needs_no_query_vector(backend):
    load(backend, passage("n-1"))
    assert ids(search(backend, vector=None, mode="lexical")) == ["n-1"]
    with pytest.raises(ValueError):
        search(backend, vector=None, mode="hybrid")


@pytest.fixture
def fusion_example(backend):
    """Lexical ranks: A 1, B 2 (C has no query term). Vector cosines: C 1.0, B 0.7071, A 0."""
    load(
        backend,
        passage("p-a", text="alpha beta", vector=E1),
        passage("p-b", text="alpha", vector=vec((0, 1.0), (1, 1.0))),
        passage("p-c", text="gamma", vector=E0),
    )
    return backend


def test_rrf_fusion_hand_computed(fusion_example):
    hits = search(fusion_example, text="alpha beta", vector=E0, method="rrf", rrf_k=60)
    assert ids(hits) == ["p-a", "p-b", "p-c"]
    assert [(h.lexical_rank, h.vector_rank, h.fused_rank) for h in hits] == [
        (1, 3, 1),
        (2, 2, 2),
        (None, 1, 3),
    ]
    expected = [1 / 61 + 1 / 63, 1 / 62 + 1 / 62, 1 / 61]
    assert [h.fused_score for h in hits] == pytest.approx(expected, rel=1e-12)


def test_weighted_rrf_hand_computed(fusion_example):
    hits = search(
        fusion_example,
        text="alpha beta",
        vector=E0,
        method="rrf",
        rrf_k=10,
        lexical_weight=1.0,
        vector_weight=3.0,
    )
    expected = {"p-c": 3 / 11, "p-b": 1 / 12 + 3 / 12, "p-a": 1 / 11 + 3 / 13}
    assert ids(hits) == ["p-b", "p-a", "p-c"]  # 0.3333 > 0.3217 > 0.2727
    assert {h.passage_id: h.fused_score for h in hits} == pytest.approx(expected, rel=1e-12)


def test_minmax_fusion_hand_computed(fusion_example):
    hits = search(fusion_example, text="alpha beta", vector=E0, method="minmax")
    # lexical: A 1, B 0, C absent -> 0; vector: C 1, B 0.7071, A 0; fused = mean of the two.
    assert ids(hits) == ["p-a", "p-c", "p-b"]  # A and C tie at 0.5: passage_id decides
    assert [h.fused_score for h in hits] == pytest.approx([0.5, 0.5, math.sqrt(0.5) / 2], abs=1e-6)


def test_zscore_fusion_hand_computed(fusion_example):
    hits = search(
        fusion_example, text="alpha beta", vector=E0, method="zscore", lexical_weight=0.25, vector_weight=0.75
    )
    cosines = np.array([0.0, math.sqrt(0.5), 1.0])  # A, B, C
    z = (cosines - cosines.mean()) / cosines.std()
    lexical = {"p-a": 1.0, "p-b": -1.0, "p-c": -1.0}  # two scores are always +-1; absent takes the minimum
    expected = {pid: 0.25 * lexical[pid] + 0.75 * z[i] for i, pid in enumerate(["p-a", "p-b", "p-c"])}
    assert {h.passage_id: h.fused_score for h in hits} == pytest.approx(expected, abs=1e-6)
    assert ids(hits) == sorted(expected, key=lambda pid: -expected[pid])


def test_k_limits_the_hits(backend):
    load(backend, *(passage(f"k-{i:02d}", text="arrive early " + "x " * i) for i in range(12)))
    hits = search(backend, mode="lexical", k=5)
    assert len(hits) == 5
    assert ids(hits) == [f"k-{i:02d}" for i in range(5)]  # shorter passage, higher BM25


# -- with real embeddings -----------------------------------------------------------------


@pytest.fixture(scope="module")
def embedder():
    from citetrace.embeddings import Embedder

    e = Embedder()
    e.warm_up()
    return e


@pytest.mark.slow
def test_real_embeddings_rank_the_relevant_policy_first(backend, embedder):
    texts = {
        "pol-arrival": "Please arrive 15 minutes before your scheduled appointment to complete check-in.",
        "pol-cancel": "Appointments cancelled less than 24 hours in advance incur a late cancellation fee.",
        "pol-fasting": "Do not eat or drink anything for 8 hours before a fasting blood test.",
        "pol-parking": "Visitor parking is available in the garage on Elm Street.",
    }
    vectors = embedder.embed(list(texts.values()))
    load(
        backend, *(passage(pid, text=t, vector=v) for (pid, t), v in zip(texts.items(), vectors, strict=True))
    )
    paraphrases = [  # few shared words: the vector retriever must carry these
        ("How early should I get there before my visit?", "pol-arrival"),
        ("Is there a charge if I call off my booking the day before?", "pol-cancel"),
        ("Can I have breakfast before my blood work?", "pol-fasting"),
    ]
    for question, expected in paraphrases:
        assert (
            ids(search(backend, text=question, vector=embedder.embed_one(question), mode="vector"))[0]
            == expected
        )
    for question, expected in [
        ("Is there a fee if I cancel my appointment the day before?", "pol-cancel"),
        ("Where can visitors park?", "pol-parking"),
    ]:
        assert (
            ids(search(backend, text=question, vector=embedder.embed_one(question), mode="hybrid"))[0]
            == expected
        )


def test_the_protocol_declares_every_capability_the_core_uses(backend):
    """The retrieval core calls only what SearchBackend declares (no getattr probing): each backend
    has all of it, and the raw candidate lists fused are exactly what `search` returns."""
    assert isinstance(backend, SearchBackend)
    assert isinstance(backend.one_request_for_both, bool) and isinstance(backend.process_local, bool)
    assert callable(backend.rebuild_scope) and callable(backend.candidate_lists)
    load(backend, passage("c-1", text="arrive fifteen minutes early"), passage("c-2", text="bring photo id"))
    query = SearchQuery("arrive early", E0, scope(), 5, FusionSettings(mode="hybrid", candidate_k=10))
    lexical, vector = backend.candidate_lists(query)
    assert lexical and vector
    assert backend.search(query) == fuse(lexical, vector, query.fusion, limit=query.k)


@pytest.mark.parametrize("bad", [np.zeros(DIM), np.array([np.nan] + [1.0] * (DIM - 1)), np.array([])])
def test_a_bad_query_vector_is_refused_once_for_every_backend(bad):
    with pytest.raises(ValueError, match="finite and non-zero"):
        SearchQuery("q", bad, scope(), 5, FusionSettings(mode="vector"))
