"""`citetrace up` end to end: six real gRPC processes and the console SERVING, reflection, the
console's URL, supervision (a killed service comes back, the others keep serving; `citetrace
restart`), SIGTERM, nothing left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx
import pytest
from citetrace.kit.stack import CONSOLE, SERVICES
from citetrace.kit.tls import open_channel
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from observability.harness import free_port_offset

from apps.cli.common import cli_transport, read_state
from apps.cli.stack import _alive, health_of

pytestmark = pytest.mark.slow


def _citetrace(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "apps.cli.main", *args], capture_output=True, text=True,
                          timeout=240, **kwargs)


def _list_services(address: str, transport) -> set[str]:
    with open_channel(address, transport) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        replies = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5)
        return {svc.name for reply in replies for svc in reply.list_services_response.service}


def test_up_serves_all_six_and_sigterm_leaves_no_process(tmp_path):
    # Every port of the stack free now: a fixed random offset may land on a port the kernel lent to
    # an outgoing connection (50555 did, in CI).
    offset = free_port_offset()
    data_dir = tmp_path / "stack"
    up = subprocess.Popen(
        [sys.executable, "-m", "apps.cli.main", "up", "--data-dir", str(data_dir), "--port-offset", str(offset)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        deadline = time.monotonic() + 240
        lines = []
        while time.monotonic() < deadline:
            line = up.stdout.readline()
            lines.append(line)
            if "all SERVING" in line or up.poll() is not None:
                break
        assert any("all SERVING" in line for line in lines), "".join(lines)
        status = _citetrace("status", "--data-dir", str(data_dir))
        assert status.returncode == 0, status.stdout + status.stderr
        assert status.stdout.count("SERVING") == len(SERVICES) + 1
        console_url = f"http://127.0.0.1:{CONSOLE.port + offset}"
        assert any(line.startswith("console") and console_url in line and line.endswith("SERVING")
                   for line in status.stdout.splitlines()), status.stdout
        assert f"console: open {console_url} in a browser" in "".join(lines) + status.stdout
        assert httpx.get(console_url + "/sign-in").status_code == 200
        state = read_state(data_dir)["services"]
        assert read_state(data_dir)["tls"] == "mtls"
        transport = cli_transport(data_dir)  # the CLI's certificate from the stack's CA
        pids = [entry["pid"] for entry in state.values()]
        for info in SERVICES:
            assert info.full_name in _list_services(f"127.0.0.1:{state[info.name]['port']}", transport)
        # Supervision: the trace service killed -> restarted and logged; the others never stop serving.
        killed = state["trace"]["pid"]
        others = [info for info in SERVICES if info.name != "trace"]
        os.kill(killed, signal.SIGKILL)
        not_serving, restarted = [], None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and restarted is None:
            not_serving += [info.name for info in others
                            if health_of(f"127.0.0.1:{state[info.name]['port']}", timeout=2.0, transport=transport) != "SERVING"]
            current = read_state(data_dir)["services"]["trace"]
            if current["pid"] != killed and health_of(f"127.0.0.1:{current['port']}", timeout=0.5, transport=transport) == "SERVING":
                restarted = current
            time.sleep(0.05)
        assert restarted is not None, "the killed trace service came back"
        assert not_serving == [], not_serving
        assert restarted["restarts"] == 1 and not _alive(killed)
        line = up.stdout.readline()
        assert f"trace (pid {killed}) was killed by SIGKILL; restarting in 0.5 s" in line, line
        line = up.stdout.readline()
        assert f"trace restarted (pid {killed} -> {restarted['pid']})" in line, line
        # `citetrace restart` asks the supervising `up` for a restart and reports it.
        restart = _citetrace("restart", "generation", "--data-dir", str(data_dir))
        new_pid = read_state(data_dir)["services"]["generation"]["pid"]
        assert restart.returncode == 0, restart.stdout + restart.stderr
        assert (f"generation restarted (pid {state['generation']['pid']} -> {new_pid}), SERVING after"
                in restart.stdout), restart.stdout
        assert "restart of generation" in up.stdout.readline()
        pids = [entry["pid"] for entry in read_state(data_dir)["services"].values()]
        up.send_signal(signal.SIGTERM)
        assert up.wait(timeout=60) == 0
        assert not any(_alive(pid) for pid in pids)
        after = _citetrace("status", "--data-dir", str(data_dir))
        assert after.returncode == 1 and "unreachable" in after.stdout
    finally:
        if up.poll() is None:
            up.kill()



def test_help_documents_supervision_and_restart():
    help_text = " ".join(_citetrace("--help").stdout.split())
    assert "supervise them (a service that exits is restarted with backoff and logged; the others keep serving)" in help_text
    assert "restart restart one service of the running stack (foreground or detached) and wait until SERVING" in help_text
    restart_help = _citetrace("restart", "--help").stdout
    assert "retrieval" in restart_help and "--timeout" in restart_help
