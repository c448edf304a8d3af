"""Relevance: does this passage answer this question? (issue 15; seed 000: "ranking first is no
reason to be cited"). A decision of its own, separate from support and made before any claim is
offered, on every hit of a Search, so that every generator backend gets the same gate.

Why here, in retrieval, next to the rerank stage: it is a property of a (question, passage) pair,
the retrieval service already holds the query vector and the passages, and a gate in one generator
backend (the first round's word rule lived in the extractive generator) leaves every other backend
ungated. The orchestrator decides what the part does with it (a part whose best passage is not
relevant abstains with ABSTAINED_NO_EVIDENCE); the score and the model version are on every hit
and in the settings of the search, so the trace shows why.

Features (all from the shipped embedding model and the question's own words):
- the question's cosine to the passage (with its title and headings), to its best sentence and to its
  heading path, absolute and relative to the best of the other candidates of the same search;
- the question's KEY TERMS (content words minus question and politeness words): IDF-weighted lexical
  coverage by the passage (text, title, heading path) and semantic coverage, each key term aligned
  to its most similar contextual token of the passage (last_hidden_state max-sim), the weakest one
  and the IDF-weighted share of poorly aligned terms ("walk in" has nothing in an arrival rule);
and whether the passage is the best of the candidates by the similarity and by the coverage;
read by a one-hidden-layer perceptron learned on the tune half of tests/relevance/relevance_labelled.yaml and
the independent authors' tests/relevance/tune/, with the threshold of a stated operating point
(train_relevance.py; tests/relevance/heldout/ is only reported). Weights: model/relevance.json.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import queue
import re
import sqlite3
import struct
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np
from citetrace.idf import shipped as shipped_idf
from citetrace.kit.metrics import RELEVANCE_SIDES_PENDING
from citetrace.textnorm import STOPWORDS, fold, stem

log = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
DEFAULT_WEIGHTS = HERE / "model" / "relevance.json"

FEATURES = ("cos_passage", "cos_sentence", "cos_heading", "lex_cov", "sem_cov", "sem_min", "weak_share",
            "key_terms_log", "fused_lex_cov", "heading_cov", "rel_cos_sentence", "rel_cos_passage", "rel_fused_cov",
            "top_cos_sentence", "top_fused_cov", "top_cos_passage")

# Words that say what KIND of question it is or how it is asked, never what it is about.
QUESTION_WORDS = frozenset(["what", "when", "where", "which", "who", "whom", "whose", "why", "how", "can", "could", "would", "should", "will", "shall", "may", "might", "must", "do", "does", "did", "is", "are", "am", "was", "were", "be", "i", "i'm", "im", "me", "my", "mine", "we", "us", "our", "you", "your", "please", "tell", "know", "want", "like", "need", "any", "anything", "something", "there", "here", "just", "still", "ok", "okay", "hi", "hello", "thanks", "thank", "get", "go", "going", "come", "coming", "also", "really"])
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n\s*\n|\n(?=\s*[-*|#])")


def key_terms(question: str) -> list[str]:
    words = re.findall(r"[\w'’-]+", fold(question))
    return [w for w in words if w not in STOPWORDS and w not in QUESTION_WORDS and not w.isdigit() and len(w) > 1]


# No raw embedding dimensions go into the head, only the named features. Relevance-2026.12.06.3 also
# read the interaction of the question's vector with the passage's best sentence's (q*s, |q-s|, 768
# values); it learned the training passages themselves: on held-out questions over the sample corpus
# (passages it was trained on) AUROC 0.94 against 0.81 without, on a tenant's documents it never saw
# 0.934 against 0.942, and it scored an exact match ("Is Dr. Diaz Fictional taking new patients?"
# against her profile, the best candidate by every named feature) 0.10. Documents in use are documents
# nobody labelled: the head must read how question and passage relate, not which passage it is.


def best_index(values: list[float]) -> int:
    """The index of the highest value, the first one on a tie (rank order decides); -1 for none."""
    return max(range(len(values)), key=lambda i: (values[i], -i), default=-1)


def relevant_flags(scores: list[float], threshold: float, best_threshold: float) -> list[bool]:
    """The relevance decision on one search's candidates: at the pair operating point (precision
    first), or the best candidate at the recall-first floor — a question usually has one answer among
    the candidates, so the best of them needs less proof than any other (train_relevance.py)."""
    best = best_index(scores)
    return [s >= threshold or (i == best and s >= best_threshold) for i, s in enumerate(scores)]


class RelevanceWeights:
    """A one-hidden-layer perceptron (ReLU, logistic output) over the standardized named features and
    nothing else, trained by train_relevance.py (scikit-learn's MLPClassifier, weights copied here)."""

    def __init__(self, path: Path | str | None = None) -> None:
        path = Path(path or DEFAULT_WEIGHTS)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            self.version = str(data["version"])
            # The embedder whose vectors the head was trained on (absent in files before it was recorded).
            self.embedding_model = str(data.get("embedding_model", ""))
            features = tuple(data["features"])
            interaction = data.get("interaction")
            self.mean = np.array(data["mean"], dtype=np.float64)
            self.scale = np.array(data["scale"], dtype=np.float64)
            self.hidden = np.array(data["hidden_weights"], dtype=np.float64)
            self.hidden_bias = np.array(data["hidden_bias"], dtype=np.float64)
            self.output = np.array(data["output_weights"], dtype=np.float64)
            self.output_bias = float(data["output_bias"])
            self.threshold = float(data["threshold"])
            self.best_threshold = float(data["best_threshold"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"relevance weights {path}: {exc}") from exc
        if features != FEATURES or interaction is not None:
            extra = f" + {interaction}" if interaction is not None else ""
            raise ValueError(f"relevance weights {path} were trained on {features}{extra}; this code "
                             f"computes {FEATURES}: retrain (make train-relevance)")
        inputs = len(FEATURES)
        if (self.hidden.ndim != 2 or self.hidden.shape[0] != inputs or self.mean.shape != (inputs,)
                or self.scale.shape != (inputs,) or self.hidden_bias.shape != (self.hidden.shape[1],)
                or self.output.shape != (self.hidden.shape[1],)):
            raise ValueError(f"relevance weights {path}: layer shapes do not fit together")
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"relevance weights {path}: threshold must be in [0, 1]")
        if not 0.0 <= self.best_threshold <= self.threshold:
            raise ValueError(f"relevance weights {path}: best_threshold must be in [0, threshold]")

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """x: (candidates, inputs) -> the probability of each."""
        if x.shape[1] != self.mean.shape[0]:
            raise ValueError(f"relevance input has {x.shape[1]} values, the weights expect {self.mean.shape[0]}")
        h = np.maximum(((x - self.mean) / self.scale) @ self.hidden + self.hidden_bias, 0.0)
        z = np.clip(h @ self.output + self.output_bias, -40.0, 40.0)
        return 1.0 / (1.0 + np.exp(-z))


class _LRU:
    """Least recently used entries within a byte budget (a passage's token vectors are up to
    256 x 384 floats: a count alone would let a long-document corpus take gigabytes)."""

    def __init__(self, budget_bytes: int) -> None:
        if budget_bytes <= 0:
            raise ValueError("the relevance passage cache needs a positive budget")
        self.budget = budget_bytes
        self.used = 0
        self.items: OrderedDict = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key):
        with self.lock:
            entry = self.items.get(key)
            if entry is None:
                return None
            self.items.move_to_end(key)
            return entry[0]

    def put(self, key, value, size: int) -> None:
        with self.lock:
            old = self.items.pop(key, None)
            if old is not None:
                self.used -= old[1]
            self.items[key] = (value, size)
            self.used += size
            while self.used > self.budget and len(self.items) > 1:
                _, (_, dropped) = self.items.popitem(last=False)
                self.used -= dropped


