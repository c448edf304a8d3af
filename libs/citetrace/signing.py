"""Ed25519 signatures with keys that live outside the databases (issue 16).

Retrieval signs each version's identity and lifecycle state, trace signs each chain link and each
chain-head checkpoint. A database writer can recompute every sha256, but cannot make a signature
without the private key, which is a file (or a KMS key) the database never sees.

* `Signer` is the KMS-style provider interface: a key ID and `sign(message) -> signature`. The
  default provider is `KeyFileSigner` (a PKCS#8 PEM file, mode 0600); a KMS or HSM provider
  implements the same two members and is registered in `SIGNER_PROVIDERS`.
* `Keyring` holds the public keys that may verify (rotation: several public keys verify, one
  private key signs). Verification results are memoised per (key ID, message, signature) in
  process memory, which a database writer cannot reach: an unchanged statement costs a sha256 and
  a dictionary lookup, a changed one a real verification (and fails).
* Key IDs are `ed25519:` + the first 16 hex digits of sha256(raw public key): stable, derived
  from the key, never configured by hand.

Rotation: generate a new key (`citetrace keys generate`), add the OLD public key to the verify
keys, point the signing key setting at the new file and restart. Old signatures keep verifying with
the old public key; new ones are made with the new key. Re-sign (`citetrace index resign`) before
removing an old public key from the verify keys.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Protocol, runtime_checkable

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

KEY_ID_PREFIX = "ed25519:"
_log = logging.getLogger("citetrace.signing")


class SignatureError(Exception):
    """A signature that is missing, made by a key no verify key knows, or wrong."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason  # MISSING | UNKNOWN_KEY | INVALID
        self.message = message


class KeyFileError(Exception):
    """A key file that is missing, unreadable or not an Ed25519 key."""


@runtime_checkable
class Signer(Protocol):
    """What signs: a file key here, a KMS/HSM key in production (same two members)."""

    key_id: str

    def sign(self, message: bytes) -> bytes: ...

    def public_key(self) -> Ed25519PublicKey: ...


def key_id_of(public: Ed25519PublicKey) -> str:
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return KEY_ID_PREFIX + hashlib.sha256(raw).hexdigest()[:16]


class KeyFileSigner:
    """An Ed25519 private key in a PEM (PKCS#8) file."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._key = _load_private(self.path)
        self.key_id = key_id_of(self._key.public_key())

    def sign(self, message: bytes) -> bytes:
        return self._key.sign(message)

    def public_key(self) -> Ed25519PublicKey:
        return self._key.public_key()


# Providers by name (the `*_SIGNING_PROVIDER` settings). A KMS provider takes the key reference as
# its one argument and is added here; only the key file exists in this build.
SIGNER_PROVIDERS: dict[str, Callable[[str], Signer]] = {"file": lambda ref: KeyFileSigner(Path(ref))}


def load_signer(provider: str, ref: str) -> Signer:
    if provider not in SIGNER_PROVIDERS:
        raise KeyFileError(f"unknown signing provider {provider!r}; available: {', '.join(SIGNER_PROVIDERS)}")
    return SIGNER_PROVIDERS[provider](ref)


def _load_private(path: Path) -> Ed25519PrivateKey:
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except FileNotFoundError as exc:
        raise KeyFileError(f"signing key file {path} does not exist") from exc
    except (OSError, ValueError, TypeError) as exc:
        raise KeyFileError(f"signing key file {path} is not a readable PEM private key: {exc}") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"signing key file {path} holds a {type(key).__name__}, not an Ed25519 key")
    return key


def load_public(path: Path) -> Ed25519PublicKey:
    """A verify key: a PEM public key file (or a private key file, whose public half is used)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise KeyFileError(f"verify key file {path} is not readable: {exc}") from exc
    try:
        key = serialization.load_pem_public_key(data)
    except ValueError:
        key = _load_private(Path(path)).public_key()
    if not isinstance(key, Ed25519PublicKey):
        raise KeyFileError(f"verify key file {path} holds a {type(key).__name__}, not an Ed25519 key")
    return key


