"""Bearer-token authentication: the principal (tenant, roles, locations, pseudonymous subject)
comes from a signed JWT in call metadata, never from a request body.

Every service verifies the token itself with the issuer's public key (RS256 or EdDSA, the
algorithm fixed by the key, not the token) or, as a development setting that logs a warning, an HS256
shared secret, and the orchestrator forwards the caller's token downstream, so each service enforces
its own scope. No service mints tokens: a service is identified by its mTLS certificate (kit.tls),
never by a token, and a token claiming role `service` is refused.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import logging
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import jwt

from citetrace import vocab
from citetrace.kit.errors import Unauthenticated
from citetrace.kit.settings import require

AUTHORIZATION = "authorization"
ROLE_SERVICE = vocab.SERVICE
ROLE_PATIENT = vocab.PATIENT
SERVICE_SUBJECT_PREFIX = "service:"

log = logging.getLogger("citetrace.auth")


@dataclasses.dataclass(frozen=True)
class Principal:
    tenant_id: str
    subject: str
    roles: tuple[str, ...] = ()
    location_ids: tuple[str, ...] = ()
    # The patient this caller is (claim `patient_ref`; a patient token without it is the patient
    # its subject names). Services take a patient's identity from here, never from a request body.
    patient_ref: str = ""
    # The backend service acting for this user, e.g. "service:orchestrator" when the assistant
    # calls on the user's behalf: the identity in the caller's mTLS certificate (kit.server), never
    # a claim of the token; empty for a direct call (the CLI, the console).
    actor: str = ""

    def has_any_role(self, roles: Iterable[str]) -> bool:
        return bool(set(roles) & set(self.roles))

    @property
    def acting_service(self) -> str:
        """The name of the service acting for the user ('' for a direct call)."""
        return self.actor.removeprefix(SERVICE_SUBJECT_PREFIX) if self.actor.startswith(SERVICE_SUBJECT_PREFIX) else ""


@dataclasses.dataclass(frozen=True)
class AuthSettings:
    """Read with prefix CITETRACE_AUTH_."""

    hs256_secret: str | None = None
    rs256_public_key_file: Path | None = None
    rs256_private_key_file: Path | None = None
    issuer: str = "citetrace"
    audience: str = "citetrace"
    leeway_seconds: int = 30

    def __post_init__(self) -> None:
        require(
            bool(self.hs256_secret) or self.rs256_public_key_file is not None,
            "no token key configured: set CITETRACE_AUTH_HS256_SECRET or CITETRACE_AUTH_RS256_PUBLIC_KEY_FILE",
        )
        if self.hs256_secret:
            require(len(self.hs256_secret) >= 32, "CITETRACE_AUTH_HS256_SECRET must be at least 32 characters")


AUTH_PREFIX = "CITETRACE_AUTH_"


def auth_from_environment() -> AuthSettings | None:
    """The CITETRACE_AUTH_* key material, or None when none is configured (an in-process service in a
    test; what needs a key then says so: e.g. outgoing events stay queued)."""
    from citetrace.kit.settings import SettingsError, load_settings

    try:
        return load_settings(AuthSettings, AUTH_PREFIX)
    except SettingsError:
        return None


#: Tokens remembered as verified (per verifier, LRU). The same bearer token arrives on every RPC of
#: an Ask in every service it reaches, and on every Ask of a session (issue 21 point 5).
VERIFIED_TOKENS = 4096


class TokenVerifier:
    """Verifies bearer tokens: signature (the algorithm the key fixes), audience, issuer, expiry.

    A token that passed is remembered by its exact string with the principal its claims gave and
    its validity window (nbf/iat .. exp). A later call with the same string inside that window
    (with the same leeway) gets the same principal without the signature check: the string is
    what was verified, so nothing another string says is trusted, and outside the window the full
    verification runs again and refuses it as before (TOKEN_EXPIRED). A new key means a new
    verifier, so nothing verified under an old key is remembered."""

    def __init__(self, settings: AuthSettings) -> None:
        self._settings = settings
        self._verified: collections.OrderedDict[str, tuple[Principal, float, float]] = collections.OrderedDict()
        self._verified_lock = threading.Lock()
        if settings.rs256_public_key_file is not None:
            # The algorithm follows the key, never the token's header: a token whose header says HS256
            # (signed with this public key as its "secret") or "none" is refused (alg confusion).
            self._key, self._algorithm = public_key_and_algorithm(settings.rs256_public_key_file.read_bytes())
        else:
            log.warning("user tokens are verified with the HS256 shared secret: a development setting; "
                        "whoever holds the secret can mint any token (set CITETRACE_AUTH_RS256_PUBLIC_KEY_FILE)")
            self._key = settings.hs256_secret
            self._algorithm = "HS256"

    def verify(self, token: str) -> Principal:
        now, leeway = time.time(), self._settings.leeway_seconds
        with self._verified_lock:
            remembered = self._verified.get(token)
            if remembered is not None:
                self._verified.move_to_end(token)
        if remembered is not None:
            principal, not_before, expires = remembered
            if not_before - leeway <= now <= expires + leeway:
                return principal
        principal, not_before, expires = self._verify(token)
        with self._verified_lock:
            self._verified[token] = (principal, not_before, expires)
            self._verified.move_to_end(token)
            while len(self._verified) > VERIFIED_TOKENS:
                self._verified.popitem(last=False)
        return principal

    def _verify(self, token: str) -> tuple[Principal, float, float]:
        """The full check; the principal and the window (nbf or iat .. exp) it holds for."""
        try:
            claims = jwt.decode(
                token,
                self._key,
                algorithms=[self._algorithm],
                audience=self._settings.audience,
                issuer=self._settings.issuer,
                leeway=self._settings.leeway_seconds,
                options={"require": ["exp", "sub", "tenant"]},
            )
        except jwt.ExpiredSignatureError as exc:
            raise Unauthenticated("TOKEN_EXPIRED", "the bearer token has expired") from exc
        except jwt.InvalidTokenError as exc:
            raise Unauthenticated("TOKEN_INVALID", f"the bearer token is invalid: {exc}") from exc
        tenant = claims.get("tenant")
        if not isinstance(tenant, str) or not tenant:
            raise Unauthenticated("TOKEN_INVALID", "the bearer token names no tenant")
        roles = tuple(sorted(str(r) for r in claims.get("roles", [])))
        patient_ref = claims.get("patient_ref") or (str(claims["sub"]) if ROLE_PATIENT in roles else "")
        principal = Principal(
            tenant_id=tenant,
            subject=str(claims["sub"]),
            roles=roles,
            location_ids=tuple(sorted(str(loc) for loc in claims.get("locations", []))),
            patient_ref=str(patient_ref),
        )
        # jwt.decode checked that these are numbers; a token without nbf/iat is valid from the start.
        not_before = max(float(claims.get("nbf", float("-inf"))), float(claims.get("iat", float("-inf"))))
        return principal, not_before, float(claims["exp"])

    def verify_user(self, token: str) -> Principal:
        """`verify`, refusing role `service`: services are identified by their certificates, so a
        token naming that role (whoever minted it) grants nothing."""
        principal = self.verify(token)
        if ROLE_SERVICE in principal.roles:
            raise Unauthenticated("SERVICE_ROLE_IN_TOKEN",
                                  "a bearer token cannot carry role service: services authenticate with their mTLS certificate")
        return principal

    def verify_metadata(self, metadata: Iterable[tuple[str, str | bytes]]) -> tuple[Principal, str]:
        """Returns the principal and the raw token (to forward downstream)."""
        token = bearer_token(metadata)
        return self.verify(token), token


def public_key_and_algorithm(pem: bytes) -> tuple[object, str]:
    """The verification key in a PEM file and the one algorithm it verifies: RS256 for an RSA key,
    EdDSA for an Ed25519 key. A private key or any other key type is refused (a service holds the
    issuer's public key only)."""
    from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    try:
        key = load_pem_public_key(pem)
    except ValueError as exc:
        raise ValueError("CITETRACE_AUTH_RS256_PUBLIC_KEY_FILE must hold a PEM public key (RSA or Ed25519)") from exc
    if isinstance(key, rsa.RSAPublicKey):
        return key, "RS256"
    if isinstance(key, ed25519.Ed25519PublicKey):
        return key, "EdDSA"
    raise ValueError(f"unsupported token verification key type {type(key).__name__}: use RSA or Ed25519")


@functools.lru_cache(maxsize=8)
def _signing_algorithm(private_pem: bytes) -> str:
    # Cached by the key's bytes: delegated tokens are minted per call, and parsing the PEM each time is waste.
    from cryptography.hazmat.primitives.asymmetric import ed25519
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    return "EdDSA" if isinstance(load_pem_private_key(private_pem, password=None), ed25519.Ed25519PrivateKey) else "RS256"


def bearer_token(metadata: Iterable[tuple[str, str | bytes]]) -> str:
    for key, value in metadata:
        if key.lower() == AUTHORIZATION:
            text = value.decode() if isinstance(value, bytes) else value
            scheme, _, token = text.partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise Unauthenticated("TOKEN_MALFORMED", "authorization metadata must be 'Bearer <token>'")
            return token.strip()
    raise Unauthenticated("TOKEN_MISSING", "no bearer token in call metadata")


def mint_token(
    settings: AuthSettings,
    *,
    tenant_id: str,
    subject: str,
    roles: Iterable[str] = (),
    location_ids: Iterable[str] = (),
    ttl_seconds: int = 3600,
    now: float | None = None,
    patient_ref: str = "",
) -> str:
    """Mints a token (the issuer: the CLI's development tokens, the console's development sign-in,
    tests). Needs the signing key, which no service holds."""
    issued = int(time.time() if now is None else now)
    claims = {
        "iss": settings.issuer,
        "aud": settings.audience,
        "sub": subject,
        "tenant": tenant_id,
        "roles": sorted(set(roles)),
        "locations": sorted(set(location_ids)),
        "iat": issued,
        "exp": issued + ttl_seconds,
    }
    if patient_ref:
        claims["patient_ref"] = patient_ref
    if settings.rs256_private_key_file is not None:
        private_pem = settings.rs256_private_key_file.read_bytes()
        return jwt.encode(claims, private_pem, algorithm=_signing_algorithm(private_pem))
    if not settings.hs256_secret:
        raise Unauthenticated("NO_SIGNING_KEY", "minting needs CITETRACE_AUTH_HS256_SECRET or an RS256 private key")
    return jwt.encode(claims, settings.hs256_secret, algorithm="HS256")


def bearer_metadata(token: str) -> tuple[tuple[str, str], ...]:
    return ((AUTHORIZATION, f"Bearer {token}"),)
