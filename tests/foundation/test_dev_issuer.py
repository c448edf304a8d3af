"""The local stack's token issuer (issue 17 §1): `citetrace up` creates an Ed25519 keypair under
its data directory; `citetrace token` signs with it (EdDSA); the services that do not mint get
only the public key; HS256 happens only when explicitly configured."""

from __future__ import annotations

from pathlib import Path

import jwt
import pytest
from citetrace.kit.auth import AuthSettings, TokenVerifier, mint_token
from citetrace.kit.errors import Unauthenticated
from citetrace.kit.stack import BY_NAME, SERVICES

from apps.cli.main import main
from apps.cli.stack import _service_env


@pytest.fixture(autouse=True)
def no_auth_environment(monkeypatch):
    for key in list(__import__("os").environ):
        if key.startswith("CITETRACE_AUTH_"):
            monkeypatch.delenv(key)


def test_up_environment_gives_verify_only_services_the_public_key_alone(tmp_path):
    env = _service_env(BY_NAME["generation"], tmp_path, 0)
    assert "CITETRACE_AUTH_HS256_SECRET" not in env
    assert "CITETRACE_AUTH_RS256_PRIVATE_KEY_FILE" not in env
    public = env["CITETRACE_AUTH_RS256_PUBLIC_KEY_FILE"]
    assert Path(public).read_text().startswith("-----BEGIN PUBLIC KEY-----")
    private = tmp_path / "issuer-key.pem"
    assert private.stat().st_mode & 0o777 == 0o600
    # The generation service's own settings cannot mint anything.
    services = AuthSettings(rs256_public_key_file=tmp_path / "issuer-key.pub.pem")
    with pytest.raises(Unauthenticated) as refused:
        mint_token(services, tenant_id="acme-health", subject="x", roles=["policy_admin"])
    assert refused.value.reason == "NO_SIGNING_KEY"


@pytest.mark.parametrize("info", [i for i in SERVICES], ids=lambda i: i.name)
def test_no_service_of_the_stack_gets_the_private_key(info, tmp_path):
    env = _service_env(info, tmp_path, 0)
    assert "CITETRACE_AUTH_RS256_PRIVATE_KEY_FILE" not in env and "CITETRACE_AUTH_HS256_SECRET" not in env


def test_the_issuer_is_created_once_and_reused(tmp_path):
    first = _service_env(BY_NAME["trace"], tmp_path, 0)["CITETRACE_AUTH_RS256_PUBLIC_KEY_FILE"]
    key = Path(first).read_text()
    _service_env(BY_NAME["retrieval"], tmp_path, 0)
    assert Path(first).read_text() == key


def test_citetrace_token_is_eddsa_and_verifies_with_the_public_key_only(tmp_path, capsys):
    _service_env(BY_NAME["trace"], tmp_path, 0)  # what `citetrace up` creates
    assert main(["token", "--tenant", "acme-health", "--roles", "staff", "--data-dir", str(tmp_path)]) == 0
    token = capsys.readouterr().out.strip()
    assert jwt.get_unverified_header(token)["alg"] == "EdDSA"
    principal = TokenVerifier(AuthSettings(rs256_public_key_file=tmp_path / "issuer-key.pub.pem")).verify(token)
    assert (principal.tenant_id, principal.roles) == ("acme-health", ("staff",))


def test_hs256_only_when_explicitly_set(tmp_path, monkeypatch):
    monkeypatch.setenv("CITETRACE_AUTH_HS256_SECRET", "d" * 40)
    env = _service_env(BY_NAME["generation"], tmp_path, 0)
    assert env["CITETRACE_AUTH_HS256_SECRET"] == "d" * 40
    assert "CITETRACE_AUTH_RS256_PUBLIC_KEY_FILE" not in env


def test_token_without_a_stack_names_the_fix(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["token", "--tenant", "acme-health", "--data-dir", str(tmp_path / "none")])
    assert "citetrace up" in capsys.readouterr().err
