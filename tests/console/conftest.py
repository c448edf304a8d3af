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
from citetrace.kit.testing import auth_env
from e2e.conftest import REPO, Stack, free_port, running_stack

from apps.cli.common import local_ca, read_state

CHROMIUM = os.environ.get("CITETRACE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
AXE = REPO / "node_modules" / "axe-core" / "axe.min.js"
SCREENSHOTS = Path(os.environ.get("CITETRACE_SCREENSHOT_DIR", REPO / "build" / "screenshots"))
SESSION_SECRET = "console-test-session-secret-0123456789abcdef"

# The browser tests share 2 cores with everything else `make test` runs: under that load one Ask can
# take far longer than the production deadlines allow (15 s per Ask, 5 s per downstream call), and an
# Ask that runs out of time is answered "source unavailable", with no marker to click. The stack the
# console tests start gets deadlines that only a hung service exceeds, so a slow machine makes the
# tests slow, never changes what they see; the tests that are about a service being down set their
# own short deadlines. Playwright waits a little longer than the console for an answer.
ORCHESTRATOR_LOAD_TOLERANT = {"default_deadline_seconds": "90", "call_timeout_seconds": "45"}
CONSOLE_LOAD_TOLERANT = {"ask_timeout_seconds": "100", "call_timeout_seconds": "30",
                         "fresh_record_patience_seconds": "30"}
ASK_DEADLINE_SECONDS = float(ORCHESTRATOR_LOAD_TOLERANT["default_deadline_seconds"])
ANSWER_WAIT_MS = 120_000
PAGE_WAIT_MS = 60_000
ARRIVAL_Q = "When should I arrive for my appointment at Northside Family Clinic?"


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
    return launch_console({**auth_env(stack.auth), **_tls_env(stack)}, data_dir, **{**CONSOLE_LOAD_TOLERANT, **targets, **settings})


def _tls_env(stack: Stack) -> dict[str, str]:
    """The console's certificate from the stack's CA (what `citetrace up` gives it)."""
    if stack.transport.plaintext:
        return {"CITETRACE_TLS_MODE": "plaintext"}
    return local_ca(stack.data_dir).issue("console").env()


def launch_console(auth: dict[str, str], data_dir: Path, **settings: str) -> Console:
    """`auth`: the CITETRACE_AUTH_* (kit.testing.auth_env) and CITETRACE_TLS_* variables."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CITETRACE_", "OTEL_"))}
    env.update({
        **auth,
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


def load_tolerant_env() -> dict[str, str]:
    """CITETRACE_* variables giving the services `citetrace up` starts the load-tolerant deadlines."""
    env = {f"CITETRACE_ORCHESTRATOR_{k.upper()}": v for k, v in ORCHESTRATOR_LOAD_TOLERANT.items()}
    env.update({f"CITETRACE_CONSOLE_{k.upper()}": v for k, v in CONSOLE_LOAD_TOLERANT.items()})
    return env


def warm(stack: Stack) -> None:
    """One cited answer before the first browser test: the first Ask loads the models (question
    encoder, support model) in each process, which under load can take most of a minute. A stack that
    cannot answer the supported control fails here, with the outcome it gave."""
    reply = stack.ask(ARRIVAL_Q, timeout=ASK_DEADLINE_SECONDS)
    cited = [c for part in reply.parts for claim in part.claims for c in claim.citations]
    assert cited, f"the warm-up question was not answered with citations: {reply}"


@pytest.fixture(scope="session")
def console_stack(tmp_path_factory) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("console-stack"), env=load_tolerant_env()) as stack:
        warm(stack)
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


def new_context(chromium, **options):
    """A browser context whose waits allow for a loaded machine (Playwright's default is 30 s)."""
    context = chromium.new_context(**options)
    context.set_default_timeout(PAGE_WAIT_MS)
    context.set_default_navigation_timeout(ANSWER_WAIT_MS)
    return context


@pytest.fixture
def browser_context(chromium):
    context = new_context(chromium, viewport={"width": 1280, "height": 900})
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