# What a stored passage side holds and how it is packed: a stored side of another version is never read.
PASSAGE_SIDE_VERSION = "passage-side-2"
EMBEDDING_WIDTH = 384


@dataclasses.dataclass(frozen=True)
class PassageSide:
    """What the features read of a passage, computed once per (text, context): the contextual token
    vectors and pooled vector of the passage read under its title and headings, the same of the
    headings alone, each sentence's vector (at most 24), and the stems of its words."""

    whole_tokens: np.ndarray
    whole: np.ndarray
    heading_tokens: np.ndarray
    heading: np.ndarray
    sentences: np.ndarray
    stems: frozenset[str]

    def pack(self) -> bytes:
        """int8 rows, each with its own float32 scale (its largest magnitude / 127), behind a small JSON
        header: about 0.4 KB per token, and read back with one int8-to-float conversion (float16's
        conversion took 6 of a SciFact search's 22 ms). The vectors are unit rows, so a component is
        off by at most 1/254 of the row's largest (cosines by about 0.001). Features are always
        computed from the unpacked form, so a side read from the store and one computed in the search
        give the same scores, and the head is trained on that form (train_relevance.py)."""
        arrays = (self.whole_tokens, self.whole[None, :], self.heading_tokens, self.heading[None, :], self.sentences)
        header = json.dumps({"v": PASSAGE_SIDE_VERSION, "rows": [a.shape[0] for a in arrays],
                             "stems": sorted(self.stems)}, ensure_ascii=False).encode("utf-8")
        matrix = np.concatenate(arrays).astype(np.float32)
        scales = np.maximum(np.abs(matrix).max(axis=1), 1e-12) / 127.0
        body = np.clip(np.rint(matrix / scales[:, None]), -127, 127).astype(np.int8)
        return struct.pack("<I", len(header)) + header + scales.astype("<f4").tobytes() + body.tobytes()

    @classmethod
    def unpack(cls, blob: bytes) -> PassageSide:
        (length,) = struct.unpack_from("<I", blob)
        header = json.loads(blob[4:4 + length].decode("utf-8"))
        if header.get("v") != PASSAGE_SIDE_VERSION:
            raise ValueError(f"a passage side of {header.get('v')!r}, not {PASSAGE_SIDE_VERSION}")
        rows = header["rows"]
        total = sum(rows)
        if len(blob) != 4 + length + total * (4 + EMBEDDING_WIDTH):
            raise ValueError("a passage side's arrays do not match its header")
        scales = np.frombuffer(blob, dtype="<f4", count=total, offset=4 + length)
        body = np.frombuffer(blob, dtype=np.int8, offset=4 + length + 4 * total).reshape(total, EMBEDDING_WIDTH)
        matrix = body.astype(np.float32)
        matrix *= scales[:, None]
        parts = np.split(matrix, np.cumsum(rows)[:-1])
        return cls(parts[0], parts[1][0], parts[2], parts[3][0], parts[4], frozenset(header["stems"]))

    @property
    def nbytes(self) -> int:
        return (self.whole_tokens.nbytes + self.heading_tokens.nbytes + self.sentences.nbytes
                + 2 * EMBEDDING_WIDTH * 4 + 64 * len(self.stems))


