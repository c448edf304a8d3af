"""gRPC server start-up shared by every service: interceptors (OpenTelemetry, auth, domain-error
mapping, per-RPC metrics), the standard health service (NOT_SERVING until warm), reflection,
a /metrics port, and SIGTERM drain: NOT_SERVING, finish in-flight calls, stop with grace, flush."""

from __future__ import annotations

import dataclasses
import logging
import signal
import threading
import time
from collections.abc import Callable
from concurrent import futures
from typing import Any

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from grpc_status import rpc_status
from opentelemetry.instrumentation.grpc import server_interceptor as otel_server_interceptor

from citetrace.kit.auth import (
    AUTH_PREFIX,
    AUTHORIZATION,
    ROLE_SERVICE,
    SERVICE_SUBJECT_PREFIX,
    AuthSettings,
    Principal,
    TokenVerifier,
    bearer_token,
)
from citetrace.kit.balancing import GrpcSettings, grpc_settings, server_options
from citetrace.kit.callers import BACKEND_SERVICES, TENANT_METADATA, may_act_alone, may_call
from citetrace.kit.clients import set_process_identity
from citetrace.kit.clients import transport as process_transport
from citetrace.kit.context import call_context
from citetrace.kit.errors import Code, DomainError, InvalidArgument, PermissionDenied
from citetrace.kit.metrics import (
    GRPC_SERVER_DURATION,
    GRPC_SERVER_HANDLED,
    init_service_metrics,
    scope_violation_blocked,
    serve_metrics,
)
from citetrace.kit.settings import ServerSettings, load_settings
from citetrace.kit.telemetry import TraceContextFilter, flush_telemetry, setup_tracing
from citetrace.kit.tls import (
    TransportSettings,
    peer_identity,
    server_credentials,
    warn_if_plaintext,
)
from citetrace.kit.validation import validate_request

log = logging.getLogger("citetrace.server")

_UNAUTHENTICATED_PREFIXES = ("/grpc.health.v1.Health/", "/grpc.reflection.")


@dataclasses.dataclass
class ServiceSpec:
    """What a service contributes to the kit: built by the service's bootstrap.py."""

    name: str  # short name, e.g. "retrieval"; the ErrorInfo domain is "<name>.citetrace"
    full_name: str  # e.g. "citetrace.retrieval.v1.RetrievalService"
    servicer: Any
    register: Callable[[Any, grpc.Server], None]  # the generated add_XServicer_to_server
    # Largest request message accepted (gRPC's default is 4 MiB; retrieval takes whole files).
    max_receive_message_bytes: int = 4 * 1024 * 1024
    # The assembled service's lifecycle: heavy set-up before SERVING, release after the drain. When
    # not given, a servicer's own warm_up()/close() are used (services that predate bootstrap.py).
    warm_up: Callable[[], None] | None = None
    close: Callable[[], None] | None = None
    # Called for an authenticated request the kit refuses before the servicer runs (undecodable, or
    # breaking a field rule), in the caller's context: (method short name, the decoded request or
    # None, the error). The orchestrator records a refused Ask here; a DomainError it raises
    # replaces the refusal (UNAVAILABLE when the refusal could not be recorded).
    refused: Callable[[str, Any, DomainError], None] | None = None
    # Called once when the server starts with a function the service calls whenever a dependency it
    # cannot answer without comes or goes (True: can serve). After warm-up the runner's health
    # status follows it (retrieval: NOT_SERVING while the search cluster is red or unreachable).
    serving_reporter: Callable[[Callable[[bool], None]], None] | None = None

    def __post_init__(self) -> None:
        if self.warm_up is None:
            self.warm_up = getattr(self.servicer, "warm_up", None) or _nothing
        if self.close is None:
            self.close = getattr(self.servicer, "close", None) or _nothing


def _nothing() -> None:
    return None


# Bounds of what an error carries back (status message and ErrorInfo metadata travel in trailing
# metadata; a client's default limit is 16 KiB): no offending value is echoed beyond a prefix.
MAX_ERROR_MESSAGE_CHARS = 1024
MAX_ERROR_METADATA_ENTRIES = 16
MAX_ERROR_METADATA_CHARS = 256


def _bounded(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 20] + f"... ({len(text)} chars)"


def error_status(domain: str, code: Code, reason: str, message: str, metadata: dict[str, str]) -> grpc.Status:
    metadata = {_bounded(k, 64): _bounded(v, MAX_ERROR_METADATA_CHARS)
                for k, v in list(metadata.items())[:MAX_ERROR_METADATA_ENTRIES]}
    message = _bounded(message, MAX_ERROR_MESSAGE_CHARS)
    info = error_details_pb2.ErrorInfo(reason=_bounded(reason, 64), domain=domain, metadata=metadata)
    detail = any_pb2.Any()
    detail.Pack(info)
    status = status_pb2.Status(code=getattr(code_pb2, code.value), message=message, details=[detail])
    return rpc_status.to_status(status)


