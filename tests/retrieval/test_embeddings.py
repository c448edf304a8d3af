"""citetrace.embeddings: the pinned model, explicit truncation/padding, pooling, the cache."""

from __future__ import annotations

import re

import numpy as np
import pytest
from citetrace.embeddings import (
    MODEL_SHA256,
    Embedder,
    EmbeddingCache,
    EmbeddingModelError,
    default_model_path,
    default_tokenizer_path,
)
from citetrace.identity import sha256_file

LONG_WORDS = [f"word{i}" for i in range(400)]  # each "wordN" is several WordPiece tokens


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    e = Embedder()
    e.warm_up()
    return e


def test_model_and_tokenizer_are_found_in_the_installed_packages():
    assert default_model_path().name == "model.onnx" and default_model_path().is_file()
    assert default_tokenizer_path().name == "tokenizer.json" and default_tokenizer_path().is_file()


def test_model_id_names_model_file_and_truncation():
    assert Embedder().model_id == f"all-MiniLM-L6-v2-int8@{MODEL_SHA256[:12]}:256"
    assert Embedder(max_tokens=128).model_id.endswith(":128")
    assert re.fullmatch(r"all-MiniLM-L6-v2-int8@[0-9a-f]{12}:256", Embedder().model_id)


def test_construction_loads_nothing():
    e = Embedder(model_path="/nonexistent/model.onnx")  # no error until warm-up
    with pytest.raises(EmbeddingModelError, match="not found"):
        e.warm_up()


def test_a_model_file_with_another_digest_is_refused(tmp_path):
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not the pinned model")
    with pytest.raises(EmbeddingModelError, match="sha256"):
        Embedder(model_path=fake).warm_up()
    with pytest.raises(EmbeddingModelError, match="sha256"):
        Embedder(model_sha256="0" * 64).warm_up()


def test_installed_model_matches_the_pin():
    assert sha256_file(default_model_path()) == MODEL_SHA256


def test_max_tokens_is_bounded_by_the_model_positions():
    with pytest.raises(ValueError):
        Embedder(max_tokens=513)
    with pytest.raises(ValueError):
        Embedder(max_tokens=0)


@pytest.mark.slow
def test_vectors_are_unit_length_float32_in_input_order(embedder):
    texts = ["Arrive 15 minutes before your appointment.", "x", "Cancellation fee applies within 24 hours."]
    vectors = embedder.embed(texts)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    one_by_one = np.stack([embedder.embed_one(t) for t in texts])
    assert np.allclose(vectors, one_by_one, atol=1e-5)  # padding in a batch changes nothing
    assert embedder.embed([]).shape == (0, 384)


@pytest.mark.slow
def test_similar_sentences_are_closer_than_unrelated_ones(embedder):
    a, b, c = embedder.embed(
        [
            "When should I arrive for my appointment?",
            "Please come 15 minutes early.",
            "The parking garage closes at night.",
        ]
    )
    assert float(a @ b) > float(a @ c) + 0.1


@pytest.mark.slow
def test_truncation_is_256_tokens_not_the_files_128(embedder):
    (ids,) = embedder.token_ids([" ".join(LONG_WORDS)])
    assert len(ids) == 256
    base = embedder.embed_one(" ".join(LONG_WORDS))
    changed_at_150 = LONG_WORDS[:]
    changed_at_150[50] = "hospital"  # word 50 is beyond token 128 but within 256
    assert not np.allclose(base, embedder.embed_one(" ".join(changed_at_150)), atol=1e-4)
    changed_at_end = LONG_WORDS[:]
    changed_at_end[390] = "hospital"  # far beyond token 256
    assert np.allclose(base, embedder.embed_one(" ".join(changed_at_end)), atol=1e-6)


@pytest.mark.slow
def test_padding_is_to_the_longest_text_in_the_batch(embedder):
    short, longer = embedder.token_ids(["short", "a slightly longer text here"])
    assert len(short) == len(longer) < 128


class CountingEmbedder:
    """Stands in for Embedder in cache tests: deterministic vectors, counts texts embedded."""

    def __init__(self, model_id: str = "fake@000:256") -> None:
        self.model_id, self.dimension, self.embedded = model_id, 4, []

    def embed(self, texts, batch_size=16):
        self.embedded.extend(texts)
        return np.array([[len(t), 1.0, 0.0, i] for i, t in enumerate(texts)], dtype=np.float32)


def test_cache_computes_each_text_once(tmp_path):
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    fake = CountingEmbedder()
    first = cache.embed_cached(fake, ["alpha", "beta", "alpha"])
    assert fake.embedded == ["alpha", "beta"]
    again = cache.embed_cached(fake, ["beta", "alpha", "gamma"])
    assert fake.embedded == ["alpha", "beta", "gamma"]
    assert np.array_equal(again[0], first[1]) and np.array_equal(again[1], first[0])
    assert np.array_equal(first[0], first[2])
    assert len(cache) == 3


