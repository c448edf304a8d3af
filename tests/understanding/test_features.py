"""The clause features of the understanding heads: hashed n-grams that are the same in every process,
the spec recorded in the model file, and a model file the code cannot compute features for refused."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from citetrace import gloss

from services.orchestrator.understanding import features
from services.orchestrator.understanding.encoder import Encoded
from services.orchestrator.understanding.model import MODEL_FILE, encode_matrix, heads_from_dict, load_heads


def test_ngram_buckets_are_fixed_values_not_salted_hashes():
    # crc32 buckets: the same in every process (Python's str hash is salted per process).
    code = ("from services.orchestrator.understanding.features import ngram_buckets; "
            "print(ngram_buckets('Kan jeg avbestille timen?').tolist())")
    runs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert runs == {f"{features.ngram_buckets('Kan jeg avbestille timen?').tolist()}\n"}
    assert features.ngram_buckets("avbestille").tolist() == features.ngram_buckets("AVBESTILLE").tolist()
    # " avbestille ": 10 + 9 + 8 character 3-, 4- and 5-grams and one word; no bigram (one word).
    assert len(features.ngram_buckets("avbestille", gloss=False)) <= 28
    vector = features.ngram_vector("kan jeg avbestille timen")
    assert vector.shape == (features.NGRAM_DIM,)
    assert np.isclose(np.linalg.norm(vector), 1.0)
    # A typo shares most n-grams with the right spelling; an unrelated word shares few.
    right, typo, other = (set(features.ngram_buckets(w).tolist()) for w in ("avbestille", "avbestile", "parkering"))
    assert len(right & typo) > 3 * len(right & other)


def test_the_shipped_model_records_the_feature_spec_the_code_computes():
    heads = load_heads()
    assert heads.feature_spec == features.FEATURE_SPEC
    width = 4 * 384 + features.NGRAM_DIM
    assert features.WIDTHS[heads.feature_spec] == width
    for classes, out_w, hidden_w in ((3, heads.boundary_w, heads.boundary_hidden_w),
                                     (5, heads.intent_w, heads.intent_hidden_w)):
        if hidden_w is None:
            assert out_w.shape == (classes, width)
        else:
            assert hidden_w.shape[0] == width
            assert out_w.shape == (classes, hidden_w.shape[1])


def test_the_max_view_keeps_one_strong_token_the_mean_dilutes():
    hidden = np.zeros((5, 384), dtype=np.float32)
    hidden[1:4, 0] = 1.0
    hidden[2, 1] = 9.0  # one token strong on dimension 1
    encoded = Encoded("ab cd ef", hidden, ((0, 0), (0, 2), (3, 5), (6, 8), (0, 0)),
                      (True, False, False, False, True))
    vector = features.clause_vector(features.with_gloss(encoded, _must_not_encode))
    assert vector.shape == (features.WIDTHS[features.FEATURE_SPEC],)
    mean, top = vector[:384], vector[384:768]
    assert top[1] / top[0] > mean[1] / mean[0] > 1.0
    # The span of one token: its own values; the old spec has no max view.
    assert np.allclose(features.clause_vector(features.with_gloss(encoded, _must_not_encode), 3, 5)[384:768],
                       encoded.pool(3, 5))
    with pytest.raises(ValueError, match="gloss"):
        features.clause_vector(encoded)
    assert features.clause_vector(encoded, spec=features.MEAN_NGRAM_SPEC).shape == (384 + features.NGRAM_DIM,)


def test_per_language_thresholds_and_a_hidden_layer_are_read_from_the_model_file():
    raw = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
    thresholds = {**raw["boundary"]["thresholds"], "emergency": 0.6, "boundary": 0.7,
                  "languages": {"nb": {"emergency": 0.5, "boundary": 0.55}}}
    heads = heads_from_dict({**raw, "boundary": {**raw["boundary"], "thresholds": thresholds}})
    assert heads.boundary_thresholds.for_language("nb") == (0.5, 0.55)
    assert heads.boundary_thresholds.for_language("en") == (0.6, 0.7)
    assert heads.boundary_thresholds.for_language("und") == (0.6, 0.7)
    width = features.WIDTHS[features.FEATURE_SPEC]
    rng = np.random.default_rng(0)
    w1, w2 = rng.normal(size=(width, 4)).astype(np.float32), rng.normal(size=(3, 4)).astype(np.float32)
    hidden = {"w": encode_matrix(w1, half=True), "b": [0.0, 0.1, -0.1, 0.2]}
    mlp = heads_from_dict({**raw, "boundary": {**raw["boundary"], "hidden": hidden, "w": encode_matrix(w2),
                                               "b": [0.0, 0.0, 0.0]}})
    x = rng.normal(size=width).astype(np.float32)
    x[rng.random(width) < 0.9] = 0.0  # mostly zero, as the n-gram view is: only non-zero rows are read
    logits = w2 @ np.maximum(x @ w1.astype(np.float16).astype(np.float32) + np.array(hidden["b"]), 0.0)
    expected = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    assert np.allclose(list(mlp.boundary_scores(x).values()), expected, atol=1e-4)
    misfit = {**raw["boundary"], "hidden": hidden, "w": encode_matrix(np.zeros((3, 5), dtype=np.float32))}
    with pytest.raises(ValueError, match="hidden layer"):
        heads_from_dict({**raw, "boundary": misfit})


def test_a_model_file_of_another_feature_spec_or_width_is_refused():
    raw = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
    other = {**raw, "features": {"spec": "minilm-mean+something-else"}}
    with pytest.raises(ValueError, match="feature spec"):
        heads_from_dict(other)
    narrow = {**raw, "boundary": {**{k: v for k, v in raw["boundary"].items() if k != "hidden"},
                                  "w": encode_matrix(np.zeros((3, 384), dtype=np.float32))}}
    with pytest.raises(ValueError, match="do not fit"):
        heads_from_dict(narrow)


def test_a_bokmal_word_shares_the_word_feature_of_its_english_gloss():
    def word_bucket(word):
        return int(features.zlib.crc32(("w" + word).encode("utf-8")) % features.NGRAM_DIM)

    assert gloss.gloss_word("avbestille")
    english = gloss.gloss_word("avbestille")[0]
    assert word_bucket(english) in features.ngram_buckets("kan jeg avbestille timen")
    assert word_bucket(english) not in features.ngram_buckets("kan jeg avbestille timen", gloss=False)
    # an English clause gains nothing: its words are no glossary entries
    assert features.ngram_buckets("can I cancel").tolist() == features.ngram_buckets("can I cancel", gloss=False).tolist()


def test_a_compound_the_glossary_lacks_is_read_as_two_parts_it_has():
    table = gloss.glossary()[1]
    head, tail = "blodtrykk", "medisin"
    assert head in table and tail in table and "blodtrykksmedisinen" not in table
    assert gloss.gloss_word("blodtrykksmedisin") == table[head] + table[tail]
    assert gloss.gloss_word("xqzvwk") == ()


def _must_not_encode(text):
    raise AssertionError(f"an English text needs no second encoder run: {text!r}")


def test_the_gloss_replaces_glossary_words_and_maps_every_offset_into_it():
    text = "Kan hodepinen min være farlig? Hvor er parkeringen"
    glossed, mapping = gloss.gloss_text(text)
    assert len(mapping) == len(text) + 1 and mapping[-1] == len(glossed)
    assert list(mapping) == sorted(mapping)
    second = text.index("Hvor")
    first_gloss, second_gloss = glossed[mapping[0]:mapping[second]], glossed[mapping[second]:]
    assert "headache" in first_gloss and "parking" not in first_gloss
    assert "parking" in second_gloss and "headache" not in second_gloss
    # an English text is its own gloss, and reading it costs no second encoder run
    assert gloss.gloss_text("Can I park there?") == ("Can I park there?", tuple(range(18)))
    hidden = np.zeros((3, 384), dtype=np.float32)
    encoded = Encoded("Can", hidden, ((0, 0), (0, 3), (0, 0)), (True, False, True))
    assert features.with_gloss(encoded, _must_not_encode).gloss[0] is encoded


def test_the_feature_spec_names_the_glossary_it_was_computed_with():
    digest, _ = gloss.glossary()
    assert digest in features.FEATURE_SPEC
    assert features.FEATURE_SPEC != features.MEAN_MAX_NGRAM_SPEC
    # the gloss view adds the gloss's mean and max pooled vectors to the older spec's width
    assert features.WIDTHS[features.FEATURE_SPEC] == features.WIDTHS[features.MEAN_MAX_NGRAM_SPEC] + 2 * 384


def test_a_bokmal_word_that_is_also_english_is_glossed_only_in_a_bokmal_question():
    only = gloss.bokmal_only_glossary()
    assert only["min"] and only["i"] and "min" not in gloss.glossary()[1]
    assert gloss.gloss_word("min") == ()  # the word features never gloss it
    bokmal, _ = gloss.gloss_text("Kan hodepinen min være farlig?")
    assert " my " in f" {bokmal} "
    english = "Is it fine to wait 5 min in the car?"
    assert gloss.gloss_text(english)[0] == english
    # the caller's language reading decides, when it has one (the analyzer passes its own)
    assert gloss.gloss_text("5 min", "nb")[0] == "5 my"
    assert gloss.gloss_text("Kan hodepinen min være farlig?", "en")[0].split()[2] == "min"
