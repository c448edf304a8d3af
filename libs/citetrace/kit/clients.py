"""Client helpers: channels with OpenTelemetry context propagation and mutual TLS (the process's
certificate, kit.tls; CITETRACE_TLS_*), the caller's bearer token forwarded downstream, a deadline on every call (never longer than the incoming call's), and the one
mapping of a failed call to the kit's DomainError (`domain_error`), so callers branch on domain
errors and never on grpc status codes."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from opentelemetry.instrumentation.grpc import client_interceptor as otel_client_interceptor
from opentelemetry.instrumentation.grpc import grpcext

from citetrace.kit import errors
from citetrace.kit.auth import bearer_metadata
from citetrace.kit.balancing import client_options, grpc_settings
from citetrace.kit.context import current_token, remaining_seconds
from citetrace.kit.tls import PEER_METADATA, TransportSettings, open_channel, transport_from_environment

Stub = TypeVar("Stub")

DEFAULT_TIMEOUT_SECONDS = 5.0
# Time kept back from a parent deadline so the caller can still answer after a timed-out call.
DEADLINE_RESERVE_SECONDS = 0.02

_channels: dict[str, grpc.Channel] = {}
_raw_channels: dict[str, grpc.Channel] = {}
_lock = threading.Lock()
_transport: list[TransportSettings] = []  # read from the environment on first use
_transport_lock = threading.Lock()  # not _lock: channel() reads the transport while holding that
_identity: list[str] = [""]


def transport() -> TransportSettings:
    """This process's transport settings (CITETRACE_TLS_*, read once, unless configured)."""
    with _transport_lock:
        if not _transport:
            _transport.append(transport_from_environment())
        return _transport[0]


def configured() -> bool:
    """Whether this process's transport settings are fixed already (read or configured)."""
    with _transport_lock:
        return bool(_transport)


def configure_transport(settings: TransportSettings) -> None:
    """Sets this process's transport settings instead of the environment's (in-process tests and
    benchmarks; the CLI with the local stack's certificate). Closes the channels opened so far when the
    settings change: the channels already open use equal settings, and closing them would break every
    stub holding one (an in-process CLI command run beside in-process services, as the replay test does)."""
    with _transport_lock:
        if _transport and _transport[0] == settings:
            return
    close_channels()
    with _transport_lock:
        _transport[:] = [settings]


def set_process_identity(name: str) -> None:
    """The service this process is (run_service sets it): the identity its calls claim in plaintext
    development mode, where no certificate says so."""
    _identity[0] = name


# Recovery: a downstream that was restarted is used again within ~1 s of its SERVING. Reconnect
# backoff starts at 100 ms and is capped at 500 ms (gRPC's defaults, 1 s growing to 120 s, kept
# callers failing long after a restart); a connection attempt still gets at least 1 s
# (min_reconnect_backoff is gRPC's minimum connect timeout). With the health-checked connections of
# kit.balancing (grpc.health.v1 Watch), a process that listens but is still warming up or draining
# (NOT_SERVING) gets no calls, and its SERVING reaches the channel at once.
RECONNECT_INITIAL_BACKOFF_MS = 100
RECONNECT_MAX_BACKOFF_MS = 500
CONNECT_TIMEOUT_MIN_MS = 1000
RECONNECT_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.initial_reconnect_backoff_ms", RECONNECT_INITIAL_BACKOFF_MS),
    ("grpc.min_reconnect_backoff_ms", CONNECT_TIMEOUT_MIN_MS),
    ("grpc.max_reconnect_backoff_ms", RECONNECT_MAX_BACKOFF_MS),
)


def channel(target: str) -> grpc.Channel:
    """One shared, instrumented channel per target (channels are thread-safe and expensive)."""
    with _lock:
        if target not in _channels:
            # round_robin over every address the target resolves to (a headless Service:
            # dns:///name:port), health-checked, keepalive (citetrace.kit.balancing,
            # CITETRACE_GRPC_*); the short reconnect backoff of RECONNECT_OPTIONS.
            raw = open_channel(target, transport(), options=[*client_options(grpc_settings()),
                                                             ("grpc.enable_retries", 0), *RECONNECT_OPTIONS,
                                                             # A channel's connections are its own (not
                                                             # shared with a forgotten channel's backoff).
                                                             ("grpc.use_local_subchannel_pool", 1)])
            # The OTel client interceptor is a grpcext interceptor, not a grpc.*ClientInterceptor:
            # grpc.intercept_channel rejects it, grpcext.intercept_channel wraps it.
            _raw_channels[target] = raw
            _channels[target] = grpcext.intercept_channel(raw, otel_client_interceptor())
        return _channels[target]


