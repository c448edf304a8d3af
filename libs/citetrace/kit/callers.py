"""Who may call what, by service identity (issue 17 §1): the identity is the caller's mTLS
certificate's SAN URI (kit.tls.peer_identity), never a token.

`ONLY` names the RPCs that only some callers may make: the writes of evidence. Every other RPC is
open to any caller with a certificate of our CA (users reach the services through the CLI, the
console or the orchestrator, and are then scoped by their own forwarded token).

A call with no bearer token is a service acting on its own (an outbox redelivering, a relay): it is
accepted only from a backend service, for an RPC that `SERVICE_CALLS` lists for it, with the tenant
it names in `citetrace-tenant` metadata; its principal has role `service`.
"""

from __future__ import annotations

from citetrace.kit.stack import SERVICES

# The backend services (not the CLI, not the console): a bearer token they forward is the user's,
# and they act for that user (Principal.actor = "service:<name>").
BACKEND_SERVICES = frozenset(info.name for info in SERVICES)
TENANT_METADATA = "citetrace-tenant"

_TRACE = "citetrace.trace.v1.TraceService"

# RPC (full method name) -> the only identities that may call it.
ONLY: dict[str, frozenset[str]] = {
    f"/{_TRACE}/RecordTrace": frozenset({"orchestrator"}),
    # retrieval's version-event relay; the CLI for a policy_admin recording one by hand.
    f"/{_TRACE}/RecordVersionEvent": frozenset({"retrieval", "cli"}),
    f"/{_TRACE}/RecordActionEvent": frozenset({"scheduler_gateway"}),
}

# Service identity -> the RPCs it may call with no user token, as itself, for a tenant.
SERVICE_CALLS: dict[str, frozenset[str]] = {
    "orchestrator": frozenset({f"/{_TRACE}/RecordTrace"}),
    "retrieval": frozenset({f"/{_TRACE}/RecordVersionEvent"}),
    "scheduler_gateway": frozenset({f"/{_TRACE}/RecordActionEvent"}),
}


def may_call(method: str, peer: str) -> bool:
    """Whether `peer` (a service identity, '' for none) may call `method` at all."""
    allowed = ONLY.get(method)
    return allowed is None or peer in allowed


def may_act_alone(method: str, peer: str) -> bool:
    """Whether `peer` may call `method` with no user token (as a service, for a tenant)."""
    return method in SERVICE_CALLS.get(peer, frozenset())
