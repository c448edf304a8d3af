"""The extractive generator's lead claim on labelled question-passage pairs (issue 15 §2):

    OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/generation_selection.py [--json bench/results/generation-selection.json]

Each question of the relevance labelled set (tests/relevance/: relevance_labelled.yaml's odd numbers and
tune/ the tune half, its even numbers the test half, heldout/ the held-out set) is given its labelled passages (relevant and hard irrelevant ones of the same tenant, in a
fixed shuffled order, as a search would offer them); the lead claim the generator shows is from a
relevant passage (right), from an irrelevant one (wrong), or there is none (abstained): words alone
(extractive-v1) beside words and meaning (extractive-v2-semantic). The passages are offered as
`handbook` and the question as intent OTHER, so no intent's cue words or claim typing take part.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from train_lead import labelled_questions, offered  # noqa: E402

from services.generation.core import GenerationRequest  # noqa: E402
from services.generation.extractive import SEMANTIC_LEAD, ExtractiveBackend  # noqa: E402
from services.generation.semantic import EmbeddedUnitSimilarity  # noqa: E402


def lead_outcomes(backend: ExtractiveBackend, items: list[dict]) -> dict:
    right = wrong = abstained = 0
    unanswerable = unanswerable_abstained = 0
    for q in items:
        passages = offered(q)
        generated = backend.generate(GenerationRequest(q["question"], "OTHER", passages))
        answerable = any(p["label"] == 1 for p in q["passages"])
        unanswerable += not answerable
        if not generated.claims:
            abstained += 1
            unanswerable_abstained += not answerable
            continue
        label = generated.claims[0].evidence_labels[0]
        relevant = q["passages"][int(label[1:]) - 1]["label"] == 1
        right += relevant
        wrong += not relevant
    answerable_total = len(items) - unanswerable
    return {"questions": len(items), "lead_relevant": right, "lead_irrelevant": wrong, "abstained": abstained,
            "precision": round(right / (right + wrong), 3) if right + wrong else None,
            # the same split by the label: an answerable question should lead with a relevant passage, an
            # unanswerable one (nothing offered answers it) should abstain
            "answerable_lead_relevant": f"{right}/{answerable_total}",
            "unanswerable_abstained": f"{unanswerable_abstained}/{unanswerable}"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=REPO / "bench" / "results" / "generation-selection.json")
    args = parser.parse_args()
    similarity = EmbeddedUnitSimilarity()
    similarity.warm_up()
    items = labelled_questions()
    result = {"benchmark": "extractive lead claim on the relevance labelled set (tests/relevance/)",
              "command": "bench/generation_selection.py", "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
              "semantic_lead": SEMANTIC_LEAD, "halves": {}}
    for split in ("tune", "test", "heldout"):
        half = [q for q in items if q["split"] == split]
        result["halves"][split] = {
            "words_alone": lead_outcomes(ExtractiveBackend(), half),
            "words_and_meaning": lead_outcomes(ExtractiveBackend(similarity=similarity), half),
        }
        print(split, json.dumps(result["halves"][split]))
    args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
