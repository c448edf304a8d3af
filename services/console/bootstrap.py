"""The one assembly point of the console: settings in, the app out (the entry point, the tests and
the benchmarks build it the same way). Dependencies are built here and handed in."""

from __future__ import annotations

from citetrace.kit.auth import AuthSettings
from starlette.applications import Starlette
from starlette.templating import Jinja2Templates

from services.console.app import HERE, Console, build_app
from services.console.backends import Backends, GrpcBackends
from services.console.http import Readiness
from services.console.session import Authenticator
from services.console.settings import Settings
from services.console.templating import configure


def grpc_backends(settings: Settings) -> GrpcBackends:
    return GrpcBackends(orchestrator=settings.orchestrator_target, retrieval=settings.retrieval_target,
                        scheduler_gateway=settings.scheduler_gateway_target, trace=settings.trace_target,
                        ask_timeout=settings.ask_timeout_seconds, call_timeout=settings.call_timeout_seconds)


def build(settings: Settings, auth: AuthSettings, backends: Backends | None = None) -> tuple[Console, Starlette]:
    if settings.auth_mode == "development" and not (auth.hs256_secret or auth.rs256_private_key_file):
        raise ValueError("CITETRACE_CONSOLE_AUTH_MODE=development mints tokens: it needs CITETRACE_AUTH_HS256_SECRET "
                         "or CITETRACE_AUTH_RS256_PRIVATE_KEY_FILE")
    templates = configure(Jinja2Templates(directory=HERE / "templates"))
    console = Console(
        settings=settings,
        backends=backends or grpc_backends(settings),
        auth=Authenticator(auth, mode=settings.auth_mode, token_header=settings.token_header,
                           dev_token_ttl=settings.dev_token_ttl_seconds),
        readiness=Readiness(),
        templates=templates,
    )
    return console, build_app(console)