def forget_channel(target: str) -> None:
    """Drops the cached channel to `target` without closing it (its holders keep it): the next
    `channel(target)` connects afresh. A process that starts a server on a port it had a channel to
    (tests: an ephemeral port reused after an earlier server, or a port that was a dead target) must
    not inherit that channel's reconnect backoff, in which calls fail at once with UNAVAILABLE."""
    with _lock:
        _raw_channels.pop(target, None)
        _channels.pop(target, None)


def close_channels() -> None:
    with _lock:
        for ch in _raw_channels.values():
            ch.close()
        _raw_channels.clear()
        _channels.clear()


def stub(stub_cls: Callable[[grpc.Channel], Stub], target: str) -> Stub:
    return stub_cls(channel(target))


def effective_timeout(timeout: float | None = None) -> float:
    """The deadline for a downstream call: the requested (or default) timeout, capped by what is
    left of the incoming call's deadline."""
    wanted = DEFAULT_TIMEOUT_SECONDS if timeout is None else timeout
    left = remaining_seconds()
    if left is not None:
        wanted = min(wanted, max(left - DEADLINE_RESERVE_SECONDS, 0.001))
    return wanted


def call(method: Callable[..., Any], request: Any, *, timeout: float | None = None, token: str | None = None,
         caller: str = "", metadata: tuple[tuple[str, str], ...] = ()) -> Any:
    """Calls a unary RPC with a deadline and the bearer token of the current call (or `token`; none
    when `metadata` is given without one: a service calling as itself, kit.trace_client). In
    plaintext development mode the call claims to come from `caller` (else this process's service);
    under mTLS the certificate says who calls and no claim is sent."""
    bearer = token or (None if metadata else current_token())
    metadata = (*(bearer_metadata(bearer) if bearer else ()), *metadata)
    claimed = caller or _identity[0]
    if claimed and transport().plaintext:
        metadata = (*metadata, (PEER_METADATA, claimed))
    return method(request, timeout=effective_timeout(timeout), metadata=metadata)


def error_info(error: grpc.RpcError) -> error_details_pb2.ErrorInfo | None:
    """The ErrorInfo detail of a failed call, if the server sent one."""
    status = rpc_status.from_call(error)
    if status is None:
        return None
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            return info
    return None


_ERROR_BY_CODE: dict[grpc.StatusCode, type[errors.DomainError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: errors.InvalidArgument,
    grpc.StatusCode.NOT_FOUND: errors.NotFound,
    grpc.StatusCode.ALREADY_EXISTS: errors.AlreadyExists,
    grpc.StatusCode.PERMISSION_DENIED: errors.PermissionDenied,
    grpc.StatusCode.UNAUTHENTICATED: errors.Unauthenticated,
    grpc.StatusCode.FAILED_PRECONDITION: errors.FailedPrecondition,
    grpc.StatusCode.ABORTED: errors.Aborted,
    grpc.StatusCode.UNAVAILABLE: errors.Unavailable,
    grpc.StatusCode.DEADLINE_EXCEEDED: errors.DeadlineExceeded,
    grpc.StatusCode.UNIMPLEMENTED: errors.Unimplemented,
    grpc.StatusCode.RESOURCE_EXHAUSTED: errors.ResourceExhausted,
    grpc.StatusCode.DATA_LOSS: errors.DataLoss,
    # A call that failed without a status (connection reset, channel closed) is worth retrying.
    grpc.StatusCode.UNKNOWN: errors.Unavailable,
}


def domain_error(error: grpc.RpcError, service: str) -> errors.DomainError:
    """The kit DomainError of a failed call to `service`: the same canonical code (INTERNAL for the
    codes the domain does not use), the server's ErrorInfo reason (else the code's name), its
    message, and metadata `service` (who answered so) plus the ErrorInfo's own metadata (e.g. the
    passage_id a NOT_FOUND names)."""
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    code = code if isinstance(code, grpc.StatusCode) else grpc.StatusCode.UNKNOWN
    info = error_info(error) if hasattr(error, "trailing_metadata") else None
    reason = info.reason if info is not None and info.reason else code.name
    details = error.details() if hasattr(error, "details") else str(error)
    metadata = {**(dict(info.metadata) if info is not None else {}), "service": service}
    return _ERROR_BY_CODE.get(code, errors.DomainError)(reason, details or code.name, **metadata)


def invoke(method: Callable[..., Any], request: Any, service: str, *, timeout: float | None = None,
           token: str | None = None, caller: str = "", metadata: tuple[tuple[str, str], ...] = ()) -> Any:
    """`call`, with a failure raised as the DomainError of `domain_error`."""
    try:
        return call(method, request, timeout=timeout, token=token, caller=caller, metadata=metadata)
    except grpc.RpcError as err:
        raise domain_error(err, service) from None
