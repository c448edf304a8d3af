"""Who is reading: the signed-in user's principal and bearer token, and the CSRF token of the session.

* development mode: the sign-in form mints a development token (tenant, roles, locations, a
  pseudonymous user name) with the signing key, as `citetrace token` does; the token lives in the
  session cookie (signed by Starlette's SessionMiddleware, HttpOnly, SameSite).
* proxy mode: the fronting proxy sends "Bearer <token>" in a configurable header on every request;
  the console stores no token and never mints one.
Either way the tenant comes only from the verified token, never from the URL or a form field of a
page, and the token is verified here too (so a forged one is refused before any call is made)."""

from __future__ import annotations

import dataclasses
import hmac
import re
import secrets

from citetrace import vocab as R
from citetrace.kit.auth import AuthSettings, Principal, TokenVerifier, mint_token
from citetrace.kit.errors import Unauthenticated
from starlette.requests import Request

CSRF_KEY = "csrf"
TOKEN_KEY = "token"
CSRF_FIELD = "csrf_token"

# Roles a person may pick in development; `service` is never given to a user.
SIGN_IN_ROLES = (R.PATIENT, R.STAFF, R.REVIEWER, R.AUDITOR, R.POLICY_ADMIN)
TRACE_READER_ROLES = frozenset({R.STAFF, R.REVIEWER, R.AUDITOR, R.POLICY_ADMIN})
REVIEWER_ROLES = frozenset({R.REVIEWER})
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")


class SignInRequired(Exception):
    """No valid token: sign in (development) or come through the proxy (production)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class CsrfRejected(Exception):
    pass


class SignInInvalid(ValueError):
    """The sign-in form names what was wrong."""


@dataclasses.dataclass(frozen=True)
class Viewer:
    principal: Principal
    token: str

    @property
    def reads_traces(self) -> bool:
        return self.principal.has_any_role(TRACE_READER_ROLES)

    @property
    def reviews(self) -> bool:
        return self.principal.has_any_role(REVIEWER_ROLES)


@dataclasses.dataclass(frozen=True)
class SignIn:
    tenant: str
    roles: tuple[str, ...]
    locations: tuple[str, ...]
    user: str


def parse_sign_in(tenant: str, roles: list[str], locations: str, user: str) -> SignIn:
    tenant, user = tenant.strip(), (user.strip() or "console-user")
    if not _NAME.match(tenant):
        raise SignInInvalid("Tenant: give a tenant ID (letters, digits, '.', '_', ':', '-'; up to 64).")
    unknown = sorted(set(roles) - set(SIGN_IN_ROLES))
    if unknown:
        raise SignInInvalid(f"Roles: unknown role(s) {', '.join(unknown)}.")
    if not roles:
        raise SignInInvalid("Roles: choose at least one role.")
    places = tuple(sorted({p.strip() for p in locations.split(",") if p.strip()}))
    bad = [p for p in places if not _NAME.match(p)]
    if bad:
        raise SignInInvalid(f"Locations: {', '.join(bad)} is not a location ID.")
    if not _NAME.match(user):
        raise SignInInvalid("User name: letters, digits, '.', '_', ':', '-' (up to 64).")
    return SignIn(tenant, tuple(sorted(set(roles))), places, user)


class Authenticator:
    def __init__(self, auth: AuthSettings, *, mode: str, token_header: str, dev_token_ttl: int) -> None:
        self._auth = auth
        self._verifier = TokenVerifier(auth)
        self.mode = mode
        self._header = token_header.lower()
        self._ttl = dev_token_ttl

    @property
    def development(self) -> bool:
        return self.mode == "development"

    def viewer(self, request: Request) -> Viewer:
        token = self._token(request)
        try:
            return Viewer(self._verifier.verify(token), token)
        except Unauthenticated as exc:
            if self.development:
                request.session.pop(TOKEN_KEY, None)
            raise SignInRequired(exc.message) from exc

    def optional_viewer(self, request: Request) -> Viewer | None:
        try:
            return self.viewer(request)
        except SignInRequired:
            return None

    def _token(self, request: Request) -> str:
        if self.development:
            token = request.session.get(TOKEN_KEY)
            if not token:
                raise SignInRequired("Sign in to continue.")
            return token
        value = request.headers.get(self._header, "")
        scheme, _, token = value.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise SignInRequired(f"No bearer token in the {self._header!r} header: open the console through "
                                 "your organisation's sign-in gateway.")
        return token.strip()

    def sign_in(self, request: Request, form: SignIn) -> Viewer:
        """Development only: mints the token and starts a fresh session (new CSRF token too)."""
        if not self.development:
            raise SignInRequired("Sign-in is done by the fronting proxy in this deployment.")
        token = mint_token(self._auth, tenant_id=form.tenant, subject=form.user, roles=form.roles,
                           location_ids=form.locations, ttl_seconds=self._ttl)
        request.session.clear()
        request.session[TOKEN_KEY] = token
        rotate_csrf(request)
        return Viewer(self._verifier.verify(token), token)

    @staticmethod
    def sign_out(request: Request) -> None:
        request.session.clear()


def csrf_token(request: Request) -> str:
    token = request.session.get(CSRF_KEY)
    if not token:
        token = rotate_csrf(request)
    return token


def rotate_csrf(request: Request) -> str:
    token = secrets.token_urlsafe(32)
    request.session[CSRF_KEY] = token
    return token


def check_csrf(request: Request, submitted: str | None) -> None:
    expected = request.session.get(CSRF_KEY)
    if not expected or not submitted or not hmac.compare_digest(str(expected), str(submitted)):
        raise CsrfRejected()
