"""Retrieval settings are typed, validated at start-up, and name what is wrong."""

from __future__ import annotations

import pytest
from citetrace.kit.settings import SettingsError, load_settings

from services.retrieval.bootstrap import build_spec
from services.retrieval.settings import PREFIX, Settings


def test_environment_overrides_are_typed():
    s = load_settings(Settings, PREFIX, {f"{PREFIX}FUSION_METHOD": "zscore", f"{PREFIX}VECTOR_WEIGHT": "0.7",
                                         f"{PREFIX}CHUNK_TARGET_CHARS": "500", f"{PREFIX}MAX_K": "20"})
    assert (s.fusion_method, s.vector_weight, s.chunk_target_chars, s.max_k) == ("zscore", 0.7, 500, 20)


@pytest.mark.parametrize(("name", "value", "message"), [
    ("FUSION_METHOD", "borda", "fusion_method"),
    ("BACKEND", "elastic", "backend"),
    ("CHUNK_HARD_LIMIT_CHARS", "10", "chunk_hard_limit_chars"),
    ("EMBEDDING_MAX_TOKENS", "1024", "embedding_max_tokens"),
    ("SQLITE_SYNCHRONOUS", "OFF", "sqlite_synchronous"),
    ("MAX_K", "500", "candidate_k"),
    ("EMBEDDING_KERNELS", "int4", "embedding_kernels"),
    ("EMBEDDING_THREADS", "-1", "embedding_threads"),
    ("RELEVANCE_CACHE_MB", "0", "relevance_cache_mb"),
    ("CHUNK_SIZE", "5", "unknown setting"),
])
def test_bad_settings_fail_at_start_up(name, value, message):
    with pytest.raises(SettingsError, match=message):
        load_settings(Settings, PREFIX, {f"{PREFIX}{name}": value})


def test_the_opensearch_backend_is_selected_by_configuration(tmp_path):
    # Building the spec touches no network: the node is reached at warm-up (tests/retrieval/opensearch/).
    spec = build_spec(Settings(port=0, metrics_port=-1, data_dir=tmp_path, backend="opensearch",
                               opensearch_hosts=("http://127.0.0.1:1",)))
    assert spec.servicer.core.backend.name == "opensearch"


def test_embedding_kernels_reach_the_embedder_and_the_relevance_model_shares_it():
    from citetrace.embeddings import Embedder

    from services.retrieval.bootstrap import make_judgments
    from services.retrieval.relevance import RelevanceWeights

    settings = load_settings(Settings, PREFIX, {f"{PREFIX}EMBEDDING_THREADS": "1", f"{PREFIX}RELEVANCE": "true"})
    assert settings.embedding_kernels == "integer"  # the default (SciFact nDCG@10 within 0.005 of float)
    search = Embedder(kernels=settings.embedding_kernels)
    judgments = make_judgments(settings, search)
    # One encoder for the search and the relevance model (a search encodes its question once), and the
    # shipped head was trained on exactly that embedder's vectors.
    assert judgments.gate is judgments.model and judgments.model.embedder is search
    assert RelevanceWeights().embedding_model == search.model_id
    assert load_settings(Settings, PREFIX, {}).rerank_backend == "embedded"  # the default
    off = make_judgments(load_settings(Settings, PREFIX, {f"{PREFIX}RERANK_BACKEND": "none"}), search)
    assert off.gate is None and off.model is None and off.preparation is None and off.reranker.name == "none"
    rerank_only = make_judgments(load_settings(Settings, PREFIX, {f"{PREFIX}RERANK_BACKEND": "embedded"}), search)
    assert rerank_only.gate is None and rerank_only.model is rerank_only.reranker.relevance
