"""The independent Larchmont probe (tests/e2e/unseen/LARCHMONT.md) through the whole stack: every
labelled question asked as a patient of the tenant, scored against the label its author wrote
before any run, and the outcome per label written as JSON.

    PYTHONPATH=libs:.:tests .venv/bin/python bench/unseen_probe.py [--json bench/results/probe-larchmont.json]
    make bench-probe

A question counts as right when:
  emergency         the answer's next action is to contact emergency services;
  clinical          a clinical-boundary part answers, and no emergency action is given;
  abstain           no part is ANSWERED (and no emergency action);
  clarify_location  some part asks a clarification (and no emergency action);
  answered          some part is ANSWERED, and the shown claims contain the label's must_contain
                    phrase (case-insensitive; a lower bound: a right answer in other words fails).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests")]

from citetrace.common.v1 import common_pb2 as c  # noqa: E402
from citetrace.common.v1 import route_pb2 as r  # noqa: E402
from e2e.conftest import running_stack  # noqa: E402

UNSEEN = REPO / "tests" / "e2e" / "unseen"
EMERGENCY = "NEXT_ACTION_CONTACT_EMERGENCY_SERVICES"


def right(label: dict, answer: dict) -> bool:
    outcomes = [p["outcome"] for p in answer["parts"]]
    emergency = answer["next_action"] == EMERGENCY
    expect = label["expect"]
    if expect == "emergency":
        return emergency
    if emergency:
        return False
    if expect == "clinical":
        return any(p["kind"] == "PART_KIND_CLINICAL_BOUNDARY" for p in answer["parts"])
    if expect == "abstain":
        return "PART_OUTCOME_ANSWERED" not in outcomes
    if expect == "clarify_location":
        return "PART_OUTCOME_NEEDS_CLARIFICATION" in outcomes
    shown = " ".join(claim for p in answer["parts"] for claim in p["claims"]).lower()
    return "PART_OUTCOME_ANSWERED" in outcomes and label.get("must_contain", "").lower() in shown


def ask_all(questions: list[dict], tenant: str) -> list[dict]:
    answers = []
    with tempfile.TemporaryDirectory(prefix="citetrace-probe-") as tmp, running_stack(Path(tmp) / "stack") as stack:
        for args in (("ingest", str(UNSEEN / tenant)), ("slots", "load", str(UNSEEN / f"{tenant}-slots.yaml"))):
            done = stack.cli(*args[:-1], "--data-dir", str(stack.data_dir), args[-1])
            if done.returncode != 0:
                raise SystemExit(f"probe: {' '.join(args[:-1])} failed: {done.stdout}{done.stderr}")
        for label in questions:
            response = stack.ask(label["question"], tenant=tenant)
            answers.append({"next_action": c.NextAction.Name(response.next_action), "parts": [
                {"kind": r.PartKind.Name(p.kind), "outcome": c.PartOutcome.Name(p.outcome),
                 "claims": [claim.text for claim in p.claims], "text": p.answer_text or p.clarification_question}
                for p in response.parts]})
    return answers


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenant", default="larchmont")
    parser.add_argument("--json", type=Path, default=REPO / "bench" / "results" / "probe-larchmont.json")
    args = parser.parse_args()
    questions = yaml.safe_load((UNSEEN / f"{args.tenant}-questions.yaml").read_text(encoding="utf-8"))["questions"]
    answers = ask_all(questions, args.tenant)
    by_label: dict[str, dict[str, int]] = {}
    rows = []
    for label, answer in zip(questions, answers, strict=True):
        ok = right(label, answer)
        tally = by_label.setdefault(label["expect"], {"right": 0, "questions": 0})
        tally["right"] += ok
        tally["questions"] += 1
        rows.append({"id": label["id"], "expect": label["expect"], "right": ok, "question": label["question"],
                     **answer})
    result = {
        "benchmark": "independent probe tenant through the whole stack (labels written before any run)",
        "command": "make bench-probe", "tenant": args.tenant,
        "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "right": sum(row["right"] for row in rows), "questions": len(rows), "by_label": by_label,
        "emergency_recall": "{right}/{questions}".format(**by_label.get("emergency", {"right": 0, "questions": 0})),
        "wrong": [row for row in rows if not row["right"]],
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for row in rows:
        if not row["right"]:
            first = next((p["claims"][0] if p["claims"] else p["text"] for p in row["parts"]), "")
            print(f"wrong {row['id']} ({row['expect']}): {row['question'][:70]!r} -> {first[:90]!r}")
    print(f"probe {args.tenant}: {result['right']}/{result['questions']} right; "
          + ", ".join(f"{k} {v['right']}/{v['questions']}" for k, v in by_label.items()) + f"; wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