class PassageSideStore:
    """Passage sides in a SQLite file, keyed by a digest of the embedding model, PASSAGE_SIDE_VERSION,
    the context and the text. Derived data like the embedding cache: losing it costs a recomputation,
    nothing else (so synchronous NORMAL). Thread-safe (one connection behind a lock)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._closed = False

    @property
    def _db(self) -> sqlite3.Connection:
        """Opened on first use (building the service touches no file); called with the lock held."""
        if self._closed:
            raise RuntimeError(f"the passage side store {self.path} is closed")
        if self._connection is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(str(self.path), check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("CREATE TABLE IF NOT EXISTS passage_sides (digest TEXT PRIMARY KEY, side BLOB NOT NULL)")
            db.commit()
            self._connection = db
        return self._connection

    def get_many(self, digests: list[str]) -> dict[str, bytes]:
        return dict(self._select("digest, side", digests))

    def missing(self, digests: list[str]) -> set[str]:
        return set(digests) - {row[0] for row in self._select("digest", digests)}

    def _select(self, columns: str, digests: list[str]) -> list[tuple]:
        rows: list[tuple] = []
        with self._lock:
            for start in range(0, len(digests), 500):  # under SQLite's bound-parameter limit
                chunk = digests[start:start + 500]
                rows += self._db.execute(
                    f"SELECT {columns} FROM passage_sides WHERE digest IN ({','.join('?' * len(chunk))})", chunk)
        return rows

    def put_many(self, sides: dict[str, bytes]) -> None:
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO passage_sides VALUES (?, ?)", list(sides.items()))
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM passage_sides").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._connection is not None:
                self._connection.close()
                self._connection = None


class PassagePreparation:
    """Computes passage sides in the background after indexing (one worker thread), so that neither the
    IngestDocument call nor the first search over a new passage pays for them. Derived data: a failure
    is logged and the search computes the side itself."""

    def __init__(self, model: RelevanceModel) -> None:
        self.model = model
        self.computed = 0
        self._queue: queue.Queue[list[tuple[str, str]] | None] = queue.Queue()
        self._pending = 0
        self._passages_pending = 0  # exported as citetrace_retrieval_passage_sides_pending
        self._idle = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def submit(self, passages: list[tuple[str, str]]) -> None:
        if not passages:
            return
        with self._idle:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="relevance-passage-sides", daemon=True)
                self._thread.start()
            self._pending += 1
            self._passages_pending += len(passages)
            RELEVANCE_SIDES_PENDING.labels("retrieval").set(self._passages_pending)
        self._queue.put(list(passages))

    def wait_idle(self, timeout: float | None = None) -> bool:
        """True once everything submitted has been prepared (tests, benchmarks)."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    def close(self) -> None:
        """Stops after the passage being encoded (what is left is computed after the next start)."""
        self._stop.set()
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout=10)

    def _run(self) -> None:
        while (batch := self._queue.get()) is not None:
            try:
                if not self._stop.is_set():
                    self.computed += self.model.prepare(batch, self._stop)
            except Exception:  # derived data: the search computes what is missing
                log.exception("retrieval: preparing %d relevance passage sides failed", len(batch))
            finally:
                with self._idle:
                    self._pending -= 1
                    self._passages_pending -= len(batch)
                    RELEVANCE_SIDES_PENDING.labels("retrieval").set(self._passages_pending)
                    self._idle.notify_all()


