"""ASGI middleware of the console: response headers that keep pages out of every cache and lock the
page down (CSP without inline script), per-route request metrics and spans, and readiness."""

from __future__ import annotations

import threading
import time

from citetrace.kit.metrics import LATENCY_BUCKETS
from citetrace.kit.telemetry import tracer
from prometheus_client import Counter, Histogram
from starlette.datastructures import MutableHeaders

REQUESTS = Counter("citetrace_console_requests_total", "Console HTTP requests completed, by route and status.",
                   ["route", "status"])
REQUEST_SECONDS = Histogram("citetrace_console_request_seconds", "Console HTTP request time, by route.", ["route"],
                            buckets=LATENCY_BUCKETS)

CONTENT_SECURITY_POLICY = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                           "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; "
                           "object-src 'none'")


class Readiness:
    """SERVING once built and warmed, NOT_SERVING again while draining (SIGTERM)."""

    def __init__(self) -> None:
        self._ready = threading.Event()

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def serving(self) -> None:
        self._ready.set()

    def draining(self) -> None:
        self._ready.clear()


class ConsoleHeaders:
    """Dynamic pages: `no-store` (never written to any cache: a page one reader saw is never served
    to another, nor shown again from the history cache after signing out), varying on the cookie and
    the token header. Static files may be cached. Every response gets the security headers."""

    def __init__(self, app, vary_header: str = "") -> None:
        self.app = app
        self.vary = "Cookie" + (f", {vary_header}" if vary_header else "")

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        static = scope["path"].startswith("/static/")

        async def with_headers(message):
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                if static:
                    headers["Cache-Control"] = "public, max-age=300"
                else:
                    headers["Cache-Control"] = "no-store, private"
                    headers["Pragma"] = "no-cache"
                    headers["Vary"] = self.vary
                headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
                headers["X-Content-Type-Options"] = "nosniff"
                headers["X-Frame-Options"] = "DENY"
                headers["Referrer-Policy"] = "no-referrer"
                headers["Cross-Origin-Opener-Policy"] = "same-origin"
                headers["Permissions-Policy"] = "camera=(), microphone=(), geolocation=()"
            await send(message)

        await self.app(scope, receive, with_headers)


class RequestMetrics:
    """One span and one metric sample per request, labelled by the route template (never the
    path: paths carry document, version and trace IDs)."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = {"code": 500}

        async def record(message):
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        with tracer("citetrace.console").start_as_current_span("console.request") as span:
            try:
                await self.app(scope, receive, record)
            finally:
                route = _route_name(scope)
                span.update_name(f"console {scope['method']} {route}")
                span.set_attribute("http.route", route)
                span.set_attribute("http.status_code", status["code"])
                REQUESTS.labels(route, str(status["code"])).inc()
                REQUEST_SECONDS.labels(route).observe(time.perf_counter() - started)


def _route_name(scope) -> str:
    route = scope.get("route")
    path = getattr(route, "path", None)
    if path:
        return path
    return "static" if scope["path"].startswith("/static/") else "unmatched"
