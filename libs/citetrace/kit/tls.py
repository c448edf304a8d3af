"""Service identity on the wire (issue 17 §1): mutual TLS between the services.

Every process holds a certificate from one CA whose subject alternative name carries its identity
as a URI, `spiffe://citetrace/<service>`. Servers require a client certificate from that CA and read
the caller's identity from it (`peer_identity`); client channels present the process's own. Settings
(prefix CITETRACE_TLS_): MODE `mtls` (the default) with CA_FILE, CERT_FILE and KEY_FILE, or
`plaintext`, a development setting that logs a warning and in which a caller's identity is whatever
it claims in the `citetrace-peer` metadata (nothing authenticates it).

`LocalCA` makes the files: `citetrace up` creates a CA under its data directory and one certificate
per service (and one for the CLI); `citetrace certs` writes the same for a deployment's Secrets.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import ipaddress
import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Literal

from citetrace.kit.settings import load_settings, require

TLS_PREFIX = "CITETRACE_TLS_"
SPIFFE_PREFIX = "spiffe://citetrace/"
# What a caller claims to be in plaintext mode (development only: nothing checks it).
PEER_METADATA = "citetrace-peer"
CA_FILE, CA_KEY_FILE = "ca.pem", "ca-key.pem"

log = logging.getLogger("citetrace.tls")


@dataclasses.dataclass(frozen=True)
class TransportSettings:
    """Read with prefix CITETRACE_TLS_."""

    mode: Literal["mtls", "plaintext"] = "mtls"
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None

    def __post_init__(self) -> None:
        if self.mode == "mtls":
            require(None not in (self.ca_file, self.cert_file, self.key_file),
                    "mutual TLS needs CITETRACE_TLS_CA_FILE, CITETRACE_TLS_CERT_FILE and CITETRACE_TLS_KEY_FILE "
                    "(or CITETRACE_TLS_MODE=plaintext, a development setting)")

    @property
    def plaintext(self) -> bool:
        return self.mode == "plaintext"


PLAINTEXT = TransportSettings(mode="plaintext")


def transport_from_environment(environ: Mapping[str, str] | None = None) -> TransportSettings:
    return load_settings(TransportSettings, TLS_PREFIX, os.environ if environ is None else environ)


def warn_if_plaintext(settings: TransportSettings, who: str) -> None:
    if settings.plaintext:
        log.warning("%s: plaintext gRPC (CITETRACE_TLS_MODE=plaintext) is a development setting: traffic is "
                    "unencrypted and a caller's service identity is only claimed, never proven", who)


def server_credentials(settings: TransportSettings):
    """Server credentials that require a client certificate issued by the CA."""
    import grpc

    return grpc.ssl_server_credentials(
        [(settings.key_file.read_bytes(), settings.cert_file.read_bytes())],
        root_certificates=settings.ca_file.read_bytes(),
        require_client_auth=True,
    )


def channel_credentials(settings: TransportSettings):
    """Client credentials: this process's certificate, and the CA that server certificates must chain to."""
    import grpc

    return grpc.ssl_channel_credentials(root_certificates=settings.ca_file.read_bytes(),
                                        private_key=settings.key_file.read_bytes(),
                                        certificate_chain=settings.cert_file.read_bytes())


def open_channel(target: str, settings: TransportSettings, options: Iterable[tuple[str, object]] = ()):
    """A raw gRPC channel to `target` with these transport settings."""
    import grpc

    if settings.plaintext:
        return grpc.insecure_channel(target, options=list(options))
    return grpc.secure_channel(target, channel_credentials(settings), options=list(options))


def identity_of_certificate(pem: bytes) -> str:
    """The service name in a certificate's `spiffe://citetrace/<name>` URI SAN ('' when it has none)."""
    return _identity_of_certificate(pem)


@functools.lru_cache(maxsize=64)
def _identity_of_certificate(pem: bytes) -> str:
    from cryptography import x509

    try:
        cert = x509.load_pem_x509_certificate(pem)
        uris = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
            x509.UniformResourceIdentifier)
    except (ValueError, x509.ExtensionNotFound):
        return ""
    names = [uri.removeprefix(SPIFFE_PREFIX) for uri in uris if uri.startswith(SPIFFE_PREFIX)]
    return names[0] if len(names) == 1 else ""


