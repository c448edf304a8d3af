"""citetrace up / status / restart / down: the six services and the console as local processes on
fixed default ports, supervised by `up` (in the foreground, or in the background with --detach)."""

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
from citetrace.kit import clients
from citetrace.kit.auth import AUTH_PREFIX
from citetrace.kit.stack import SERVICES, WEB_APPS, ServiceInfo, WebAppInfo
from citetrace.kit.tls import TLS_PREFIX, TransportSettings, open_channel, transport_from_environment
from grpc_health.v1 import health_pb2, health_pb2_grpc

from apps.cli.common import (
    CLI_IDENTITY,
    STATE_FILE,
    add_data_dir,
    dev_issuer,
    dev_secret,
    local_ca,
    read_state,
    use_transport,
)

_PR_SET_PDEATHSIG = 1
# Services that keep state under the data directory.
_STATEFUL = ("retrieval", "scheduler_gateway", "trace", "orchestrator")
# Signs the local console's session cookie (created once, like the development token secret).
CONSOLE_SESSION_SECRET_FILE = "console-session-secret"
# The one process of the stack that mints tokens with the issuer's private key: the console's
# development sign-in. The six services get only the public key (they are identified by their
# certificates, kit.tls, and forward the user's own token).
_SIGNING = ("console",)


def register(subparsers: argparse._SubParsersAction) -> None:
    up = subparsers.add_parser(
        "up", help="start the six services and the console locally, wait until SERVING, and supervise them "
                   "(a service that exits is restarted with backoff and logged; the others keep serving)")
    add_data_dir(up)
    up.add_argument("--detach", action="store_true",
                    help="return once SERVING and leave the stack running, supervised by a background `up`")
    up.add_argument("--background", action="store_true", help=argparse.SUPPRESS)
    up.add_argument("--port-offset", type=int, default=0, help="shift every default port by N")
    up.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for SERVING")
    up.set_defaults(func=run_up)

    status = subparsers.add_parser("status", help="health and restart count of each service (and the console's URL) of the local stack")
    add_data_dir(status)
    status.set_defaults(func=run_status)

    restart = subparsers.add_parser(
        "restart", help="restart one service of the running stack (foreground or detached) and wait until SERVING")
    add_data_dir(restart)
    restart.add_argument("service", choices=[info.name for info in (*SERVICES, *WEB_APPS)])
    restart.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for SERVING")
    restart.set_defaults(func=run_restart)

    down = subparsers.add_parser("down", help="stop the local stack started with `up --detach` (its supervisor first)")
    add_data_dir(down)
    down.add_argument("--timeout", type=float, default=20.0, help="seconds to wait before SIGKILL")
    down.set_defaults(func=run_down)


def health_of(target: str, timeout: float = 1.0, transport: TransportSettings | None = None) -> str:
    """SERVING, NOT_SERVING, UNKNOWN or unreachable (over `transport`, by default this process's:
    the CLI's certificate for a local stack under mutual TLS)."""
    with open_channel(target, transport or clients.transport()) as channel:
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


def _service_env(info: ServiceInfo | WebAppInfo, data_dir: Path, offset: int) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.update(_auth_env(info.name, data_dir))
    env.update(_tls_env(info.name, data_dir))
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


def _auth_env(name: str, data_dir: Path) -> dict[str, str]:
    """Token keys of one process: those of the environment when any CITETRACE_AUTH_* is set (e.g. the
    HS256 development secret, which the services warn about), else the stack's Ed25519 issuer."""
    if any(key.startswith(AUTH_PREFIX) for key in os.environ):
        return {}
    private, public = dev_issuer(data_dir, create=True)
    env = {f"{AUTH_PREFIX}RS256_PUBLIC_KEY_FILE": str(public.resolve())}
    if name in _SIGNING:
        env[f"{AUTH_PREFIX}RS256_PRIVATE_KEY_FILE"] = str(private.resolve())
    return env


def _tls_env(name: str, data_dir: Path) -> dict[str, str]:
    """Transport of one process: the environment's CITETRACE_TLS_* when set (e.g. MODE=plaintext, a
    development setting the services warn about), else mutual TLS with its own certificate from the
    local stack's CA (SAN URI spiffe://citetrace/<name>)."""
    if any(key.startswith(TLS_PREFIX) for key in os.environ):
        return {}
    return local_ca(data_dir).issue(name).env()


