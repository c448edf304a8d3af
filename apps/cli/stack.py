"""citetrace up / status / down: the six services and the console as local processes on fixed
default ports."""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import dataclasses
import importlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import httpx
from citetrace.kit.stack import SERVICES, WEB_APPS, ServiceInfo, WebAppInfo
from grpc_health.v1 import health_pb2, health_pb2_grpc

from apps.cli.common import STATE_FILE, add_data_dir, dev_secret, read_state

_PR_SET_PDEATHSIG = 1
# Services that keep state under the data directory.
_STATEFUL = ("retrieval", "scheduler_gateway", "trace", "orchestrator")
# Signs the local console's session cookie (created once, like the development token secret).
CONSOLE_SESSION_SECRET_FILE = "console-session-secret"


def register(subparsers: argparse._SubParsersAction) -> None:
    up = subparsers.add_parser("up", help="start the six services and the console locally and wait until SERVING")
    add_data_dir(up)
    up.add_argument("--detach", action="store_true", help="return once SERVING and leave the stack running")
    up.add_argument("--port-offset", type=int, default=0, help="shift every default port by N")
    up.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for SERVING")
    up.set_defaults(func=run_up)

    status = subparsers.add_parser("status", help="health of each service (and the console's URL) of the local stack")
    add_data_dir(status)
    status.set_defaults(func=run_status)

    down = subparsers.add_parser("down", help="stop the local stack started with `up --detach`")
    add_data_dir(down)
    down.add_argument("--timeout", type=float, default=20.0, help="seconds to wait before SIGKILL")
    down.set_defaults(func=run_down)


def health_of(target: str, timeout: float = 1.0) -> str:
    """SERVING, NOT_SERVING, UNKNOWN or unreachable."""
    with grpc.insecure_channel(target) as channel:
        try:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""), timeout=timeout)
        except grpc.RpcError:
            return "unreachable"
    return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


def web_health_of(url: str, ready_path: str = "/readyz", timeout: float = 1.0) -> str:
    """The same words for a web application: SERVING when its readiness answers 200."""
    try:
        reply = httpx.get(url + ready_path, timeout=timeout)
    except httpx.HTTPError:
        return "unreachable"
    return "SERVING" if reply.status_code == 200 else "NOT_SERVING"


def _health(name: str, entry: dict) -> str:
    app = _web_app(name)
    if app is not None:
        return web_health_of(entry.get("url") or app.url(entry["port"] - app.port), app.ready_path, timeout=0.5)
    return health_of(f"127.0.0.1:{entry['port']}", timeout=0.5)


def _web_app(name: str) -> WebAppInfo | None:
    return next((app for app in WEB_APPS if app.name == name), None)


def _service_env(info: ServiceInfo | WebAppInfo, data_dir: Path, offset: int, secret: str) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("CITETRACE_AUTH_HS256_SECRET", secret)
    env[f"{info.env_prefix}PORT"] = str(info.port + offset)
    env[f"{info.env_prefix}METRICS_PORT"] = str(info.metrics_port + offset)
    if info.name in _STATEFUL:
        env[f"{info.env_prefix}DATA_DIR"] = str(data_dir.resolve())
    for other in SERVICES:  # callers find their downstreams at the shifted ports
        if other.name != info.name:
            env[f"{info.env_prefix}{other.name.upper()}_TARGET"] = f"127.0.0.1:{other.port + offset}"
    if isinstance(info, WebAppInfo):  # the local console: development sign-in, its own cookie key
        env.setdefault(f"{info.env_prefix}AUTH_MODE", "development")
        env.setdefault(f"{info.env_prefix}SESSION_SECRET",
                       dev_secret(data_dir, create=True, name=CONSOLE_SESSION_SECRET_FILE))
    return _known_only(info, env)


def _known_only(info: ServiceInfo | WebAppInfo, env: dict[str, str]) -> dict[str, str]:
    """Drops *_TARGET variables a service's settings do not define (settings reject unknown keys)."""
    settings_cls = importlib.import_module(f"{info.module}.settings").Settings
    known = {f"{info.env_prefix}{f.name.upper()}" for f in dataclasses.fields(settings_cls)}
    return {k: v for k, v in env.items() if not k.startswith(info.env_prefix) or k in known}


def _die_with_parent() -> None:
    """Children of a foreground `up` get SIGTERM if `up` itself dies: no orphans."""
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def start_stack(data_dir: Path, offset: int, detach: bool) -> dict[str, subprocess.Popen]:
    secret = dev_secret(data_dir, create=True)
    logs = data_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    procs: dict[str, subprocess.Popen] = {}
    for info in (*SERVICES, *WEB_APPS):
        log_file = open(logs / f"{info.name}.log", "ab")  # noqa: SIM115 - owned by the child
        procs[info.name] = subprocess.Popen(
            [sys.executable, "-m", info.module],
            env=_service_env(info, data_dir, offset, secret),
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=None if detach else _die_with_parent,
        )
        log_file.close()
    state = {
        "up_pid": os.getpid(),
        "services": {
            name: {"pid": proc.pid, "port": _info(name).port + offset, "metrics_port": _info(name).metrics_port + offset}
            for name, proc in procs.items()
        },
    }
    for app in WEB_APPS:
        state["services"][app.name]["url"] = app.url(offset)
    (data_dir / STATE_FILE).write_text(json.dumps(state, indent=2))
    return procs