def generate_key_files(private_path: Path, public_path: Path | None = None) -> str:
    """Writes a new Ed25519 key (private: mode 0600, never overwritten) and its public half
    (`<private>.pub` by default); returns the key ID."""
    private_path = Path(private_path)
    public_path = Path(public_path) if public_path else public_file_of(private_path)
    private_path.parent.mkdir(parents=True, exist_ok=True)
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(pem)
    public_path.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                          serialization.PublicFormat.SubjectPublicKeyInfo))
    return key_id_of(key.public_key())


def public_file_of(private_path: Path) -> Path:
    return Path(str(private_path) + ".pub")


class Keyring:
    """The public keys that may verify, by key ID, with a bounded memo of verified signatures."""

    def __init__(self, keys: Iterable[Ed25519PublicKey], memo_size: int = 65536) -> None:
        self._keys = {key_id_of(k): k for k in keys}
        self._memo: OrderedDict[bytes, None] = OrderedDict()
        self._memo_size = memo_size
        self._lock = threading.Lock()

    @classmethod
    def from_files(cls, paths: Iterable[Path], extra: Iterable[Ed25519PublicKey] = ()) -> Keyring:
        return cls([*extra, *(load_public(Path(p)) for p in paths)])

    @property
    def key_ids(self) -> tuple[str, ...]:
        return tuple(sorted(self._keys))

    def verify(self, key_id: str, message: bytes, signature: bytes) -> None:
        """Raises SignatureError(MISSING | UNKNOWN_KEY | INVALID); returns when the signature holds."""
        if not signature or not key_id:
            raise SignatureError("MISSING", "no signature is stored")
        key = self._keys.get(key_id)
        if key is None:
            raise SignatureError("UNKNOWN_KEY", f"signed by key {key_id}, which no configured verify key matches")
        memo_key = hashlib.sha256(key_id.encode() + b"\0" + signature + b"\0" + message).digest()
        with self._lock:
            if memo_key in self._memo:
                self._memo.move_to_end(memo_key)
                return
        try:
            key.verify(signature, message)
        except InvalidSignature as exc:
            raise SignatureError("INVALID", f"the signature by key {key_id} does not match the signed content") \
                from exc
        with self._lock:
            self._memo[memo_key] = None
            if len(self._memo) > self._memo_size:
                self._memo.popitem(last=False)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: str | None) -> bytes:
    if not text:
        return b""
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        return b""


def ensure_key(path: Path, *, create: bool) -> bool:
    """True when the key file exists (created now if `create`)."""
    path = Path(path)
    if path.exists():
        return True
    if not create:
        return False
    generate_key_files(path)
    return True


def open_keys(*, provider: str, key_file: Path, verify_key_files: Iterable[str], create: bool, sign: bool = True,
              signed_key_ids: Callable[[], set[str]] | None = None, label: str,
              env_prefix: str, items: str = "items") -> tuple[Signer | None, Keyring]:
    """The signing key and the keyring of verify keys of one authority (retrieval, trace), as their
    settings name them. With sign=False (verification only, e.g. on a machine holding only public
    keys) the key's `.pub` file or the verify keys suffice. A missing key file is created for
    development when `create` — but never while `signed_key_ids()` names stored signatures (a new
    key would refuse every stored item). Raises KeyFileError saying what to do."""
    key_file = Path(key_file)
    local = provider == "file"
    if not sign and local and not key_file.exists():
        public = public_file_of(key_file)
        extra = [load_public(public)] if public.exists() else []
        keyring = Keyring.from_files(verify_key_files, extra=extra)
        if not keyring.key_ids:
            raise KeyFileError(f"no verify key: neither {key_file}, {public} nor {env_prefix}VERIFY_KEY_FILES")
        return None, keyring
    if local and not key_file.exists():
        if not create:
            raise KeyFileError(f"{label} signing key {key_file} does not exist; generate one with "
                               f"`citetrace keys generate {key_file}` or set {env_prefix}SIGNING_KEY_FILE")
        signed = signed_key_ids() if signed_key_ids is not None else set()
        if signed:
            raise KeyFileError(f"{label} signing key {key_file} is missing but the store holds {items} signed by "
                               f"{', '.join(sorted(signed))}: restore that key file (creating a new key would "
                               "refuse every stored one)")
        key_id = generate_key_files(key_file)
        _log.warning("%s: created a development signing key %s (%s)", label, key_file, key_id)
    signer = load_signer(provider, str(key_file))
    return signer, Keyring.from_files(verify_key_files, extra=[signer.public_key()])