def _tls_mode() -> str:
    return transport_from_environment().mode if any(k.startswith(TLS_PREFIX) for k in os.environ) else "mtls"


def _known_only(info: ServiceInfo | WebAppInfo, env: dict[str, str]) -> dict[str, str]:
    """Drops *_TARGET variables a service's settings do not define (settings reject unknown keys)."""
    settings_cls = importlib.import_module(f"{info.module}.settings").Settings
    known = {f"{info.env_prefix}{f.name.upper()}" for f in dataclasses.fields(settings_cls)}
    return {k: v for k, v in env.items() if not k.startswith(info.env_prefix) or k in known}


def _die_with_parent() -> None:
    """Children of a foreground `up` get SIGTERM if `up` itself dies: no orphans."""
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _spawn(info: ServiceInfo | WebAppInfo, data_dir: Path, offset: int, detach: bool,
           note: str = "") -> subprocess.Popen:
    """One process of a service, its output appended to logs/<name>.log (after `note`, a line saying
    why it was (re)started, when there is one)."""
    logs = data_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / f"{info.name}.log", "ab") as log_file:
        if note:
            log_file.write(f"--- {_now()} citetrace: {note} ---\n".encode())
            log_file.flush()
        return subprocess.Popen(
            [sys.executable, "-m", info.module],
            env=_service_env(info, data_dir, offset),
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=None if detach else _die_with_parent,
        )


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S")


def write_state(data_dir: Path, state: dict) -> None:
    """The state file, replaced atomically (status, restart and down read it while `up` runs)."""
    path = data_dir / STATE_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2))
    tmp.replace(path)


def start_stack(data_dir: Path, offset: int, detach: bool) -> dict[str, subprocess.Popen]:
    dev_issuer(data_dir, create=True)
    mode = _tls_mode()
    if mode == "mtls" and not any(key.startswith(TLS_PREFIX) for key in os.environ):
        local_ca(data_dir).issue(CLI_IDENTITY)  # the CLI's own certificate (status, ingest, ask ...)
    procs = {info.name: _spawn(info, data_dir, offset, detach) for info in (*SERVICES, *WEB_APPS)}
    state = {
        "up_pid": os.getpid(),
        "port_offset": offset,
        "tls": mode,
        "services": {
            name: {"pid": proc.pid, "port": _info(name).port + offset, "metrics_port": _info(name).metrics_port + offset,
                   "restarts": 0}
            for name, proc in procs.items()
        },
    }
    for app in WEB_APPS:
        state["services"][app.name]["url"] = app.url(offset)
    write_state(data_dir, state)
    use_transport(data_dir)
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


# Supervision: a service that exits while the stack runs is started again after a backoff that
# doubles with each exit in a row (0.5 s, 1 s, 2 s ... at most 30 s) and is forgotten once it has
# run for STABLE_SECONDS; the other services are not touched.
RESTART_BACKOFF_SECONDS = 0.5
RESTART_BACKOFF_MAX_SECONDS = 30.0
STABLE_SECONDS = 60.0
RESTART_GRACE_SECONDS = 20.0
READY_FILE = "up-ready"  # the supervising `up` saw every service SERVING
RESTART_REQUESTS = "restart-requests"  # `citetrace restart NAME` leaves a file NAME here


def restart_backoff(crashes: int) -> float:
    """Seconds before the restart after the `crashes`-th exit in a row."""
    return min(RESTART_BACKOFF_SECONDS * 2 ** max(crashes - 1, 0), RESTART_BACKOFF_MAX_SECONDS)


def _exit_text(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-code).name}"
    return f"exited with code {code}"


@dataclasses.dataclass
class _Supervised:
    proc: subprocess.Popen
    started: float
    phase: str = "running"  # running | stopping (a requested restart) | waiting (to be started)
    crashes: int = 0  # exits in a row, for the backoff
    restarts: int = 0  # every restart, as `status` reports it
    start_at: float = 0.0
    stop_deadline: float = 0.0
    note: str = ""