def _info(name: str) -> ServiceInfo | WebAppInfo:
    return next(info for info in (*SERVICES, *WEB_APPS) if info.name == name)


def wait_serving(data_dir: Path, procs: dict[str, subprocess.Popen], timeout: float) -> list[str]:
    """Waits for every service; returns the names that failed (exited or never SERVING)."""
    state = read_state(data_dir)["services"]
    pending = set(procs)
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        for name in sorted(pending):
            if procs[name].poll() is not None:
                return [name]
            if _health(name, state[name]) == "SERVING":
                pending.discard(name)
        if pending:
            time.sleep(0.2)
    return sorted(pending)


def stop_pids(pids: dict[str, int], timeout: float) -> None:
    for pid in pids.values():
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids.values()):
        time.sleep(0.1)
    for pid in pids.values():
        if _alive(pid):
            _signal(pid, signal.SIGKILL)


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _alive(pid: int) -> bool:
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)
        if waited == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0] != "Z"
    except OSError:
        return False


def run_up(args: argparse.Namespace) -> int:
    data_dir: Path = args.data_dir
    existing = read_state(data_dir).get("services", {})
    if any(_alive(entry["pid"]) for entry in existing.values()):
        print(f"citetrace: a stack is already running from {data_dir} (run `citetrace down` first)", file=sys.stderr)
        return 1
    stopping = {"flag": False}

    def on_signal(signum, _frame):
        stopping["flag"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    procs = start_stack(data_dir, args.port_offset, args.detach)
    pids = {name: proc.pid for name, proc in procs.items()}
    print(f"starting {len(SERVICES)} services and the console (logs in {data_dir / 'logs'}) ...", flush=True)
    failed = wait_serving(data_dir, procs, args.timeout)
    if failed or stopping["flag"]:
        for name in failed:
            print(f"citetrace: {name} did not become SERVING; see {data_dir / 'logs' / (name + '.log')}", file=sys.stderr)
        stop_pids(pids, 20.0)
        (data_dir / STATE_FILE).unlink(missing_ok=True)
        return 1
    _print_table(data_dir)
    if args.detach:
        print("stack running in the background; stop it with `citetrace down`")
        return 0
    print("all SERVING; press Ctrl-C to stop", flush=True)
    while not stopping["flag"] and all(proc.poll() is None for proc in procs.values()):
        time.sleep(0.2)
    exited = [name for name, proc in procs.items() if proc.poll() is not None]
    print("stopping ..." if not exited else f"citetrace: {', '.join(exited)} exited; stopping the stack", flush=True)
    stop_pids(pids, 20.0)
    (data_dir / STATE_FILE).unlink(missing_ok=True)
    print("stopped")
    return 0 if not exited or stopping["flag"] else 1


def _print_table(data_dir: Path) -> bool:
    state = read_state(data_dir).get("services", {})
    all_serving = True
    print(f"{'service':<20} {'address':<22} {'metrics':<8} health")
    for info in (*SERVICES, *WEB_APPS):
        entry = state.get(info.name, {"port": info.port, "metrics_port": info.metrics_port})
        address = entry.get("url") or (info.url() if isinstance(info, WebAppInfo) else f"127.0.0.1:{entry['port']}")
        health = _health(info.name, entry)
        all_serving &= health == "SERVING"
        print(f"{info.name:<20} {address:<22} {entry['metrics_port']:<8} {health}")
    for app in WEB_APPS:
        url = state.get(app.name, {}).get("url") or app.url()
        print(f"{app.name}: open {url} in a browser")
    return all_serving


def run_status(args: argparse.Namespace) -> int:
    return 0 if _print_table(args.data_dir) else 1


def run_down(args: argparse.Namespace) -> int:
    state = read_state(args.data_dir)
    services = state.get("services", {})
    if not services:
        print(f"no stack state in {args.data_dir}; nothing to stop")
        return 0
    up_pid = state.get("up_pid")
    if up_pid and up_pid != os.getpid() and _alive(up_pid):
        _signal(up_pid, signal.SIGTERM)  # a foreground `up` stops its own children
    stop_pids({name: entry["pid"] for name, entry in services.items()}, args.timeout)
    (args.data_dir / STATE_FILE).unlink(missing_ok=True)
    print(f"stopped {len(services)} services")
    return 0