def test_cache_is_keyed_by_model_id_and_persists(tmp_path):
    path = tmp_path / "cache.sqlite"
    EmbeddingCache(path).embed_cached(CountingEmbedder("m@1:256"), ["alpha"])
    other = CountingEmbedder("m@1:128")
    EmbeddingCache(path).embed_cached(other, ["alpha"])
    assert other.embedded == ["alpha"]  # another truncation is another vector space
    same = CountingEmbedder("m@1:256")
    EmbeddingCache(path).embed_cached(same, ["alpha"])
    assert same.embedded == []


@pytest.mark.slow
def test_cache_returns_what_the_embedder_computes(tmp_path, embedder):
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    texts = ["Bring your insurance card.", "Fasting is required for 8 hours."]
    assert np.array_equal(cache.embed_cached(embedder, texts), cache.embed_cached(embedder, texts))
    assert np.allclose(cache.embed_cached(embedder, texts), embedder.embed(texts), atol=1e-6)


def test_query_vector_cache_returns_the_models_vector_once_per_query(embedder):
    from citetrace.embeddings import QueryVectorCache

    cache = QueryVectorCache(size=2)
    query = "When should I arrive for my MRI?"
    first = cache.embed(embedder, query)
    np.testing.assert_allclose(first, embedder.embed([query])[0], atol=1e-6)
    # Whitespace runs are split by the tokenizer anyway: same key, same vector, no model call.
    again = cache.embed(embedder, "  When should I arrive   for my MRI? ")
    assert again is first and (cache.hits, cache.misses) == (1, 1)
    # Case is not folded (the key stays exact): another entry.
    cache.embed(embedder, query.upper())
    cache.embed(embedder, "Can I cancel tomorrow?")  # evicts the least recently used
    assert len(cache) == 2 and cache.misses == 3
    cache.embed(embedder, query)
    assert cache.misses == 4
    with pytest.raises(ValueError):
        first[0] = 1.0  # shared between callers: read-only


def test_query_vector_cache_of_size_zero_always_embeds(embedder):
    from citetrace.embeddings import QueryVectorCache

    cache = QueryVectorCache(size=0)
    cache.embed(embedder, "When should I arrive?")
    cache.embed(embedder, "When should I arrive?")
    assert len(cache) == 0 and cache.hits == 0


# -- integer kernels -------------------------------------------------------------------------------


def test_integer_kernels_are_another_vector_space_and_are_validated():
    assert Embedder(kernels="integer").model_id == f"all-MiniLM-L6-v2-int8@{MODEL_SHA256[:12]}:256:integer"
    assert Embedder(kernels="float").model_id == Embedder().model_id
    with pytest.raises(ValueError, match="kernels"):
        Embedder(kernels="int4")


def test_integer_kernel_graph_runs_every_int8_weight_matrix_on_dynamicquantizematmul():
    import onnx
    from citetrace.embeddings import integer_kernel_graph

    shipped = onnx.load(str(default_model_path()))
    int8 = {t.name for t in shipped.graph.initializer if t.data_type == onnx.TensorProto.INT8}
    rewritten = integer_kernel_graph(onnx.load(str(default_model_path())))
    ops = [n.op_type for n in rewritten.graph.node]
    integer = [n for n in rewritten.graph.node if n.op_type == "DynamicQuantizeMatMul"]
    # 6 layers x (query, key, value, attention output, two feed-forward) = 36 weight matrices; the two
    # int8 embedding tables are gathered, not multiplied, and stay as shipped.
    assert len(integer) == 36 and {n.input[1] for n in integer} <= int8
    assert ops.count("MatMul") == shipped_matmuls_between_activations(shipped)
    assert len(int8 - {n.input[1] for n in integer}) == 2


def shipped_matmuls_between_activations(model) -> int:
    """MatMuls of the shipped graph whose second input is not a cast int8 weight (attention scores)."""
    produced_by_cast = {o for n in model.graph.node if n.op_type == "Cast" for o in n.output}
    weights = {n.output[0] for n in model.graph.node if n.op_type == "Mul" and n.input[0] in produced_by_cast}
    return sum(1 for n in model.graph.node if n.op_type == "MatMul" and n.input[1] not in weights)


@pytest.mark.slow
def test_integer_kernels_keep_a_texts_vector_independent_of_its_batch_and_close_to_float(embedder):
    integer = Embedder(kernels="integer")
    texts = ["Arrive 15 minutes before your appointment.", "x", " ".join(LONG_WORDS[:60]),
             "Cancellation fee applies within 24 hours."]
    together = integer.embed(texts, batch_size=16)
    assert np.array_equal(together, np.stack([integer.embed_one(t) for t in texts]))
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    # Same weights, activations quantized per call: close to the float path, not equal to it.
    cosines = (together * embedder.embed(texts)).sum(axis=1)
    assert cosines.min() > 0.97 and not np.allclose(cosines, 1.0, atol=1e-6)
    pooled = np.stack([t.sentence for t in integer.encode_tokens(texts)])
    assert np.array_equal(pooled, together)
