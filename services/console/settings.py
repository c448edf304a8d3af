"""Settings of the console, read from CITETRACE_CONSOLE_* variables (validated at start-up)."""

from __future__ import annotations

import dataclasses
import re

from citetrace.kit.settings import ServerSettings, require

PREFIX = "CITETRACE_CONSOLE_"

AUTH_MODES = ("proxy", "development")
SAME_SITE = ("lax", "strict")
_HEADER = re.compile(r"^[A-Za-z0-9-]{1,64}$")


@dataclasses.dataclass(frozen=True)
class Settings(ServerSettings):
    port: int = 8150
    metrics_port: int = 9157
    # "proxy": the bearer token comes from the fronting proxy on every request (TOKEN_HEADER), the
    # console never mints one. "development": a sign-in form mints a development token (tenant and
    # roles chosen by the user) with the signing key, as `citetrace token` does. Never on in production.
    auth_mode: str = "proxy"
    # The request header carrying "Bearer <token>" in proxy mode.
    token_header: str = "authorization"
    # Signs the session cookie (at least 32 characters). Required.
    session_secret: str = ""
    session_max_age_seconds: int = 8 * 3600
    # The cookie's SameSite attribute, and whether it is sent over HTTPS only (set true behind TLS).
    session_same_site: str = "lax"
    session_https_only: bool = False
    # Lifetime of a development token minted by the sign-in form.
    dev_token_ttl_seconds: int = 8 * 3600
    # Absolute base URL of the console as its readers reach it (exports carry absolute pinned
    # links); empty = the URL of each request.
    public_url: str = ""
    orchestrator_target: str = "127.0.0.1:50051"
    retrieval_target: str = "127.0.0.1:50052"
    scheduler_gateway_target: str = "127.0.0.1:50053"
    trace_target: str = "127.0.0.1:50056"
    # Deadline of one Ask (the orchestrator's own default is 15 s), and of every other call.
    ask_timeout_seconds: float = 20.0
    call_timeout_seconds: float = 5.0
    # A receipt link from a fresh answer (?fresh=1) waits this long for the record, which the
    # orchestrator's outbox delivers in the background (normally within milliseconds).
    fresh_record_patience_seconds: float = 3.0
    # The evidence panel shows the cited span inside its section, cut to this many characters
    # of context on each side when the section is longer.
    panel_context_chars: int = 600
    max_question_chars: int = 2000

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.auth_mode in AUTH_MODES, f"auth_mode must be one of {', '.join(AUTH_MODES)}")
        require(bool(_HEADER.match(self.token_header)), "token_header must be an HTTP header name")
        require(len(self.session_secret) >= 32,
                "CITETRACE_CONSOLE_SESSION_SECRET must be set to at least 32 characters (it signs the session cookie)")
        require(self.session_same_site in SAME_SITE, f"session_same_site must be one of {', '.join(SAME_SITE)}")
        require(self.session_max_age_seconds >= 60, "session_max_age_seconds must be >= 60")
        require(60 <= self.dev_token_ttl_seconds <= 7 * 86400, "dev_token_ttl_seconds must be in 60..604800")
        require(not self.public_url or self.public_url.startswith(("http://", "https://")),
                "public_url must start with http:// or https://")
        require(self.ask_timeout_seconds > 0 and self.call_timeout_seconds > 0, "timeouts must be > 0")
        require(0 <= self.fresh_record_patience_seconds <= 60, "fresh_record_patience_seconds must be in 0..60")
        require(self.panel_context_chars >= 0, "panel_context_chars must be >= 0")
        require(self.max_question_chars >= 1, "max_question_chars must be >= 1")