def peer_identity(auth_context: Mapping[str, list[bytes]], metadata: Iterable[tuple[str, str | bytes]],
                  settings: TransportSettings) -> str:
    """The calling service's name: from its verified client certificate under mTLS (gRPC has checked
    the chain to our CA), or, in plaintext development mode, what the call's metadata claims."""
    if settings.plaintext:
        for key, value in metadata:
            if key == PEER_METADATA:
                return value.decode() if isinstance(value, bytes) else value
        return ""
    certs = auth_context.get("x509_pem_cert") or []
    return identity_of_certificate(certs[0]) if certs else ""


# --- a local certificate authority ------------------------------------------------------------------

CERT_DAYS = 365


@dataclasses.dataclass(frozen=True)
class IssuedFiles:
    cert_file: Path
    key_file: Path
    ca_file: Path

    def settings(self) -> TransportSettings:
        return TransportSettings(mode="mtls", ca_file=self.ca_file, cert_file=self.cert_file, key_file=self.key_file)

    def env(self) -> dict[str, str]:
        return {f"{TLS_PREFIX}MODE": "mtls", f"{TLS_PREFIX}CA_FILE": str(self.ca_file),
                f"{TLS_PREFIX}CERT_FILE": str(self.cert_file), f"{TLS_PREFIX}KEY_FILE": str(self.key_file)}


class LocalCA:
    """A CA in a directory (ca.pem, ca-key.pem mode 0600), created on first use, that issues one
    certificate per identity: <name>.pem and <name>-key.pem (0600), reused while they exist."""

    def __init__(self, folder: Path, *, common_name: str = "citetrace local CA") -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.ca_file = self.folder / CA_FILE
        if not self.ca_file.exists():
            self._create(common_name)

    def _create(self, common_name: str) -> None:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        now = dt.datetime.now(dt.UTC)
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=CERT_DAYS))
                .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                             content_commitment=False, key_encipherment=False,
                                             data_encipherment=False, key_agreement=False,
                                             encipher_only=False, decipher_only=False), critical=True)
                .sign(key, hashes.SHA256()))
        _write_private(self.folder / CA_KEY_FILE, key)
        self.ca_file.write_bytes(_pem(cert))

    def issue(self, identity: str, dns_names: Iterable[str] = ("localhost",),
              ip_addresses: Iterable[str] = ("127.0.0.1",)) -> IssuedFiles:
        """The certificate of `identity` (created once): SAN URI spiffe://citetrace/<identity> plus
        the DNS names and addresses servers are reached at; usable as server and client."""
        cert_file, key_file = self.folder / f"{identity}.pem", self.folder / f"{identity}-key.pem"
        if not (cert_file.exists() and key_file.exists()):
            self._issue(identity, cert_file, key_file, list(dns_names), list(ip_addresses))
        return IssuedFiles(cert_file, key_file, self.ca_file)

    def _issue(self, identity: str, cert_file: Path, key_file: Path, dns_names: list[str],
               ip_addresses: list[str]) -> None:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        ca_key = serialization.load_pem_private_key((self.folder / CA_KEY_FILE).read_bytes(), password=None)
        ca_cert = x509.load_pem_x509_certificate(self.ca_file.read_bytes())
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        names = [x509.UniformResourceIdentifier(f"{SPIFFE_PREFIX}{identity}"),
                 *(x509.DNSName(d) for d in dns_names),
                 *(x509.IPAddress(ipaddress.ip_address(a)) for a in ip_addresses)]
        cert = (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, identity)]))
                .issuer_name(ca_cert.subject).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=CERT_DAYS))
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.SubjectAlternativeName(names), critical=False)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                      ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
                .sign(ca_key, hashes.SHA256()))
        _write_private(key_file, key)
        cert_file.write_bytes(_pem(cert))


def _pem(cert) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return cert.public_bytes(serialization.Encoding.PEM)


def _write_private(path: Path, key) -> None:
    from cryptography.hazmat.primitives import serialization

    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(pem)
