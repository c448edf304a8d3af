"""citetrace judge support: the citation validator's support decision in batch, outside the stack.

    citetrace judge support --in pairs.jsonl --out verdicts.jsonl [--weights FILE]

Input, one JSON object a line: {"id": "...", "claim": "...", "evidence": [{"text": "...", "title": "..."?}]}.
Output, one a line in input order: {"id", "verdict", "score", "reason", "support_model"} with the
shipped embedded model and thresholds, offline. A malformed line is an error naming its line
number; nothing is written then (the output appears whole or not at all).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("judge", help="run a judgment of the validator in batch (offline)")
    judges = parser.add_subparsers(dest="judge", required=True, metavar="JUDGMENT")
    support = judges.add_parser("support", help="support verdicts for claim/evidence pairs (JSON lines)")
    support.add_argument("--in", dest="input", type=Path, required=True, help="pairs, JSON lines")
    support.add_argument("--out", dest="output", type=Path, required=True, help="verdicts, JSON lines")
    support.add_argument("--weights", type=Path, help="another weights file than the shipped one")
    support.set_defaults(func=run_support)


class PairError(ValueError):
    pass


def parse_pairs(lines: list[str], source: str) -> list[dict]:
    pairs, seen = [], set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise PairError(f"{where}: not JSON ({exc.msg})") from exc
        if not isinstance(item, dict):
            raise PairError(f"{where}: expected an object with id, claim, evidence")
        unknown = set(item) - {"id", "claim", "evidence"}
        if unknown:
            raise PairError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
        pid, claim, evidence = item.get("id"), item.get("claim"), item.get("evidence")
        if not isinstance(pid, str | int) or isinstance(pid, bool) or str(pid) == "":
            raise PairError(f"{where}: id must be a non-empty string or number")
        if str(pid) in seen:
            raise PairError(f"{where}: duplicate id {pid!r}")
        seen.add(str(pid))
        if not isinstance(claim, str) or not claim.strip():
            raise PairError(f"{where}: claim must be a non-empty string")
        if not isinstance(evidence, list) or not evidence:
            raise PairError(f"{where}: evidence must be a non-empty list of {{text, title?}}")
        for i, e in enumerate(evidence):
            if not isinstance(e, dict) or not isinstance(e.get("text"), str) or set(e) - {"text", "title"} \
                    or not isinstance(e.get("title", ""), str):
                raise PairError(f"{where}: evidence[{i}] must be {{\"text\": str, \"title\"?: str}}")
        pairs.append({"id": pid, "claim": claim, "evidence": evidence})
    return pairs


def run_support(args: argparse.Namespace) -> int:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        pairs = parse_pairs(args.input.read_text(encoding="utf-8").splitlines(), str(args.input))
    except OSError as exc:
        print(f"judge support: cannot read {args.input}: {exc.strerror}", file=sys.stderr)
        return 2
    except PairError as exc:
        print(f"judge support: {exc}", file=sys.stderr)
        return 2
    from services.citation_validator.support import Evidence
    from services.citation_validator.support.embedded import EmbeddedSupportModel, WeightsError

    try:
        model = EmbeddedSupportModel(args.weights)
        model.warm_up()
    except WeightsError as exc:
        print(f"judge support: {exc}", file=sys.stderr)
        return 2
    out_lines, counts = [], {"SUPPORTED": 0, "UNRESOLVED": 0, "UNSUPPORTED": 0}
    for n, pair in enumerate(pairs, start=1):
        decision = model.decide(pair["claim"], [Evidence(e["text"], e.get("title", "")) for e in pair["evidence"]])
        out_lines.append(json.dumps({"id": pair["id"], "verdict": decision.verdict, "score": decision.score,
                                     "reason": decision.reason, "support_model": decision.model},
                                    ensure_ascii=False))
        counts[decision.verdict] += 1
        if n % 100 == 0:
            print(f"judge support: {n}/{len(pairs)}", file=sys.stderr)
    tmp = args.output.with_name(args.output.name + ".partial")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_text("".join(line + "\n" for line in out_lines), encoding="utf-8")
    tmp.replace(args.output)
    print(f"judge support: {len(pairs)} pairs -> {args.output} ({model.version}): "
          + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return 0
