"""Entry point: python -m services.console — settings -> telemetry -> app -> serve (NOT_SERVING
until warm) -> SERVING; SIGTERM: NOT_SERVING, finish in-flight requests within the grace period."""

from __future__ import annotations

import logging
import signal

import uvicorn
from citetrace.kit.auth import AUTH_PREFIX, AuthSettings
from citetrace.kit.metrics import init_service_metrics, serve_metrics
from citetrace.kit.settings import load_settings
from citetrace.kit.telemetry import TraceContextFilter, flush_telemetry, setup_tracing

from services.console.bootstrap import build
from services.console.http import Readiness
from services.console.settings import PREFIX, Settings

log = logging.getLogger("citetrace.console")


class DrainingServer(uvicorn.Server):
    """Readiness goes NOT_SERVING the moment a stop signal arrives; uvicorn then stops accepting
    and lets in-flight requests finish (timeout_graceful_shutdown)."""

    def __init__(self, config: uvicorn.Config, readiness: Readiness) -> None:
        super().__init__(config)
        self._readiness = readiness

    async def startup(self, sockets=None) -> None:
        await super().startup(sockets)
        if not self.should_exit:
            self._readiness.serving()
            log.info("console SERVING on http://%s:%s", self.config.host, self.config.port)

    def handle_exit(self, sig, frame) -> None:
        log.info("console: signal %s, draining", sig)
        self._readiness.draining()
        super().handle_exit(sig, frame)


def main() -> None:
    settings = load_settings(Settings, PREFIX)
    auth = load_settings(AuthSettings, AUTH_PREFIX)
    logging.basicConfig(level=settings.log_level,
                        format="%(asctime)s %(levelname)s %(name)s trace=%(trace_id)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(TraceContextFilter())
    setup_tracing("citetrace-console")
    console, app = build(settings, auth)
    init_service_metrics("console")
    metrics_port = serve_metrics(settings.metrics_port, settings.host)
    log.info("console (%s sign-in) starting on http://%s:%s (metrics port %s)", settings.auth_mode,
             settings.host, settings.port, metrics_port)
    config = uvicorn.Config(app, host=settings.host, port=settings.port, log_level=settings.log_level.lower(),
                            access_log=False, lifespan="off", proxy_headers=False, log_config=None,
                            timeout_graceful_shutdown=max(1, int(settings.grace_seconds)))
    # uvicorn re-raises a stop signal after its graceful shutdown; with these no-op handlers that
    # ends here (telemetry flushed, exit 0) instead of killing the process mid-way.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: None)
    DrainingServer(config, console.readiness).run()
    flush_telemetry()
    log.info("console stopped")


if __name__ == "__main__":
    main()
