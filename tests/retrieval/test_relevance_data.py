"""The relevance model's labelled data and features (issue 15): the original set split by question id,
the independent authors' tune files trained on, the held-out file never trained on, and the
"best candidate" features computed per search."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from citetrace.embeddings import Embedder

from services.retrieval import train_relevance
from services.retrieval.relevance import (
    FEATURES,
    PassageSide,
    PassageSideStore,
    RelevanceModel,
    RelevanceWeights,
)


@pytest.fixture(scope="module")
def pairs():
    return train_relevance.labelled_pairs(("tune", "test", "heldout"))


def test_every_labelled_file_resolves_and_each_split_is_where_its_file_says(pairs):
    by_split = {split: {p["question_id"] for p in pairs if p["split"] == split} for split in ("tune", "test", "heldout")}
    assert all(by_split.values()), {k: len(v) for k, v in by_split.items()}
    heldout_files = {path.stem for path, split in train_relevance.labelled_files() if split == "heldout"}
    assert heldout_files and all(q.split(":")[0] in heldout_files for q in by_split["heldout"])
    assert all(q.startswith("q") and int(q[1:]) % 2 == 0 for q in by_split["test"])
    # every question of an independent author has at least one labelled negative: a hard one, as the brief asks
    for qid in by_split["heldout"] | {q for q in by_split["tune"] if ":" in q}:
        assert any(p["label"] == 0 for p in pairs if p["question_id"] == qid), qid


def test_the_held_out_and_test_questions_are_not_in_the_tune_data(pairs):
    tune = {" ".join(p["question"].lower().split()) for p in pairs if p["split"] == "tune"}
    for p in pairs:
        if p["split"] in ("test", "heldout"):
            assert " ".join(p["question"].lower().split()) not in tune, p["question"]


def test_default_pairs_leave_the_held_out_file_out(pairs):
    assert {p["split"] for p in train_relevance.labelled_pairs()} == {"tune", "test"}


def test_a_passage_written_in_a_labelled_file_is_used_as_written(tmp_path, monkeypatch):
    data = {"passages": {"x#1": {"tenant": "t", "title": "Pets (synthetic)", "heading": "Pets",
                                 "text": "Pets are not allowed in the clinic."}},
            "questions": [{"id": "x-1", "tenant": "t", "q": "Can I bring my cat?", "relevant": ["x#1"],
                           "irrelevant": []}]}
    (tmp_path / "tune").mkdir()
    (tmp_path / "tune" / "one.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    (tmp_path / "heldout").mkdir()
    monkeypatch.setattr(train_relevance, "TUNE_DIR", tmp_path / "tune")
    monkeypatch.setattr(train_relevance, "HELDOUT_DIR", tmp_path / "heldout")
    mine = [p for p in train_relevance.labelled_pairs() if p["question_id"] == "one:x-1"]
    assert mine == [{"question_id": "one:x-1", "question": "Can I bring my cat?", "tenant": "t", "passage": "x#1",
                     "label": 1,
                     "split": "tune", "text": "Pets are not allowed in the clinic.", "context": "Pets (synthetic) Pets"}]


def test_a_labelled_pair_across_tenants_is_refused(tmp_path, monkeypatch):
    data = {"passages": {"x#1": {"tenant": "other", "title": "T", "heading": "H", "text": "Text."}},
            "questions": [{"id": "x-1", "tenant": "t", "q": "Q?", "relevant": ["x#1"], "irrelevant": []}]}
    (tmp_path / "one.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    monkeypatch.setattr(train_relevance, "TUNE_DIR", tmp_path)
    with pytest.raises(SystemExit, match="pairs a t question with x#1 of other"):
        train_relevance.labelled_pairs()


def test_exactly_one_candidate_is_the_best_by_each_signal():
    model = RelevanceModel(Embedder())
    passages = [("Parking is free in the garage for two hours.", "Parking"),
                ("Please arrive 15 minutes before your appointment.", "Arrival"),
                ("Walk-in visits are not possible; book in advance.", "Walk-ins")]
    rows = model.features("How early should I arrive for my appointment?", passages)
    for flag, base in (("top_cos_sentence", "cos_sentence"), ("top_fused_cov", "fused_lex_cov"),
                       ("top_cos_passage", "cos_passage")):
        assert sum(r[flag] for r in rows) == 1.0
        best = max(range(len(rows)), key=lambda i: (rows[i][base], -i))
        assert rows[best][flag] == 1.0
    assert rows[1]["top_cos_sentence"] == 1.0
    assert set(rows[0]) == set(FEATURES)


def test_the_shipped_weights_name_their_training_data_and_never_the_held_out_file():
    weights = RelevanceWeights()
    body = json.loads(train_relevance.WEIGHTS.read_text(encoding="utf-8"))
    assert weights.version == body["version"] and tuple(body["features"]) == FEATURES
    assert "tests/relevance/tune/" in body["trained_on"] and "heldout" not in body["trained_on"]


def test_judge_holds_the_best_candidate_to_the_lower_bar_and_every_other_to_the_threshold(monkeypatch):
    model = RelevanceModel(Embedder())
    weights = model.weights
    monkeypatch.setattr(weights, "threshold", 0.7)
    monkeypatch.setattr(weights, "best_threshold", 0.3)
    monkeypatch.setattr(model, "score", lambda question, passages, encoded=None: [0.4, 0.35, 0.8][:len(passages)])
    three = [("a", ""), ("b", ""), ("c", "")]
    assert model.judge("q", three) == [(0.4, False), (0.35, False), (0.8, True)]
    assert model.judge("q", three[:2]) == [(0.4, True), (0.35, False)]
    monkeypatch.setattr(model, "score", lambda question, passages, encoded=None: [0.2, 0.1])
    assert model.judge("q", three[:2]) == [(0.2, False), (0.1, False)]
    monkeypatch.setattr(model, "score", lambda question, passages, encoded=None: [])
    assert model.judge("q", []) == []


def test_weights_whose_best_threshold_exceeds_the_threshold_are_refused(tmp_path):
    body = json.loads(train_relevance.WEIGHTS.read_text(encoding="utf-8"))
    body["best_threshold"] = body["threshold"] + 0.1
    path = tmp_path / "w.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    with pytest.raises(ValueError, match="best_threshold must be in"):
        RelevanceWeights(path)


def test_the_head_reads_the_named_features_and_scores_what_the_weights_compute():
    model = RelevanceModel(Embedder())
    passages = [("Please arrive 15 minutes before your appointment.", "Arrival"),
                ("Parking is free in the garage for two hours.", "Parking")]
    x = model.inputs("When should I get there?", passages)
    named = model.features("When should I get there?", passages)
    assert x.tolist() == [[r[n] for n in FEATURES] for r in named]
    scores = model.score("When should I get there?", passages)
    assert scores == [round(float(p), 4) for p in model.weights.probabilities(x)]
    assert scores[0] > scores[1]
    assert model.inputs("q", []).shape == (0, len(FEATURES)) and model.score("q", []) == []


def test_a_profile_that_answers_in_the_questions_own_words_is_judged_relevant():
    """The class relevance-2026.12.06.3 got wrong: with raw embedding dimensions among its inputs it had
    learned the training passages, and scored a provider's own profile 0.10 for "is she taking new
    patients" although it was the best candidate by every named feature."""
    model = RelevanceModel(Embedder())
    profiles = [("Family medicine physician at Lakeside Clinic. Accepts new patients of all ages. Speaks "
                 "English and Spanish.", "Provider profiles > Dr. Imaginary Person (synthetic)"),
                ("Cardiologist at Hilltop Clinic. Not accepting new patients. Speaks English.",
                 "Provider profiles > Dr. Another Person (synthetic)"),
                ("Synthetic profiles of fictional clinicians.", "Provider profiles")]
    judged = model.judge("Is Dr. Imaginary Person taking new patients?", profiles)
    assert judged[0][1], judged
    assert judged[0][0] == max(score for score, _ in judged)


