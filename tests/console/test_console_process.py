"""The console as a process: settings from the environment, readiness, metrics, SIGTERM drain."""

from __future__ import annotations

import signal
import time

import httpx
from e2e.conftest import free_port

from console.conftest import launch_console


def test_console_process_serves_metrics_and_drains_on_sigterm(tmp_path):
    closed = f"127.0.0.1:{free_port()}"
    metrics_port = free_port()
    console = launch_console({"CITETRACE_AUTH_HS256_SECRET": "m" * 40, "CITETRACE_TLS_MODE": "plaintext"}, tmp_path, metrics_port=str(metrics_port), orchestrator_target=closed,
                             retrieval_target=closed, scheduler_gateway_target=closed, trace_target=closed)
    try:
        assert httpx.get(console.url + "/readyz").text == "SERVING"
        assert httpx.get(console.url + "/sign-in").status_code == 200
        assert httpx.get(console.url + "/documents/x/versions/y").status_code == 303, "sign-in first"
        scraped = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics").text
        assert 'citetrace_console_requests_total{route="/sign-in",status="200"} 1.0' in scraped
        assert 'route="/documents/{document_id:path}/versions/{version_id}"' in scraped, "labelled by template"
        assert 'citetrace_build_info{service="console"' in scraped
        console.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        while console.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert console.proc.returncode == 0
        log = console.log.read_text()
        assert "draining" in log and "console stopped" in log
    finally:
        console.stop()


def test_console_refuses_to_start_with_bad_settings(tmp_path):
    import os
    import subprocess
    import sys

    from e2e.conftest import REPO

    env = {k: v for k, v in os.environ.items() if not k.startswith("CITETRACE_")}
    env.update({"CITETRACE_AUTH_HS256_SECRET": "m" * 40, "CITETRACE_CONSOLE_SESSION_SECRET": "short"})
    done = subprocess.run([sys.executable, "-m", "services.console"], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode != 0 and "SESSION_SECRET" in done.stderr
