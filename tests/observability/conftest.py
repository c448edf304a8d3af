"""Fixtures of the observability and deployment tests: promtool/prometheus (installed from
Debian's packages by deploy/tools/install-prometheus.sh when missing) and the repo root."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def ensure_tool(name: str, installer: str) -> str:
    """The path of a tool, running its idempotent install script when it is missing. Under CI a
    missing tool fails the test; elsewhere it skips."""
    found = shutil.which(name)
    if found is None:
        script = DEPLOY / "tools" / installer
        result = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=600)
        found = shutil.which(name)
        if found is None:
            message = f"{name} not available ({script} said: {result.stderr.strip()[-400:]})"
            if os.environ.get("CI"):
                pytest.fail(message)
            pytest.skip(message)
    return found


@pytest.fixture(scope="session")
def promtool() -> str:
    return ensure_tool("promtool", "install-prometheus.sh")


@pytest.fixture(scope="session")
def prometheus_bin() -> str:
    return ensure_tool("prometheus", "install-prometheus.sh")


@pytest.fixture(scope="session")
def traced_stack(tmp_path_factory):
    """The six services as processes exporting spans to a local OTLP receiver, with the sample
    corpus ingested and the sample slots loaded (results kept for the tests to assert on)."""
    from observability.harness import OtlpReceiver, running_stack

    receiver = OtlpReceiver()
    data_dir = tmp_path_factory.mktemp("stack")
    try:
        with running_stack(data_dir, receiver.endpoint) as stack:
            stack.ingest = stack.cli("ingest", str(ROOT / "deploy" / "samples" / "corpus"), "--target",
                                     stack.target("retrieval"))
            stack.slots = stack.cli("slots", "load", str(ROOT / "deploy" / "samples" / "slots.yaml"))
            yield stack, receiver
    finally:
        receiver.stop()
