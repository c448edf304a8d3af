"""The import-layering contracts of `make lint` (import-linter, [tool.importlinter] in pyproject.toml):
they hold on the tree, every service is under them, and each one fails on a deliberate violation
(checked on a copy of the tree with one offending module added)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]


def contract(name_start: str) -> dict:
    return next(c for c in CONFIG["contracts"] if c["name"].startswith(name_start))


def run_lint(root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "libs"), str(root)])}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--config", str(root / "pyproject.toml")], cwd=root,
                          env=env, capture_output=True, text=True, timeout=300)


def test_every_service_is_under_the_contracts():
    services = sorted(p.name for p in (ROOT / "services").iterdir() if (p / "__init__.py").exists())
    independent = {m.removeprefix("services.") for m in contract("a service never imports")["modules"]}
    assert set(services) == independent, "add the new service to the independence contract in pyproject.toml"
    cores = {m.removeprefix("services.").removesuffix(".core")
             for m in contract("service cores never import grpc")["source_modules"]}
    with_core = {s for s in services if (ROOT / "services" / s / "core.py").exists()
                 or (ROOT / "services" / s / "core").is_dir()}
    assert with_core == cores, "add the new service's core to the grpc contract in pyproject.toml"


def test_the_contracts_hold_on_the_tree():
    result = run_lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.fixture(scope="module")
def tree_copy(tmp_path_factory) -> Path:
    """The tracked Python sources and pyproject.toml, as a separate tree."""
    root = tmp_path_factory.mktemp("layering")
    tracked = subprocess.run(["git", "ls-files", "libs", "services", "apps"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()
    for path in tracked:
        if path.endswith(".py") and (ROOT / path).exists():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / path, root / path)
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


@pytest.mark.parametrize(("offender", "source", "broken"), [
    ("libs/citetrace/kit/offender.py", "import services.retrieval.core\n", "libs never import services or apps"),
    ("services/trace/offender.py", "from services.retrieval import core\n", "a service never imports another"),
    ("services/generation/offender.py", "import services.orchestrator.adapters\n", "a service never imports another"),
    ("services/scheduler_gateway/core_offender.py", "import grpc\n", "service cores never import grpc"),
])
def test_a_deliberate_violation_fails_the_check(tree_copy, offender, source, broken):
    path = tree_copy / offender
    if "core_offender" in offender:  # a violation inside a core: the core module imports the offender
        core = tree_copy / "services" / "scheduler_gateway" / "core.py"
        original = core.read_text(encoding="utf-8")
        core.write_text(original + "\nfrom services.scheduler_gateway import core_offender  # noqa\n",
                        encoding="utf-8")
    path.write_text(source, encoding="utf-8")
    try:
        result = run_lint(tree_copy)
    finally:
        path.unlink()
        if "core_offender" in offender:
            core.write_text(original, encoding="utf-8")
    assert result.returncode != 0, result.stdout
    line = next(line for line in result.stdout.splitlines() if line.startswith(broken.split(" (")[0]))
    assert line.endswith("BROKEN"), result.stdout
