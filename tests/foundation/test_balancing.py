"""Balanced gRPC (issue 21): the kit's client channels spread calls over every address a target
resolves to (round_robin), and the kit's servers close connections after max_connection_age so
clients reconnect (and, behind a headless Service, re-resolve and find new pods). Real gRPC servers
in process, real channels from citetrace.kit.clients."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import Counter

import pytest
from citetrace.kit import clients
from citetrace.kit import testing as kit_testing
from citetrace.kit.balancing import GrpcSettings, client_options, grpc_settings, server_options
from citetrace.kit.server import ServiceRunner, ServiceSpec
from citetrace.kit.settings import ServerSettings, SettingsError
from citetrace.retrieval.v1 import retrieval_service_pb2 as ret_pb
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as ret_grpc


class CountingRetrieval(ret_grpc.RetrievalServiceServicer):
    """Records who called (the client's address and port: one per connection)."""

    def __init__(self) -> None:
        self.peers: list[str] = []
        self._lock = threading.Lock()

    def GetPassages(self, request, context):
        with self._lock:
            self.peers.append(context.peer())
        return ret_pb.GetPassagesResponse()


@contextlib.contextmanager
def replicas(count: int, auth, balancing: GrpcSettings | None = None):
    servicers, runners = [], []
    try:
        for _ in range(count):
            servicer = CountingRetrieval()
            spec = ServiceSpec(name="retrieval",
                               full_name=ret_pb.DESCRIPTOR.services_by_name["RetrievalService"].full_name,
                               servicer=servicer, register=ret_grpc.add_RetrievalServiceServicer_to_server)
            runner = ServiceRunner(spec, ServerSettings(port=0, metrics_port=-1, grace_seconds=0.2), auth, balancing)
            runner.start()
            runner.warm_up()
            servicers.append(servicer)
            runners.append(runner)
        yield servicers, runners
    finally:
        for runner in runners:
            runner.stop(0.2)


@pytest.fixture
def fresh_channels(monkeypatch):
    for name in [n for n in os.environ if n.startswith("CITETRACE_GRPC_")]:
        monkeypatch.delenv(name)
    clients.close_channels()
    yield monkeypatch
    clients.close_channels()


def _call(target: str, metadata) -> None:
    clients.stub(ret_grpc.RetrievalServiceStub, target).GetPassages(
        ret_pb.GetPassagesRequest(), timeout=5, metadata=metadata)


def test_round_robin_spreads_calls_over_every_address_of_one_target(fresh_channels):
    auth = kit_testing.test_auth_settings()
    metadata = kit_testing.token_metadata(auth, "tenant-a")
    with replicas(2, auth) as (servicers, runners):
        target = "ipv4:" + ",".join(f"127.0.0.1:{r.port}" for r in runners)
        deadline = time.monotonic() + 5
        while not all(s.peers for s in servicers) and time.monotonic() < deadline:  # both subchannels up
            _call(target, metadata)
        before = [len(s.peers) for s in servicers]
        for _ in range(20):
            _call(target, metadata)
        counts = [len(s.peers) - b for s, b in zip(servicers, before, strict=True)]
    assert sum(counts) == 20
    assert min(counts) >= 8, f"round_robin should alternate between the two servers, got {counts}"


def test_pick_first_from_the_environment_pins_every_call_to_one_server(fresh_channels):
    """The control: the policy comes from CITETRACE_GRPC_LB_POLICY, and without round_robin one
    server takes everything (so the test above can fail)."""
    fresh_channels.setenv("CITETRACE_GRPC_LB_POLICY", "pick_first")
    auth = kit_testing.test_auth_settings()
    metadata = kit_testing.token_metadata(auth, "tenant-a")
    with replicas(2, auth) as (servicers, runners):
        target = "ipv4:" + ",".join(f"127.0.0.1:{r.port}" for r in runners)
        for _ in range(20):
            _call(target, metadata)
        counts = sorted(len(s.peers) for s in servicers)
    assert counts == [0, 20]


def _ports_seen_over(seconds: float, balancing: GrpcSettings) -> tuple[Counter, int]:
    auth = kit_testing.test_auth_settings()
    metadata = kit_testing.token_metadata(auth, "tenant-a")
    calls = 0
    with replicas(1, auth, balancing) as (servicers, runners):
        target = f"127.0.0.1:{runners[0].port}"
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            _call(target, metadata)  # every call succeeds, also across a GOAWAY
            calls += 1
            time.sleep(0.1)
        return Counter(servicers[0].peers), calls


def test_max_connection_age_makes_clients_reconnect_without_failed_calls(fresh_channels):
    aged, calls = _ports_seen_over(3.5, GrpcSettings(max_connection_age_ms=1000, max_connection_age_grace_ms=500))
    assert sum(aged.values()) == calls
    assert len(aged) >= 2, f"connections older than 1 s must be closed and reopened, saw {dict(aged)}"
    clients.close_channels()
    kept, calls = _ports_seen_over(2.5, GrpcSettings(max_connection_age_ms=0))
    assert sum(kept.values()) == calls and len(kept) == 1, f"without a max age one connection stays, saw {kept}"


def test_settings_come_from_the_environment_and_bad_values_are_named():
    assert grpc_settings({}) == GrpcSettings()
    loaded = grpc_settings({"CITETRACE_GRPC_KEEPALIVE_TIME_MS": "20000", "CITETRACE_GRPC_MAX_CONNECTION_AGE_MS": "60000"})
    assert loaded.keepalive_time_ms == 20000 and loaded.max_connection_age_ms == 60000
    with pytest.raises(SettingsError, match="lb_policy"):
        grpc_settings({"CITETRACE_GRPC_LB_POLICY": "random"})
    with pytest.raises(SettingsError, match="CITETRACE_GRPC_KEEPALIVE_TIMEOUT"):
        grpc_settings({"CITETRACE_GRPC_KEEPALIVE_TIMEOUT": "5"})  # a typo is an error, not ignored
    options = dict(client_options(loaded))
    assert '"round_robin"' in options["grpc.service_config"] and options["grpc.keepalive_time_ms"] == 20000
    server = dict(server_options(loaded))
    assert server["grpc.max_connection_age_ms"] == 60000
    # the server accepts pings as often as the clients send them
    assert server["grpc.http2.min_ping_interval_without_data_ms"] <= loaded.keepalive_time_ms


def test_a_dns_target_as_written_in_the_manifests_reaches_the_server(fresh_channels):
    """Kubernetes targets are dns:///<service>:<port> (gRPC's DNS resolver, every A record of a
    headless Service); the kit channel accepts the form and calls get through."""
    auth = kit_testing.test_auth_settings()
    metadata = kit_testing.token_metadata(auth, "tenant-a")
    with replicas(1, auth) as (servicers, runners):
        for _ in range(3):
            _call(f"dns:///localhost:{runners[0].port}", metadata)
        assert len(servicers[0].peers) == 3