class RelevanceModel:
    """question x passages -> calibrated probabilities that each passage answers the question."""

    def __init__(self, embedder, weights: RelevanceWeights | None = None, cache_mb: int = 256,
                 store: PassageSideStore | None = None, question_cache: bool = True) -> None:
        self.embedder = embedder
        self._weights = weights
        self.idf = shipped_idf()
        self._passages = _LRU(cache_mb * 1024 * 1024)
        # Repeated questions' token vectors (off with the search's query-vector cache: a search hands its
        # one encoding to the rerank and the gate itself, RetrievalCore._encode_query).
        self._questions = _LRU(4 * 1024 * 1024) if question_cache else None
        self.store = store

    @property
    def weights(self) -> RelevanceWeights:
        if self._weights is None:  # loaded on first use: computing features needs no weights
            self._weights = RelevanceWeights()
        return self._weights

    @property
    def version(self) -> str:
        return self.weights.version

    @property
    def threshold(self) -> float:
        return self.weights.threshold

    @property
    def best_threshold(self) -> float:
        return self.weights.best_threshold

    def warm_up(self) -> None:
        self.embedder.warm_up()
        trained = self.weights.embedding_model
        if trained and trained != self.embedder.model_id:
            log.warning("relevance %s was trained on %s vectors and reads %s ones: retrain for this embedder "
                        "(make train-relevance)", self.version, trained, self.embedder.model_id)

    def close(self) -> None:
        if self.store is not None:
            self.store.close()

    def _digest(self, text: str, context: str) -> str:
        key = "\0".join((self.embedder.model_id, PASSAGE_SIDE_VERSION, context, text))
        return hashlib.sha256(key.encode("utf-8")).hexdigest()

    def _encode(self, text: str, context: str) -> bytes:
        """The passage side, packed: the encoder over the passage, its headings and each sentence. One
        text per encoder call: in a batch every text is padded to the longest, and the whole passage is
        up to 256 tokens against a sentence's 20-40 (a SciFact abstract: 210 ms of CPU instead of 960 ms
        in one batch of 26; the vectors are identical)."""
        sentences = [s for s in _SENTENCE.split(text) if s.strip()][:24] or [text]
        encoded = self.embedder.encode_tokens([f"{context}\n{text}".strip(), context or text, *sentences],
                                              batch_size=1)
        whole, heading, parts = encoded[0], encoded[1], encoded[2:]
        stems = frozenset(stem(w) for w in re.findall(r"[\w'’-]+", fold(f"{context} {text}")))
        return PassageSide(whole.vectors, whole.sentence, heading.vectors, heading.sentence,
                           np.stack([p.sentence for p in parts]), stems).pack()

    def _sides(self, passages: list[tuple[str, str]]) -> list[PassageSide]:
        """Each passage's side from the in-memory cache, else the store (written when it was indexed;
        one read for all), else computed (and stored)."""
        sides = [self._passages.get(key) for key in passages]
        absent = {key: self._digest(*key) for key, side in zip(passages, sides, strict=True) if side is None}
        if absent:
            blobs = self.store.get_many(list(absent.values())) if self.store is not None else {}
            computed: dict[str, bytes] = {}
            fresh: dict[tuple[str, str], PassageSide] = {}
            for key, digest in absent.items():
                blob = blobs.get(digest)
                if blob is None:
                    blob = computed[digest] = self._encode(*key)
                fresh[key] = PassageSide.unpack(blob)
                self._passages.put(key, fresh[key], fresh[key].nbytes + len(key[0]) + len(key[1]))
            if computed and self.store is not None:
                self.store.put_many(computed)
            sides = [side or fresh[key] for key, side in zip(passages, sides, strict=True)]
        return sides

    def prepare(self, passages: list[tuple[str, str]], stop: threading.Event | None = None) -> int:
        """Computes and stores the side of every passage (text, context) the store lacks, so that no
        search pays for it (the retrieval core calls it after indexing); returns how many it computed.
        Without a store the in-memory cache is filled instead (up to its budget). `stop` set: returns
        after the passage being encoded, what it computed stored."""
        if self.store is None:
            absent = [key for key in passages if self._passages.get(key) is None]
            self._sides(absent)
            return len(absent)
        digests = {self._digest(text, context): (text, context) for text, context in passages}
        missing = self.store.missing(list(digests))
        computed: dict[str, bytes] = {}
        done = 0
        for digest in missing:
            if stop is not None and stop.is_set():
                break
            computed[digest] = self._encode(*digests[digest])
            done += 1
            if len(computed) >= 32:
                self.store.put_many(computed)
                computed = {}
        if computed:
            self.store.put_many(computed)
        return done

    def question(self, text: str):
        """The question's token vectors and pooled vector (one encoder run, remembered): the search's
        query vector is this pooled vector when the rerank or the gate will read the question (the
        retrieval core), so a search encodes its question once."""
        if self._questions is None:
            return self.embedder.encode_tokens([text])[0]
        q = self._questions.get(text)
        if q is None:
            q = self.embedder.encode_tokens([text])[0]
            self._questions.put(text, q, q.vectors.nbytes + 4 * EMBEDDING_WIDTH + len(text))
        return q

    def features(self, question: str, passages: list[tuple[str, str]], encoded=None) -> list[dict[str, float]]:
        """The named features of each passage (text, context = title and heading path, in rank order),
        from one encoder run for the question (`encoded`: that run's output, when the caller has it)."""
        q = encoded if encoded is not None else self.question(question)
        terms = key_terms(question)
        spans = [m.span() for m in re.finditer(r"[\w'’-]+", question)]
        words = [fold(question[s:e]) for s, e in spans]
        rows = []
        term_vectors, term_idf, term_stems = [], [], []
        for term in dict.fromkeys(terms):
            if term not in words:
                continue
            s, e = spans[words.index(term)]
            pieces = [j for j, (a, b) in enumerate(q.offsets) if a >= s and b <= e and b > a]
            if not pieces:
                continue
            v = q.vectors[pieces].mean(axis=0)
            term_vectors.append(v / max(float(np.linalg.norm(v)), 1e-12))
            term_idf.append(self.idf.idf(stem(term)))
            term_stems.append(stem(term))
        tv = np.stack(term_vectors) if term_vectors else None
        weights = np.array(term_idf) / sum(term_idf) if term_idf else None
        for side in self._sides(passages):
            stems, sentence_matrix = side.stems, side.sentences
            by_sentence = sentence_matrix @ q.sentence
            f = {"cos_passage": float(side.whole @ q.sentence),
                 "cos_sentence": float(by_sentence.max()),
                 "cos_heading": float(side.heading @ q.sentence),
                 "key_terms_log": math.log1p(len(term_stems))}
            if tv is None:
                f.update(lex_cov=1.0, sem_cov=1.0, sem_min=1.0, weak_share=0.0, fused_lex_cov=1.0, heading_cov=1.0)
            else:
                lexical = np.array([1.0 if s in stems else 0.0 for s in term_stems])
                sims = (tv @ side.whole_tokens.T).max(axis=1)
                match = np.maximum(lexical, sims)
                f.update(lex_cov=float(lexical @ weights), sem_cov=float(sims @ weights), sem_min=float(match.min()),
                         weak_share=float(weights[match < 0.6].sum()), fused_lex_cov=float(match @ weights),
                         heading_cov=float((tv @ side.heading_tokens.T).max(axis=1) @ weights))
            rows.append(f)
        # Relative to the other candidates of the same question: the best of a search is usually the
        # answer when any is (the absolute features catch the questions that none answers).
        for name, base in (("rel_cos_sentence", "cos_sentence"), ("rel_cos_passage", "cos_passage"),
                           ("rel_fused_cov", "fused_lex_cov")):
            top = max(r[base] for r in rows)
            for r in rows:
                r[name] = r[base] - top
        # Whether it is THE best candidate by each signal (ties: the first in rank order): the answer is
        # usually one passage, and which one beats a margin that varies with the question's wording.
        for name, base in (("top_cos_sentence", "cos_sentence"), ("top_fused_cov", "fused_lex_cov"),
                           ("top_cos_passage", "cos_passage")):
            best = best_index([r[base] for r in rows])
            for i, r in enumerate(rows):
                r[name] = 1.0 if i == best else 0.0
        return rows

    def inputs(self, question: str, passages: list[tuple[str, str]], encoded=None) -> np.ndarray:
        """(candidates, inputs): the named features in FEATURES order."""
        if not passages:
            return np.zeros((0, len(FEATURES)))
        return np.array([[r[n] for n in FEATURES] for r in self.features(question, passages, encoded)])

    def score(self, question: str, passages: list[tuple[str, str]], encoded=None) -> list[float]:
        if not passages:
            return []
        return [round(float(p), 4) for p in self.weights.probabilities(self.inputs(question, passages, encoded))]

    def judge(self, question: str, passages: list[tuple[str, str]], encoded=None) -> list[tuple[float, bool]]:
        """(probability, relevant) per passage, relevant as relevant_flags decides."""
        scores = self.score(question, passages, encoded)
        return list(zip(scores, relevant_flags(scores, self.threshold, self.best_threshold), strict=True))