class Supervisor:
    """Keeps the stack's processes running: restarts one that exited (with backoff) or whose restart
    was requested, logs each event, and keeps the state file's pids current."""

    def __init__(self, data_dir: Path, offset: int, detach: bool, procs: dict[str, subprocess.Popen],
                 out=print) -> None:
        self.data_dir, self.offset, self.detach = data_dir, offset, detach
        now = time.monotonic()
        self.entries = {name: _Supervised(proc, now) for name, proc in procs.items()}
        self.out = out
        (data_dir / RESTART_REQUESTS).mkdir(exist_ok=True)

    def log(self, message: str) -> None:
        self.out(f"{_now()} citetrace: {message}", flush=True)

    def pids(self) -> dict[str, int]:
        return {name: entry.proc.pid for name, entry in self.entries.items()}

    def tick(self) -> None:
        now = time.monotonic()
        changed = self._take_requests(now)
        for name, entry in self.entries.items():
            code = entry.proc.poll()
            if entry.phase == "running" and code is not None:
                entry.crashes += 1
                delay = restart_backoff(entry.crashes)
                entry.phase, entry.start_at = "waiting", now + delay
                entry.note = f"restart after {name} (pid {entry.proc.pid}) {_exit_text(code)}"
                self.log(f"{name} (pid {entry.proc.pid}) {_exit_text(code)}; restarting in {delay:g} s"
                         f" (exit {entry.crashes} in a row)")
            elif entry.phase == "stopping":
                if code is not None:
                    entry.phase, entry.start_at = "waiting", now
                elif now >= entry.stop_deadline:
                    _signal(entry.proc.pid, signal.SIGKILL)
            elif entry.phase == "running" and entry.crashes and now - entry.started >= STABLE_SECONDS:
                entry.crashes = 0
            if entry.phase == "waiting" and now >= entry.start_at:
                old = entry.proc.pid
                entry.proc = _spawn(_info(name), self.data_dir, self.offset, self.detach, entry.note)
                entry.phase, entry.started = "running", now
                entry.restarts += 1
                changed = True
                self.log(f"{name} restarted (pid {old} -> {entry.proc.pid})")
        if changed:
            self._write_state()

    def _take_requests(self, now: float) -> bool:
        taken = False
        for request in sorted((self.data_dir / RESTART_REQUESTS).iterdir()):
            request.unlink(missing_ok=True)
            entry = self.entries.get(request.name)
            if entry is None or entry.phase != "running":
                continue
            self.log(f"restart of {request.name} (pid {entry.proc.pid}) requested; stopping it")
            _signal(entry.proc.pid, signal.SIGTERM)
            entry.phase, entry.stop_deadline = "stopping", now + RESTART_GRACE_SECONDS
            entry.note, entry.crashes = "restart requested (citetrace restart)", 0
            taken = True
        return taken

    def _write_state(self) -> None:
        state = read_state(self.data_dir)
        for name, entry in self.entries.items():
            state["services"][name].update(pid=entry.proc.pid, restarts=entry.restarts)
        write_state(self.data_dir, state)


