"""A replicated local stack for tests (issue 21 point 3): two (or N) processes each of retrieval,
trace and orchestrator over shared stores, one each of scheduler_gateway, generation and
citation_validator.

Shared: one PostgreSQL database per service (created for the run, dropped afterwards), one
OpenSearch index prefix (deleted afterwards), one signing key per service (made before the start
and mounted, SIGNING_KEY_CREATE=false, as in a deployment), one token issuer. Every process starts at
once, as pods do: the replicas of a service migrate one database under its migration lock. Per replica: a data directory (the
retrieval replica's vector cache; the orchestrator replica's trace outbox, which is why a killed
orchestrator is restarted on the same directory, like a StatefulSet pod on its own volume) and a
fixed port, so a restarted replica comes back at the address its callers' channels already hold.

Every caller reaches a replicated service through one static multi-address target
(`ipv4:127.0.0.1:p1,127.0.0.1:p2`) and the kit's round_robin channel (citetrace.kit.balancing):
the orchestrators' channels to retrieval and trace, trace's to retrieval, retrieval's to trace,
and the test's own clients (`target(name)`).

Retrieval replicas run with OPENSEARCH_REBUILD_ON_START=false: a rebuild writes a new generation
and switches the alias at its end, and writes another replica makes to the alias meanwhile land in
the old generation and are gone after the switch (the rebuild's lock is per process). With false a
starting replica uses the live generation (creating the first one if none)."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

from citetrace.kit.auth import AuthSettings
from citetrace.kit.stack import BY_NAME
from citetrace.kit.testing import auth_env

from apps.cli.stack import health_of

from .conftest import REPO, free_port

REPLICATED = ("retrieval", "trace", "orchestrator")
SINGLE = ("scheduler_gateway", "generation", "citation_validator")
DATABASES = ("retrieval", "trace", "orchestrator", "scheduler_gateway")
SERVING_TIMEOUT_SECONDS = 180.0


@dataclasses.dataclass
class Replica:
    service: str
    index: int
    port: int
    data_dir: Path
    env: dict[str, str]
    proc: subprocess.Popen | None = None
    starts: int = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.data_dir / f"{self.service}-{self.index}.log"

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as log:
            log.write(f"--- start {self.starts + 1} ---\n".encode())
            log.flush()
            self.proc = subprocess.Popen([sys.executable, "-m", BY_NAME[self.service].module], env=self.env,
                                         stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=REPO,
                                         start_new_session=True)
        self.starts += 1

    def wait_serving(self, timeout: float = SERVING_TIMEOUT_SECONDS) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.service}-{self.index} exited with {self.proc.returncode}; see {self.log}:\n"
                                   + self.log.read_text(errors="replace")[-3000:])
            if health_of(self.address, timeout=0.5) == "SERVING":
                return
            time.sleep(0.2)
        raise RuntimeError(f"{self.service}-{self.index} on {self.address} not SERVING after {timeout:g} s; see {self.log}")

    def pause(self) -> None:
        """SIGSTOP: the process hangs (calls to it time out) until resume()."""
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.proc.pid, signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL: no drain, no goodbye; whatever was in flight is cut off."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def terminate(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()

    def wait_stopped(self) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=15)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=15)


@dataclasses.dataclass
class ReplicatedStack:
    root: Path
    auth: AuthSettings
    database_urls: dict[str, str]
    opensearch_url: str
    index_prefix: str
    replicas: dict[str, list[Replica]]

    def target(self, service: str) -> str:
        """The static multi-address target of every replica of a service (one address if single)."""
        return "ipv4:" + ",".join(r.address for r in self.replicas[service])

    def replica(self, service: str, index: int) -> Replica:
        return self.replicas[service][index]

    def restart(self, *replicas: Replica) -> None:
        """Starts the replicas together and waits for them together; again after a kill: same port,
        data dir and settings (killed pods coming back)."""
        for replica in replicas:
            replica.start()
        for replica in replicas:
            replica.wait_serving()

    def outbox_path(self, index: int) -> Path:
        return self.replica("orchestrator", index).data_dir / "orchestrator" / "trace-outbox.sqlite"


def _base_env(auth: AuthSettings) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CITETRACE_", "OTEL_"))}
    # Plaintext, explicitly (a development setting), like this test process's own channels.
    env.update({"OPENBLAS_NUM_THREADS": "1", **auth_env(auth), "CITETRACE_TLS_MODE": "plaintext"})
    return env


def _service_settings(stack: ReplicatedStack, service: str, data_dir: Path, keys: Path) -> dict[str, str]:
    """The settings of one replica, without prefix (upper-cased into CITETRACE_<SERVICE>_*)."""
    settings = {"metrics_port": "-1", "data_dir": str(data_dir), "grace_seconds": "1"}
    if service in stack.database_urls:
        settings["database_url"] = stack.database_urls[service]
    if service == "retrieval":
        settings.update(backend="opensearch", opensearch_hosts=stack.opensearch_url,
                        opensearch_index_prefix=stack.index_prefix, opensearch_rebuild_on_start="false",
                        signing_key_file=str(keys / "retrieval-signing.pem"), signing_key_create="false",
                        trace_target=stack.target("trace"),
                        version_event_poll_seconds="0.5")
    elif service == "trace":
        settings.update(signing_key_file=str(keys / "trace-signing.pem"), signing_key_create="false",
                        retrieval_target=stack.target("retrieval"),
                        checkpoint_dir=str(keys / "checkpoints"), checkpoint_interval_seconds="0",
                        retention_interval_seconds="0", review_backlog_interval_seconds="0")
    elif service == "orchestrator":
        settings.update({f"{other}_target": stack.target(other) for other in (*REPLICATED, *SINGLE)
                         if other != "orchestrator"})
        # An Ask cut off by a SIGKILL leaves its idempotency key reserved; the next retry takes it
        # over after this (the default 120 s would outlast the test).
        settings.update(default_deadline_seconds="8", idempotency_stale_seconds="10")
    return settings


def _replica(stack: ReplicatedStack, service: str, index: int) -> Replica:
    info = BY_NAME[service]
    port = free_port()
    data_dir = stack.root / f"{service}-{index}"
    env = _base_env(stack.auth)
    env[f"{info.env_prefix}PORT"] = str(port)
    return Replica(service, index, port, data_dir, env)


def _fill_env(stack: ReplicatedStack, keys: Path) -> None:
    """Settings need every target, so they are filled in once every port is known; a setting the
    service does not define is left out (settings refuse unknown variables)."""
    for service, replicas in stack.replicas.items():
        prefix = BY_NAME[service].env_prefix
        known = {f.name for f in dataclasses.fields(importlib.import_module(f"services.{service}.settings").Settings)}
        for replica in replicas:
            settings = {key: value for key, value in _service_settings(stack, service, replica.data_dir, keys).items()
                        if key in known}
            replica.env.update({f"{prefix}{key.upper()}": value for key, value in settings.items()})


@contextlib.contextmanager
def postgres_databases(admin_url: str, names: tuple[str, ...]) -> Iterator[dict[str, str]]:
    """A fresh PostgreSQL database per name, dropped afterwards (FORCE: a killed replica's
    connections may linger)."""
    import sqlalchemy

    admin = sqlalchemy.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    created: dict[str, str] = {}
    try:
        with admin.connect() as conn:
            for name in names:
                database = f"replicas_{name}_{uuid.uuid4().hex[:8]}"
                conn.exec_driver_sql(f'CREATE DATABASE "{database}"')
                created[name] = admin_url.rsplit("/", 1)[0] + f"/{database}"
        yield created
    finally:
        with admin.connect() as conn:
            for url in created.values():
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')
        admin.dispose()


def delete_indices(opensearch_url: str, prefix: str) -> None:
    request = urllib.request.Request(f"{opensearch_url}/{prefix}*?expand_wildcards=all", method="DELETE")
    with contextlib.suppress(OSError), urllib.request.urlopen(request, timeout=30) as reply:
        json.load(reply)


@contextlib.contextmanager
def replicated_stack(root: Path, auth: AuthSettings, admin_postgres_url: str, opensearch_url: str,
                     replicas: int = 2, slots_file: Path | None = None) -> Iterator[ReplicatedStack]:
    """The stack started and SERVING; everything stopped and dropped on exit."""
    from citetrace.signing import generate_key_files

    root.mkdir(parents=True, exist_ok=True)
    keys = root / "keys"
    for service in ("retrieval", "trace"):
        generate_key_files(keys / f"{service}-signing.pem")
    prefix = f"ct-replicas-{uuid.uuid4().hex[:8]}-"
    with postgres_databases(admin_postgres_url, DATABASES) as urls:
        stack = ReplicatedStack(root, auth, urls, opensearch_url, prefix, {})
        for service in (*REPLICATED, *SINGLE):
            count = replicas if service in REPLICATED else 1
            stack.replicas[service] = [_replica(stack, service, i) for i in range(count)]
        _fill_env(stack, keys)
        try:
            if slots_file is not None:
                _load_slots(urls["scheduler_gateway"], slots_file)
            stack.restart(*(replica for group in stack.replicas.values() for replica in group))
            yield stack
        finally:
            everyone = [replica for group in stack.replicas.values() for replica in group]
            for replica in everyone:  # SIGTERM to all, then wait: the drains overlap
                replica.terminate()
            for replica in everyone:
                replica.wait_stopped()
            delete_indices(opensearch_url, prefix)


def _load_slots(database_url: str, slots_file: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "apps.cli.main", "slots", "load", "--database-url", database_url,
                           str(slots_file)], capture_output=True, text=True, timeout=120, cwd=REPO)
    if done.returncode != 0:
        raise RuntimeError(f"slots load failed: {done.stdout}{done.stderr}")
