"""Does the search put a passage that answers the question first? The labelled relevance questions asked
of each tenant's whole passage pool, with and without the embedded rerank (issue 15 point 3: a rerank
measured on text nobody here wrote, not only on SciFact).

    PYTHONPATH=libs:. .venv/bin/python bench/relevance_search.py [--json bench/results/relevance-search.json]
    make bench-relevance-search

Each tenant's pool: the sample corpus's approved passages for the sample tenants, and for the tenants
the independent authors wrote themselves, every passage their labelled files define. Each passage is
indexed as the retrieval service indexes it (heading path and text, the service's embedder and fusion
defaults); a question's search fuses the lexical and vector lists, keeps the top RERANK_DEPTH, and the
embedded rerank (services/retrieval/rerank.EmbeddedRerank, the shipped relevance model and weight)
reorders them. Only answerable questions count (some labelled passage answers them); a hit answers
when its text is one of the question's labelled relevant passages. Unlabelled passages of the pool
count as not answering, so the figures are lower bounds. Per split: the test half of
relevance_labelled.yaml, the independent tune files (the relevance head was trained on their pairs, not
on these searches) and the held-out files (never trained on; reported in aggregate only).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from datetime import UTC, datetime  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import yaml  # noqa: E402
from citetrace.embeddings import Embedder  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from services.retrieval.core import embedding_text  # noqa: E402
from services.retrieval.index import EmbeddedIndex, IndexedPassage, ScopeFilter, SearchQuery  # noqa: E402
from services.retrieval.relevance import RelevanceModel  # noqa: E402
from services.retrieval.rerank import EmbeddedRerank, reorder  # noqa: E402
from services.retrieval.settings import Settings  # noqa: E402
from services.retrieval.train_relevance import corpus_passages, labelled_files, labelled_pairs  # noqa: E402

EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


def tenant_pools() -> dict[str, list[dict]]:
    """tenant -> its passages ({text, context, heading}), deduplicated by text."""
    pools: dict[str, dict[str, dict]] = {}
    for p in corpus_passages():
        pools.setdefault(p["tenant"], {})[p["text"]] = {"text": p["text"], "heading": p["heading"],
                                                        "context": f"{p['title']} {p['heading']}".strip()}
    for path, _ in labelled_files():
        for ref in (yaml.safe_load(path.read_text(encoding="utf-8")).get("passages") or {}).values():
            if "text" in ref:
                heading = ref.get("heading", "")
                pools.setdefault(ref["tenant"], {})[ref["text"]] = {
                    "text": ref["text"], "heading": heading, "context": f"{ref.get('title', '')} {heading}".strip()}
    return {tenant: list(by_text.values()) for tenant, by_text in pools.items()}


def build_indexes(pools: dict[str, list[dict]], embedder: Embedder) -> dict[str, EmbeddedIndex]:
    indexes = {}
    for tenant, pool in pools.items():
        vectors = embedder.embed([embedding_text(p["heading"], p["text"]) for p in pool])
        index = EmbeddedIndex()
        report = index.upsert([
            IndexedPassage(passage_id=str(i), tenant_id=tenant, document_id=f"d{i}", version_id="v1",
                           source_class="policy", text=embedding_text(p["heading"], p["text"]), roles=(),
                           location_scope=(), intents=(), locale="en", status="approved", valid_from=EPOCH,
                           vector=vector)
            for i, (p, vector) in enumerate(zip(pool, vectors, strict=True))])
        if report.errors:
            raise SystemExit(f"indexing {tenant} failed: {report.errors[:3]}")
        indexes[tenant] = index
    return indexes


def first_answering_rank(order: list[int], answering: set[int]) -> int | None:
    return next((rank for rank, i in enumerate(order, start=1) if i in answering), None)


def summary(ranks: list[int | None]) -> dict:
    n = len(ranks)
    return {"questions": n,
            "top1_answers": round(sum(r == 1 for r in ranks) / n, 4),
            "top3_has_answer": round(sum(r is not None and r <= 3 for r in ranks) / n, 4),
            "mrr@10": round(float(np.mean([1.0 / r if r is not None and r <= 10 else 0.0 for r in ranks])), 4)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=REPO / "bench" / "results" / "relevance-search.json")
    args = parser.parse_args()
    settings = Settings()
    embedder = Embedder(max_tokens=settings.embedding_max_tokens, kernels=settings.embedding_kernels)
    embedder.warm_up()
    pools = tenant_pools()
    indexes = build_indexes(pools, embedder)
    fusion = settings.fusion()
    relevance = RelevanceModel(embedder)
    rerank = EmbeddedRerank(relevance, settings.rerank_weight)

    pairs = labelled_pairs(("tune", "test", "heldout"))
    questions: dict[str, dict] = {}
    for pair in pairs:
        q = questions.setdefault(pair["question_id"], {"question": pair["question"], "tenant": pair["tenant"],
                                                        "split": pair["split"], "answers": set(), "texts": set()})
        q["texts"].add(pair["text"])
        if pair["label"]:
            q["answers"].add(pair["text"])
    # As train_relevance's heldout_by_documents: a held-out question over passages the head was trained on
    # (any tune pair with the same text), or over documents it never saw (what a deployment meets).
    trained_texts = {p["text"] for p in pairs if p["split"] == "tune"}
    ranks: dict[str, dict[str, list]] = {}
    for q in questions.values():
        pool = pools[q["tenant"]]
        answering = {i for i, p in enumerate(pool) if p["text"] in q["answers"]}
        if not answering:
            continue  # unanswerable, or its answer is not in the pool
        scope = ScopeFilter(q["tenant"], (), (), (), None, datetime.now(UTC))
        encoded = relevance.question(q["question"])  # one encoder run: the query vector and the rerank's input
        hits = indexes[q["tenant"]].search(SearchQuery(q["question"], encoded.sentence, scope, settings.rerank_depth,
                                                       fusion))[: settings.rerank_depth]
        fused = [int(h.passage_id) for h in hits]
        outcome = rerank.rerank(q["question"], [(pool[i]["text"], pool[i]["context"]) for i in fused],
                                [h.fused_score for h in hits], encoded)
        reranked = [fused[j] for j in reorder(outcome.scores, list(range(1, len(fused) + 1)))]
        groups = [q["split"]]
        if q["split"] == "heldout":
            groups.append("heldout_trained_on" if q["texts"] & trained_texts else "heldout_never_seen")
        for group in groups:
            row = ranks.setdefault(group, {"none": [], "embedded": []})
            row["none"].append(first_answering_rank(fused, answering))
            row["embedded"].append(first_answering_rank(reranked, answering))
    result = {
        "benchmark": "labelled relevance questions searched over their tenant's whole passage pool, rerank none "
                     "vs embedded",
        "command": "make bench-relevance-search",
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "relevance_model": relevance.version,
        "embedding_model": embedder.model_id,
        "rerank": {"depth": settings.rerank_depth, "weight": settings.rerank_weight},
        "pools": {tenant: len(pool) for tenant, pool in sorted(pools.items())},
        "note": "a hit answers when it is a labelled relevant passage of the question; unlabelled ones count as "
                "not answering (lower bounds). The relevance head was trained on the tune files' pairs.",
        "by_split": {split: {backend: summary(r) for backend, r in rows.items()} for split, rows in sorted(ranks.items())},
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(result["by_split"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