def test_weights_whose_layers_do_not_fit_are_refused(tmp_path):
    body = json.loads(train_relevance.WEIGHTS.read_text(encoding="utf-8"))
    body["hidden_weights"] = body["hidden_weights"][:-1]
    path = tmp_path / "w.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    with pytest.raises(ValueError, match="layer shapes"):
        RelevanceWeights(path)
    body = json.loads(train_relevance.WEIGHTS.read_text(encoding="utf-8"))
    body["interaction"] = "best-sentence q*s,|q-s|"  # a head of relevance-2026.12.06.3's kind
    path.write_text(json.dumps(body), encoding="utf-8")
    with pytest.raises(ValueError, match="retrain"):
        RelevanceWeights(path)


def test_the_passage_cache_keeps_the_most_recent_within_its_byte_budget():
    from services.retrieval.relevance import _LRU

    cache = _LRU(100)
    cache.put("a", 1, 40)
    cache.put("b", 2, 40)
    assert cache.get("a") == 1  # a is now the most recent
    cache.put("c", 3, 40)  # over budget: b (least recent) goes
    assert (cache.get("b"), cache.get("a"), cache.get("c"), cache.used) == (None, 1, 3, 80)
    cache.put("a", 4, 90)  # a replaced: its old size is given back, then c goes
    assert (cache.get("a"), cache.get("c"), cache.used) == (4, None, 90)
    cache.put("huge", 5, 500)  # one entry larger than the budget is kept alone rather than refused
    assert (cache.get("huge"), cache.get("a"), cache.used) == (5, None, 500)
    with pytest.raises(ValueError, match="positive budget"):
        _LRU(0)


