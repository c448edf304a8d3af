"""ARCHITECTURE.md stays true: every span of the request path is named in it, and every file it
names exists (a moved file breaks this test, not a newcomer's search)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from source_reading import parse

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "ARCHITECTURE.md").read_text()
# The span names DESIGN.md §7 asks for (tests/observability/stages.py), read without importing it.
_STAGES = (REPO / "tests" / "observability" / "stages.py").read_text()
DESIGN_STAGES = next(ast.literal_eval(node.value) for node in ast.walk(parse(_STAGES))
                     if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "DESIGN_STAGES")


def test_every_stage_of_the_request_path_is_named():
    missing = [name for name in DESIGN_STAGES if f"`{name}`" not in DOC]
    assert not missing, missing


def test_every_file_named_exists():
    names = set(re.findall(r"`([\w./-]+\.(?:py|yaml|md))`", DOC))
    assert len(names) > 20
    bases = (REPO, REPO / "services" / "orchestrator")  # `core/...` and `data/...` are the orchestrator's
    missing = sorted(n for n in names if "<" not in n and not any((b / n).exists() for b in bases))
    assert not missing, missing
