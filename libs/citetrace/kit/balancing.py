"""How gRPC connections are spread over replicas, read from CITETRACE_GRPC_* variables (one set for
every service, like CITETRACE_AUTH_*).

Client side (every channel of citetrace.kit.clients): the `round_robin` load-balancing policy, so a
target that resolves to several addresses (a headless Kubernetes Service, `dns:///name:port`, or
`ipv4:a:p1,b:p2`) gets one subchannel per address and spreads calls over them; the resolver's own
service config (DNS TXT records) is ignored, so the policy is ours. Connections are health-checked
(a replica that is NOT_SERVING gets no calls; see service_config). Keepalive pings find a dead peer
(a pod gone without a FIN) within keepalive_time + keepalive_timeout.

Server side (citetrace.kit.server): connections are closed after max_connection_age (plus a grace
period for calls in flight) with a GOAWAY, so clients re-resolve and connect to pods added since —
without it, long-lived HTTP/2 connections keep every caller on the pods that existed when it
started. The server accepts the clients' keepalive pings (also on idle connections) instead of
answering them with GOAWAY too_many_pings."""

from __future__ import annotations

import dataclasses
import json
import os

from citetrace.kit.settings import load_settings, require

GRPC_PREFIX = "CITETRACE_GRPC_"
LB_POLICIES = ("round_robin", "pick_first")


@dataclasses.dataclass(frozen=True)
class GrpcSettings:
    # round_robin: calls spread over every address the target resolves to; pick_first: one.
    lb_policy: str = "round_robin"
    # Client keepalive: a ping after this long without activity, the connection dropped when no
    # answer comes within keepalive_timeout_ms (also on idle connections).
    keepalive_time_ms: int = 30_000
    keepalive_timeout_ms: int = 10_000
    # Server: a connection is closed (GOAWAY) after this age, calls in flight get the grace period.
    # 0 disables (connections live until a peer closes them).
    max_connection_age_ms: int = 300_000
    max_connection_age_grace_ms: int = 30_000

    def __post_init__(self) -> None:
        require(self.lb_policy in LB_POLICIES, f"lb_policy must be one of {', '.join(LB_POLICIES)}")
        require(self.keepalive_time_ms >= 1000, "keepalive_time_ms must be >= 1000")
        require(self.keepalive_timeout_ms >= 100, "keepalive_timeout_ms must be >= 100")
        require(self.max_connection_age_ms == 0 or self.max_connection_age_ms >= 1000,
                "max_connection_age_ms must be 0 (off) or >= 1000")
        require(self.max_connection_age_grace_ms >= 0, "max_connection_age_grace_ms must be >= 0")


def grpc_settings(environ: dict[str, str] | None = None) -> GrpcSettings:
    """The settings of this process (an unknown or malformed CITETRACE_GRPC_* variable is an error)."""
    return load_settings(GrpcSettings, GRPC_PREFIX, os.environ if environ is None else environ)


def service_config(settings: GrpcSettings) -> str:
    """The policy, and client-side health checking (grpc.health.v1 Watch of the server's overall
    status): a subchannel whose server is NOT_SERVING (warming up, draining) gets no calls, and is
    used again the moment it reports SERVING. gRPC applies it under round_robin (not pick_first)."""
    return json.dumps({"loadBalancingConfig": [{settings.lb_policy: {}}], "healthCheckConfig": {"serviceName": ""}})


def client_options(settings: GrpcSettings) -> list[tuple[str, object]]:
    """Channel arguments for a client channel (add the caller's own, e.g. reconnect backoff)."""
    return [
        ("grpc.service_config", service_config(settings)),
        ("grpc.service_config_disable_resolution", 1),
        ("grpc.keepalive_time_ms", settings.keepalive_time_ms),
        ("grpc.keepalive_timeout_ms", settings.keepalive_timeout_ms),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_pings_without_data", 0),
    ]


def server_options(settings: GrpcSettings) -> list[tuple[str, object]]:
    """Server arguments: bounded connection age, and the clients' keepalive pings accepted."""
    options: list[tuple[str, object]] = [
        ("grpc.keepalive_permit_without_calls", 1),
        # Pings no more often than the clients send them are fine (the default, 5 min, would make
        # the server answer a 30 s keepalive with GOAWAY too_many_pings).
        ("grpc.http2.min_ping_interval_without_data_ms", min(settings.keepalive_time_ms, 10_000)),
        ("grpc.http2.max_ping_strikes", 0),
    ]
    if settings.max_connection_age_ms:
        options += [("grpc.max_connection_age_ms", settings.max_connection_age_ms),
                    ("grpc.max_connection_age_grace_ms", settings.max_connection_age_grace_ms)]
    return options