def test_a_scored_passage_is_held_with_the_bytes_of_its_vectors():
    model = RelevanceModel(Embedder(), cache_mb=1)
    model.score("When should I arrive?", [("Please arrive 15 minutes early. Bring your card.", "Arrival")])
    ((value, size),) = model._passages.items.values()
    assert size >= value.whole_tokens.nbytes + value.heading_tokens.nbytes + value.sentences.nbytes > 0
    assert model._passages.used == size


def test_a_passage_side_packs_to_int8_rows_and_refuses_another_version_or_a_cut_blob():
    rng = np.random.default_rng(0)

    def unit(rows: int) -> np.ndarray:  # the encoder's vectors are unit rows
        m = rng.standard_normal((rows, 384)).astype(np.float32)
        return m / np.linalg.norm(m, axis=1, keepdims=True)

    side = PassageSide(unit(7), unit(1)[0], unit(2), unit(1)[0], unit(3), frozenset({"arriv", "minut", "ø"}))
    blob = side.pack()
    assert len(blob) < 14 * (384 + 4) + 200  # one byte a component, a float32 scale a row, the header
    back = PassageSide.unpack(blob)
    assert back.stems == side.stems and back.whole_tokens.shape == (7, 384) and back.sentences.shape == (3, 384)
    for original, read in ((side.whole_tokens, back.whole_tokens), (side.heading_tokens, back.heading_tokens),
                           (side.sentences, back.sentences), (side.whole[None], back.whole[None])):
        # each component within half a step of its row's scale (the row's largest magnitude / 127)
        bound = np.abs(original).max(axis=1, keepdims=True) / 254 + 1e-7
        assert (np.abs(read - original) <= bound).all()
        assert np.abs((read * original).sum(axis=1) - (original * original).sum(axis=1)).max() < 2e-3
    assert PassageSide.unpack(back.pack()).whole.tolist() == back.whole.tolist()  # packing is idempotent
    with pytest.raises(ValueError, match="do not match"):
        PassageSide.unpack(blob[:-2])
    with pytest.raises(ValueError, match="passage-side"):
        PassageSide.unpack(blob.replace(b"passage-side-2", b"passage-side-1"))


def test_prepared_passages_score_as_computed_ones_and_are_computed_once(tmp_path):
    embedder = Embedder()
    passages = [("Please arrive 15 minutes before your appointment.", "Arrival"),
                ("Parking is free in the garage for two hours.", "Parking")]
    stored = RelevanceModel(embedder, store=PassageSideStore(tmp_path / "sides.sqlite"))
    assert stored.prepare(passages) == 2 and stored.prepare(passages) == 0
    assert len(stored.store) == 2
    plain = RelevanceModel(embedder)
    assert stored.score("When should I get there?", passages) == plain.score("When should I get there?", passages)
    stored.close()


def test_closing_stops_the_background_preparation_after_the_passage_in_hand(tmp_path):
    import time

    from services.retrieval.relevance import PassagePreparation

    model = RelevanceModel(Embedder(), store=PassageSideStore(tmp_path / "sides.sqlite"))
    preparation = PassagePreparation(model)
    passages = [(f"Synthetic rule number {i}: arrive {i} minutes early. Bring your card.", "Rules") for i in range(400)]
    preparation.submit(passages)
    time.sleep(0.3)
    started = time.monotonic()
    preparation.close()
    assert time.monotonic() - started < 5
    assert 0 < len(model.store) < len(passages)  # what was computed is stored; the rest waits for the next start
    model.close()
    with pytest.raises(RuntimeError, match="closed"):
        model.store.missing(["x"])


def test_without_a_store_prepare_fills_the_memory_cache_and_counts_only_what_it_computed():
    model = RelevanceModel(Embedder())
    passages = [("Please arrive 15 minutes before your appointment.", "Arrival")]
    assert model.prepare(passages) == 1 and model.prepare(passages) == 0