class KitInterceptor(grpc.ServerInterceptor):
    """Authenticates, maps domain errors to google.rpc.Status with ErrorInfo, records metrics."""

    def __init__(self, service: str, verifier: TokenVerifier,
                 refused: Callable[[str, Any, DomainError], None] | None = None,
                 transport: TransportSettings | None = None) -> None:
        self._service = service
        self._transport = transport if transport is not None else TransportSettings(mode="plaintext")
        self._refused = refused
        self._domain = f"{service}.citetrace"
        self._verifier = verifier

    def _authenticate(self, method: str, metadata, peer: str) -> tuple[Principal, str | None]:
        """The principal of a call: the user of its bearer token (acting through `peer` when that is
        a backend service), or, with no token, the calling service itself for the tenant it names,
        where kit.callers lets it act alone. PERMISSION_DENIED for a caller the RPC does not allow."""
        if not may_call(method, peer):
            raise PermissionDenied("CALLER_NOT_ALLOWED",
                                   f"{method.rsplit('/', 1)[-1]} may not be called by {peer or 'an unidentified caller'}",
                                   caller=peer)
        if any(name == AUTHORIZATION for name, _ in metadata) or not may_act_alone(method, peer):
            token = bearer_token(metadata)
            principal = self._verifier.verify_user(token)
            if peer in BACKEND_SERVICES:
                principal = dataclasses.replace(principal, actor=f"{SERVICE_SUBJECT_PREFIX}{peer}")
            return principal, token
        tenant = _metadata_value(metadata, TENANT_METADATA)
        if not tenant:
            raise InvalidArgument("TENANT_MISSING", f"a service call names its tenant in {TENANT_METADATA} metadata")
        return Principal(tenant, f"{SERVICE_SUBJECT_PREFIX}{peer}", (ROLE_SERVICE,)), None

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or handler.unary_unary is None or method.startswith(_UNAUTHENTICATED_PREFIXES):
            return handler
        behavior = handler.unary_unary
        short_method = method.rsplit("/", 1)[-1]
        deserialize = handler.request_deserializer

        def wrapped(raw: bytes, context: grpc.ServicerContext):
            started = time.perf_counter()
            failure: grpc.Status | None = None
            code_name = "OK"
            try:
                metadata = context.invocation_metadata()
                peer = peer_identity(context.auth_context(), metadata, self._transport)
                principal, token = self._authenticate(method, metadata, peer)
                request = None
                try:
                    request = _decode(deserialize, raw)
                    validate_request(request)
                except DomainError as refusal:
                    if self._refused is not None:
                        with call_context(principal, token, context.time_remaining(), peer):
                            self._refused(short_method, request, refusal)
                    raise
                with call_context(principal, token, context.time_remaining(), peer):
                    return behavior(request, context)
            except DomainError as err:
                code_name = err.code.value
                if err.reason.endswith("SCOPE_VIOLATION"):
                    scope_violation_blocked(self._service)
                failure = error_status(self._domain, err.code, err.reason, err.message, err.metadata)
            except Exception:  # a bug: report INTERNAL without leaking internals
                log.exception("unhandled error in %s", method)
                code_name = "INTERNAL"
                failure = error_status(self._domain, Code.INTERNAL, "INTERNAL", "internal error", {})
            finally:
                if failure is None:
                    code = context.code() if hasattr(context, "code") else None
                    code_name = code.name if isinstance(code, grpc.StatusCode) else code_name
                GRPC_SERVER_HANDLED.labels(self._service, short_method, code_name).inc()
                GRPC_SERVER_DURATION.labels(self._service, short_method).observe(time.perf_counter() - started)
            context.abort_with_status(failure)

        # The request is decoded here rather than by gRPC, so that undecodable bytes (invalid UTF-8
        # in a string, nesting past the parser's limit, a truncated message) are INVALID_ARGUMENT
        # with a reason instead of gRPC's INTERNAL "Exception deserializing request!".
        return grpc.unary_unary_rpc_method_handler(
            wrapped,
            request_deserializer=None,
            response_serializer=handler.response_serializer,
        )


def _metadata_value(metadata, key: str) -> str:
    for name, value in metadata:
        if name == key:
            return value.decode() if isinstance(value, bytes) else value
    return ""


def _decode(deserialize, raw):
    if deserialize is None:
        return raw
    try:
        return deserialize(raw)
    except Exception as exc:  # DecodeError, RecursionError, UnicodeDecodeError: all the caller's bytes
        raise InvalidArgument("UNDECODABLE_REQUEST",
                              "the request is not a valid message of this RPC (invalid UTF-8 in a string "
                              "field, nesting too deep, or malformed bytes)") from exc


