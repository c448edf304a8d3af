"""Reading our own source in tests (layering and independence checks): one parser and one import
walker for every such test."""

from __future__ import annotations

import ast
from pathlib import Path


def parse(source: str) -> ast.Module:
    """ast.parse, again when CPython 3.11 raises its spurious "AST constructor recursion depth mismatch"
    SystemError (python/cpython#106905: the depth counter is shared across threads, and the suite's
    services keep background threads). A source that truly fails to parse fails every attempt."""
    for attempt in range(3):
        try:
            return ast.parse(source)
        except SystemError as err:
            if "recursion depth mismatch" not in str(err) or attempt == 2:
                raise
    raise AssertionError("unreachable")


def imports_of(*paths: Path) -> set[str]:
    """Every module a file imports, and `module.name` for each name imported from one."""
    names: set[str] = set()
    for path in paths:
        for node in ast.walk(parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names
