"""User tokens verified with the issuer's public key (issue 17 point 1): a leaked verification key
mints nothing, and the classic algorithm-confusion forgeries are refused."""

from __future__ import annotations

import logging
import time

import jwt
import pytest
from citetrace.kit.auth import AuthSettings, TokenVerifier, mint_token
from citetrace.kit.errors import Unauthenticated
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa


def _write_pair(tmp_path, name, private_key):
    private = tmp_path / f"{name}.key.pem"
    public = tmp_path / f"{name}.pub.pem"
    private.write_bytes(private_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                  serialization.NoEncryption()))
    public.write_bytes(private_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                             serialization.PublicFormat.SubjectPublicKeyInfo))
    return private, public


@pytest.fixture(params=["rsa", "ed25519"])
def issuer(request, tmp_path):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048) if request.param == "rsa" \
        else ed25519.Ed25519PrivateKey.generate()
    private, public = _write_pair(tmp_path, "issuer", key)
    return AuthSettings(rs256_private_key_file=private, rs256_public_key_file=public), public


def _claims(**extra):
    now = int(time.time())
    return {"iss": "citetrace", "aud": "citetrace", "sub": "mallory", "tenant": "t1", "roles": ["policy_admin"],
            "iat": now, "exp": now + 600, **extra}


def test_issuer_token_verifies_with_public_key_only(issuer):
    signing, public = issuer
    token = mint_token(signing, tenant_id="t1", subject="alice", roles=["staff"])
    service_side = TokenVerifier(AuthSettings(rs256_public_key_file=public))
    principal = service_side.verify(token)
    assert (principal.tenant_id, principal.subject, principal.roles) == ("t1", "alice", ("staff",))


def test_public_key_cannot_mint(issuer):
    _, public = issuer
    with pytest.raises(Unauthenticated) as caught:
        mint_token(AuthSettings(rs256_public_key_file=public), tenant_id="t1", subject="x", roles=["policy_admin"])
    assert caught.value.reason == "NO_SIGNING_KEY"


def test_alg_confusion_hs256_with_public_key_as_secret_refused(issuer):
    _, public = issuer
    verifier = TokenVerifier(AuthSettings(rs256_public_key_file=public))
    # PyJWT itself refuses to HMAC with a PEM key, so forge the token by hand as an attacker would.
    import base64
    import hashlib
    import hmac
    import json

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = b64(json.dumps(_claims()).encode())
    signature = b64(hmac.new(public.read_bytes(), f"{header}.{body}".encode(), hashlib.sha256).digest())
    with pytest.raises(Unauthenticated) as caught:
        verifier.verify(f"{header}.{body}.{signature}")
    assert caught.value.reason == "TOKEN_INVALID"


def test_alg_none_refused(issuer):
    _, public = issuer
    verifier = TokenVerifier(AuthSettings(rs256_public_key_file=public))
    token = jwt.encode(_claims(), None, algorithm="none")
    with pytest.raises(Unauthenticated) as caught:
        verifier.verify(token)
    assert caught.value.reason == "TOKEN_INVALID"


def test_token_from_another_key_refused(issuer, tmp_path):
    _, public = issuer
    other_private, _ = _write_pair(tmp_path, "other", rsa.generate_private_key(public_exponent=65537, key_size=2048))
    forged = mint_token(AuthSettings(rs256_private_key_file=other_private, rs256_public_key_file=public),
                        tenant_id="t1", subject="mallory", roles=["policy_admin"])
    with pytest.raises(Unauthenticated) as caught:
        TokenVerifier(AuthSettings(rs256_public_key_file=public)).verify(forged)
    assert caught.value.reason == "TOKEN_INVALID"


def test_private_key_as_verification_key_refused(issuer):
    signing, _ = issuer
    with pytest.raises(ValueError, match="PEM public key"):
        TokenVerifier(AuthSettings(rs256_public_key_file=signing.rs256_private_key_file))


def test_hs256_is_a_development_setting_that_warns(caplog):
    with caplog.at_level(logging.WARNING, logger="citetrace.auth"):
        TokenVerifier(AuthSettings(hs256_secret="x" * 40))
    assert any("development setting" in record.getMessage() for record in caplog.records)
