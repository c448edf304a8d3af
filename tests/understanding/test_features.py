"""The clause features of the understanding heads: hashed n-grams that are the same in every process,
the spec recorded in the model file, and a model file the code cannot compute features for refused."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from services.orchestrator.understanding import features
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
    assert len(features.ngram_buckets("avbestille")) <= 28
    vector = features.ngram_vector("kan jeg avbestille timen")
    assert vector.shape == (features.NGRAM_DIM,)
    assert np.isclose(np.linalg.norm(vector), 1.0)
    # A typo shares most n-grams with the right spelling; an unrelated word shares few.
    right, typo, other = (set(features.ngram_buckets(w).tolist()) for w in ("avbestille", "avbestile", "parkering"))
    assert len(right & typo) > 3 * len(right & other)


def test_the_shipped_model_records_the_feature_spec_the_code_computes():
    heads = load_heads()
    assert heads.feature_spec == features.FEATURE_SPEC
    assert heads.boundary_w.shape == (3, 384 + features.NGRAM_DIM)
    assert heads.intent_w.shape == (5, 384 + features.NGRAM_DIM)


def test_a_model_file_of_another_feature_spec_or_width_is_refused():
    raw = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
    other = {**raw, "features": {"spec": "minilm-mean+something-else"}}
    with pytest.raises(ValueError, match="feature spec"):
        heads_from_dict(other)
    narrow = {**raw, "boundary": {**raw["boundary"], "w": encode_matrix(np.zeros((3, 384), dtype=np.float32))}}
    with pytest.raises(ValueError, match="do not fit"):
        heads_from_dict(narrow)