class ServiceRunner:
    """Start, warm up, serve, drain. Usable in-process (tests: port 0) and from a service main."""

    def __init__(self, spec: ServiceSpec, server_settings: ServerSettings, auth_settings: AuthSettings,
                 balancing: GrpcSettings | None = None, transport: TransportSettings | None = None) -> None:
        self.spec = spec
        self.settings = server_settings
        # Mutual TLS (CITETRACE_TLS_*; kit.tls): callers present a certificate of our CA.
        # By default the process's own (kit.clients.transport: the environment's, unless configured).
        self.transport = transport if transport is not None else process_transport()
        # Connection age and keepalive (CITETRACE_GRPC_*): new pods receive traffic.
        self.balancing = balancing if balancing is not None else grpc_settings()
        self._verifier = TokenVerifier(auth_settings)
        self._health = health.HealthServicer(experimental_non_blocking=True)
        self._server: grpc.Server | None = None
        self._stopped = threading.Event()
        self._done = threading.Event()
        self._warm = False
        self._dependencies_ok = True
        self._health_lock = threading.Lock()
        self.port = 0
        self.metrics_port = -1

    @property
    def address(self) -> str:
        return f"{self.settings.host}:{self.port}"

    def start(self) -> int:
        setup_tracing(f"citetrace-{self.spec.name}")
        server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=self.settings.max_workers, thread_name_prefix=self.spec.name),
            interceptors=[otel_server_interceptor(),
                          KitInterceptor(self.spec.name, self._verifier, self.spec.refused, self.transport)],
            options=[("grpc.so_reuseport", 0),
                     ("grpc.max_receive_message_length", self.spec.max_receive_message_bytes),
                     *server_options(self.balancing)],
        )
        self.spec.register(self.spec.servicer, server)
        health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
        self._set_health(health_pb2.HealthCheckResponse.NOT_SERVING)
        if self.spec.serving_reporter is not None:
            self.spec.serving_reporter(self._dependencies_changed)
        reflection.enable_server_reflection(
            (self.spec.full_name, health.SERVICE_NAME, reflection.SERVICE_NAME), server
        )
        address = f"{self.settings.host}:{self.settings.port}"
        warn_if_plaintext(self.transport, self.spec.name)
        self.port = (server.add_insecure_port(address) if self.transport.plaintext
                     else server.add_secure_port(address, server_credentials(self.transport)))
        if self.port == 0:
            raise RuntimeError(f"{self.spec.name}: could not bind {self.settings.host}:{self.settings.port}")
        server.start()
        self._server = server
        init_service_metrics(self.spec.name)
        self.metrics_port = serve_metrics(self.settings.metrics_port, self.settings.host)
        return self.port

    def warm_up(self) -> None:
        self.spec.warm_up()
        with self._health_lock:
            self._warm = True
            self._publish_health()

    def _dependencies_changed(self, ok: bool) -> None:
        with self._health_lock:
            changed, self._dependencies_ok = ok != self._dependencies_ok, ok
            if changed and self._warm:
                log.warning("%s: %s", self.spec.name, "SERVING again: its dependencies answer" if ok
                            else "NOT_SERVING: a dependency it cannot answer without is down")
                self._publish_health()

    def _publish_health(self) -> None:
        if self._stopped.is_set():  # draining: stays NOT_SERVING
            return
        self._set_health(health_pb2.HealthCheckResponse.SERVING if self._dependencies_ok
                         else health_pb2.HealthCheckResponse.NOT_SERVING)

    def stop(self, grace: float | None = None) -> None:
        if self._server is None or self._stopped.is_set():
            return
        with self._health_lock:
            self._stopped.set()
        self._health.enter_graceful_shutdown()  # every service NOT_SERVING, new checks see it
        self._server.stop(self.settings.grace_seconds if grace is None else grace).wait()
        self.spec.close()
        flush_telemetry()
        self._done.set()

    def serve_forever(self) -> None:
        """Installs SIGTERM/SIGINT handlers and blocks until stopped."""
        def on_signal(signum, _frame):
            log.info("%s: signal %s, draining", self.spec.name, signum)
            threading.Thread(target=self.stop, daemon=True).start()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        self._done.wait()

    def _set_health(self, status: int) -> None:
        for name in ("", self.spec.full_name):
            self._health.set(name, status)


def run_service(
    spec_factory: Callable[[Any], ServiceSpec],
    settings_cls: type,
    prefix: str,
) -> None:
    """A service's main: settings -> telemetry -> serve (NOT_SERVING) -> warm up -> SERVING -> wait."""
    settings = load_settings(settings_cls, prefix)
    auth = load_settings(AuthSettings, AUTH_PREFIX)
    logging.basicConfig(
        level=getattr(settings, "log_level", "INFO"),
        format="%(asctime)s %(levelname)s %(name)s trace=%(trace_id)s: %(message)s",
    )
    for handler in logging.getLogger().handlers:
        handler.addFilter(TraceContextFilter())
    spec = spec_factory(settings)
    set_process_identity(spec.name)
    runner = ServiceRunner(spec, settings, auth)
    runner.start()
    log.info("%s listening on %s (metrics port %s); warming up", spec.name, runner.address, runner.metrics_port)
    runner.warm_up()
    log.info("%s SERVING on %s", spec.name, runner.address)
    runner.serve_forever()
    log.info("%s stopped", spec.name)
