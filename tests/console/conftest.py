"""Console fixtures: the real stack (six gRPC services as processes, sample corpus and slots), the
console as its own process in front of it, and a real browser (Debian's Chromium driven by
Playwright; never a browser downloaded by Playwright)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from e2e.conftest import REPO, Stack, free_port, running_stack

from apps.cli.common import read_state

CHROMIUM = os.environ.get("CITETRACE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
AXE = REPO / "node_modules" / "axe-core" / "axe.min.js"
SCREENSHOTS = Path(os.environ.get("CITETRACE_SCREENSHOT_DIR", REPO / "build" / "screenshots"))
SESSION_SECRET = "console-test-session-secret-0123456789abcdef"


class Console:
    """One console process: its URL, and the stack behind it."""

    def __init__(self, url: str, proc: subprocess.Popen | None, log: Path) -> None:
        self.url = url
        self.proc = proc
        self.log = log

    def stop(self) -> None:
        if self.proc is None:  # the stack's own console: `citetrace down` stops it
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=15)
        if self.proc.poll() is None:
            self.proc.kill()


def start_console(stack: Stack, data_dir: Path, **settings: str) -> Console:
    """python -m services.console on a free port, wired to the stack; `settings` are
    CITETRACE_CONSOLE_* values without the prefix."""
    targets = {f"{name}_target": stack.target(name)
               for name in ("orchestrator", "retrieval", "scheduler_gateway", "trace")}
    return launch_console(stack.auth.hs256_secret, data_dir, **{**targets, **settings})


def launch_console(secret: str, data_dir: Path, **settings: str) -> Console:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CITETRACE_", "OTEL_"))}
    env.update({
        "CITETRACE_AUTH_HS256_SECRET": secret,
        "CITETRACE_CONSOLE_PORT": str(port),
        "CITETRACE_CONSOLE_METRICS_PORT": "-1",
        "CITETRACE_CONSOLE_SESSION_SECRET": SESSION_SECRET,
        "CITETRACE_CONSOLE_AUTH_MODE": "development",
    })
    env.update({f"CITETRACE_CONSOLE_{key.upper()}": value for key, value in settings.items()})
    data_dir.mkdir(parents=True, exist_ok=True)
    log = data_dir / f"console-{port}.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "services.console"], env=env, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=REPO, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"console exited with {proc.returncode}: {log.read_text()[-2000:]}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                return Console(url, proc, log)
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"console on {url} did not become ready: {log.read_text()[-2000:]}")


@pytest.fixture(scope="session")
def console_stack(tmp_path_factory) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("console-stack")) as stack:
        yield stack


@pytest.fixture(scope="session")
def console(console_stack) -> Console:
    """The console `citetrace up` started with the rest of the stack (its URL from the stack state)."""
    entry = read_state(console_stack.data_dir)["services"]["console"]
    assert httpx.get(entry["url"] + "/readyz", timeout=5).status_code == 200
    return Console(entry["url"], None, console_stack.data_dir / "logs" / "console.log")


@pytest.fixture
def closed_target() -> str:
    """An address where nothing listens: a downstream that stays down."""
    return f"127.0.0.1:{free_port()}"


@pytest.fixture(scope="session")
def chromium():
    if not Path(CHROMIUM).exists() or shutil.which(CHROMIUM) is None:
        message = f"Chromium not found at {CHROMIUM} (make browser-deps installs Debian's chromium)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def browser_context(chromium):
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    try:
        yield context
    finally:
        context.close()


@pytest.fixture
def page(browser_context):
    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    assert not errors, f"JavaScript errors on the page: {errors}"
