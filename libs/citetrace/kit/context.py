"""Per-call context (the verified principal, its token and the call deadline), set by the server
interceptor and read by servicers and downstream clients. Free of grpc imports."""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator

from citetrace.kit.auth import Principal
from citetrace.kit.errors import DeadlineExceeded, Unauthenticated

_principal: contextvars.ContextVar[Principal | None] = contextvars.ContextVar("principal", default=None)
_token: contextvars.ContextVar[str | None] = contextvars.ContextVar("token", default=None)
_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("deadline", default=None)
# The calling service's identity (kit.tls.peer_identity: its mTLS certificate's SAN URI), '' for a
# caller that is no service of ours.
_peer: contextvars.ContextVar[str] = contextvars.ContextVar("peer", default="")


def current_principal() -> Principal:
    principal = _principal.get()
    if principal is None:
        raise Unauthenticated("TOKEN_MISSING", "no authenticated principal for this call")
    return principal


def current_token() -> str | None:
    return _token.get()


def current_peer() -> str:
    """The service that made the current call ('' when none of ours did)."""
    return _peer.get()


def remaining_seconds() -> float | None:
    """Seconds left before the incoming call's deadline, or None when it has none."""
    deadline = _deadline.get()
    return None if deadline is None else deadline - time.monotonic()


def check_deadline(what: str) -> None:
    """Raises DEADLINE_EXCEEDED DEADLINE_PASSED when the incoming call's deadline has passed: a write
    calls it inside its transaction, just before the commit, so that a write its caller has given up
    on is never committed (issue 17 §4). A call without a deadline always passes."""
    left = remaining_seconds()
    if left is not None and left <= 0:
        raise DeadlineExceeded("DEADLINE_PASSED",
                               f"{what} was not committed: the caller's deadline passed {-left:.3f}s ago",
                               operation=what)


@contextlib.contextmanager
def call_context(principal: Principal | None, token: str | None, timeout: float | None,
                 peer: str = "") -> Iterator[None]:
    tokens = (
        _principal.set(principal),
        _token.set(token),
        _deadline.set(None if timeout is None else time.monotonic() + timeout),
    )
    peer_token = _peer.set(peer)
    try:
        yield
    finally:
        _peer.reset(peer_token)
        _deadline.reset(tokens[2])
        _token.reset(tokens[1])
        _principal.reset(tokens[0])