def run_up(args: argparse.Namespace) -> int:
    data_dir: Path = args.data_dir
    existing = read_state(data_dir).get("services", {})
    if any(_alive(entry["pid"]) for entry in existing.values()):
        print(f"citetrace: a stack is already running from {data_dir} (run `citetrace down` first)", file=sys.stderr)
        return 1
    if args.detach:
        return _up_detached(args)
    stopping = {"flag": False}

    def on_signal(signum, _frame):
        stopping["flag"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    background = args.background
    (data_dir / READY_FILE).unlink(missing_ok=True)
    procs = start_stack(data_dir, args.port_offset, detach=background)
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
    print("all SERVING; supervising (a service that exits is restarted); press Ctrl-C to stop", flush=True)
    (data_dir / READY_FILE).touch()
    supervisor = Supervisor(data_dir, args.port_offset, background, procs)
    while not stopping["flag"]:
        supervisor.tick()
        time.sleep(0.1)
    print("stopping ...", flush=True)
    stop_pids(supervisor.pids(), 20.0)
    (data_dir / STATE_FILE).unlink(missing_ok=True)
    (data_dir / READY_FILE).unlink(missing_ok=True)
    print("stopped", flush=True)
    return 0


def _up_detached(args: argparse.Namespace) -> int:
    """`up --detach`: the supervising `up` as a background process (its output in logs/up.log);
    returns once it reports every service SERVING, or fails with its log when it gives up."""
    data_dir: Path = args.data_dir
    logs = data_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    ready = data_dir / READY_FILE
    ready.unlink(missing_ok=True)
    with open(logs / "up.log", "ab") as log_file:
        supervisor = subprocess.Popen(
            [sys.executable, "-m", "apps.cli.main", "up", "--background", "--data-dir", str(data_dir),
             "--port-offset", str(args.port_offset), "--timeout", str(args.timeout)],
            stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )
    print(f"starting {len(SERVICES)} services and the console (logs in {logs}) ...", flush=True)
    deadline = time.monotonic() + args.timeout + 30
    while not ready.exists():
        if supervisor.poll() is not None or time.monotonic() > deadline:
            if supervisor.poll() is None:
                supervisor.terminate()
                supervisor.wait(timeout=30)
            log_text = (logs / "up.log").read_text(errors="replace").splitlines()[-20:]
            print("\n".join(log_text), file=sys.stderr)
            return 1
        time.sleep(0.2)
    _print_table(data_dir)
    print(f"stack running in the background, supervised (pid {supervisor.pid}, log {logs / 'up.log'}); "
          "stop it with `citetrace down`")
    return 0


def run_restart(args: argparse.Namespace) -> int:
    """Restarts one service of a running stack: through its supervising `up` (which stops it with
    SIGTERM, SIGKILL after a grace, and starts it again), or directly when no `up` runs."""
    data_dir: Path = args.data_dir
    state = read_state(data_dir)
    entry = state.get("services", {}).get(args.service)
    if entry is None:
        print(f"citetrace: no running stack in {data_dir} (start one with `citetrace up`)", file=sys.stderr)
        return 1
    started = time.monotonic()
    old_pid = entry["pid"]
    supervisor = state.get("up_pid")
    if supervisor and _alive(supervisor):
        (data_dir / RESTART_REQUESTS).mkdir(exist_ok=True)
        (data_dir / RESTART_REQUESTS / args.service).touch()
    else:
        stop_pids({args.service: old_pid}, RESTART_GRACE_SECONDS)
        proc = _spawn(_info(args.service), data_dir, state.get("port_offset", 0), True,
                      "restart requested (citetrace restart, unsupervised)")
        entry.update(pid=proc.pid, restarts=entry.get("restarts", 0) + 1)
        write_state(data_dir, state)
    deadline = started + args.timeout
    while time.monotonic() < deadline:
        current = read_state(data_dir).get("services", {}).get(args.service, {})
        if current.get("pid") not in (None, old_pid) and _health(args.service, current) == "SERVING":
            print(f"{args.service} restarted (pid {old_pid} -> {current['pid']}), SERVING after "
                  f"{time.monotonic() - started:.1f} s")
            return 0
        time.sleep(0.1)
    print(f"citetrace: {args.service} did not become SERVING within {args.timeout:g} s after the restart; "
          f"see {data_dir / 'logs' / (args.service + '.log')}", file=sys.stderr)
    return 1


def _print_table(data_dir: Path) -> bool:
    state = read_state(data_dir).get("services", {})
    all_serving = True
    print(f"{'service':<20} {'address':<22} {'metrics':<8} {'restarts':<8} health")
    for info in (*SERVICES, *WEB_APPS):
        entry = state.get(info.name, {"port": info.port, "metrics_port": info.metrics_port})
        address = entry.get("url") or (info.url() if isinstance(info, WebAppInfo) else f"127.0.0.1:{entry['port']}")
        health = _health(info.name, entry)
        all_serving &= health == "SERVING"
        print(f"{info.name:<20} {address:<22} {entry['metrics_port']:<8} {entry.get('restarts', 0):<8} {health}")
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
        _signal(up_pid, signal.SIGTERM)  # the supervising `up` stops its own children (and restarts none)
        deadline = time.monotonic() + args.timeout + 5
        while time.monotonic() < deadline and _alive(up_pid):
            time.sleep(0.1)
        services = read_state(args.data_dir).get("services", services)  # its pids after restarts
    stop_pids({name: entry["pid"] for name, entry in services.items()}, args.timeout)
    (args.data_dir / STATE_FILE).unlink(missing_ok=True)
    print(f"stopped {len(services)} services")
    return 0
