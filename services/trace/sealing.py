"""The trace authority's seal on its chain (issue 16; no grpc, no database).

* Every record and chain link stores an Ed25519 signature of its hash (`ChainSealer`), made with a
  key outside the database (citetrace.signing: a key file by default, a KMS provider behind the
  same Signer interface). A database writer can recompute every sha256 but cannot sign, so a
  rewritten item is reported at its own sequence.
* The chain head is checkpointed (periodically and on demand) as a signed statement (tenant,
  sequence, head hash, time) written to a `CheckpointSink` outside the trace database: a directory
  of files by default (one file per checkpoint, created exclusively, never rewritten); an
  object-store or log sink implements the same two methods. VerifyChain compares the chain with
  the latest checkpoint, so a truncated tail (records deleted and the head row rewound) or a tail
  re-chained with recomputed hashes is reported with the first missing or changed sequence.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from citetrace.signing import Keyring, SignatureError, Signer, b64, open_keys, unb64

from services.trace.canonical import canonical_json

SEAL_DOMAIN = b"citetrace.trace.v1.seal\n"
CHECKPOINT_DOMAIN = b"citetrace.trace.v1.checkpoint\n"
CHECKPOINT_TYPE = "citetrace.trace.checkpoint.v1"


def seal_message(tenant_id: str, sequence: int, item_hash: str) -> bytes:
    return SEAL_DOMAIN + canonical_json({"tenant_id": tenant_id, "sequence": int(sequence), "hash": item_hash})


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """A signed statement of a tenant's chain head."""

    tenant_id: str
    sequence: int
    head_hash: str
    created_at: str  # ISO 8601 UTC
    key_id: str = ""
    signature: str = ""

    def message(self) -> bytes:
        return CHECKPOINT_DOMAIN + canonical_json({
            "type": CHECKPOINT_TYPE, "tenant_id": self.tenant_id, "sequence": int(self.sequence),
            "head_hash": self.head_hash, "created_at": self.created_at})

    def to_json(self) -> bytes:
        return canonical_json({"type": CHECKPOINT_TYPE, **dataclasses.asdict(self)}) + b"\n"

    @classmethod
    def from_json(cls, data: bytes) -> Checkpoint:
        value = json.loads(data)
        if not isinstance(value, dict) or value.get("type") != CHECKPOINT_TYPE:
            raise ValueError("not a citetrace trace checkpoint")
        return cls(tenant_id=str(value["tenant_id"]), sequence=int(value["sequence"]),
                   head_hash=str(value["head_hash"]), created_at=str(value["created_at"]),
                   key_id=str(value.get("key_id", "")), signature=str(value.get("signature", "")))


class CheckpointSink(Protocol):
    """Where checkpoints go: append-only, outside the trace database."""

    def write(self, checkpoint: Checkpoint) -> str:
        """Stores the checkpoint (never replacing one); returns where it went."""
        ...

    def latest(self, tenant_id: str) -> tuple[Checkpoint | None, str]:
        """The tenant's checkpoint with the highest sequence ("" when unreadable), or (None, why)
        when there is none or it cannot be parsed."""
        ...


_SAFE = re.compile(r"[^0-9A-Za-z._-]")


class DirectoryCheckpointSink:
    """`<dir>/<tenant>/<sequence:020d>-<UTC time>.json`, each created with O_EXCL and fsynced. Mount
    the directory from storage the database's writers cannot write (a WORM bucket sync, another
    host); the service only ever creates files there."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def _tenant_dir(self, tenant_id: str) -> Path:
        return self.directory / _SAFE.sub("_", tenant_id)

    def write(self, checkpoint: Checkpoint) -> str:
        folder = self._tenant_dir(checkpoint.tenant_id)
        folder.mkdir(parents=True, exist_ok=True)
        stamp = _SAFE.sub("", checkpoint.created_at)
        path = folder / f"{checkpoint.sequence:020d}-{stamp}.json"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
        try:
            os.write(fd, checkpoint.to_json())
            os.fsync(fd)
        finally:
            os.close(fd)
        return str(path)

    def latest(self, tenant_id: str) -> tuple[Checkpoint | None, str]:
        folder = self._tenant_dir(tenant_id)
        files = sorted(folder.glob("*.json")) if folder.is_dir() else []
        if not files:
            return None, f"no checkpoint in {folder}"
        try:
            return Checkpoint.from_json(files[-1].read_bytes()), str(files[-1])
        except (OSError, ValueError, KeyError) as exc:
            return None, f"checkpoint {files[-1]} is unreadable: {exc}"


class ChainSealer:
    """Signs chain items and checkpoints with the one signing key; verifies with every verify key."""

    def __init__(self, signer: Signer | None, keyring: Keyring) -> None:
        self.signer = signer
        self.keyring = keyring

    def sign(self, message: bytes) -> tuple[str, str]:
        if self.signer is None:
            raise RuntimeError("no trace signing key configured: this process can verify but not append")
        return self.signer.key_id, b64(self.signer.sign(message))

    def verify(self, key_id: str, message: bytes, signature: str) -> None:
        """Raises SignatureError (MISSING | UNKNOWN_KEY | INVALID)."""
        self.keyring.verify(key_id, message, unb64(signature))

    def checkpoint(self, tenant_id: str, sequence: int, head_hash: str, now: dt.datetime) -> Checkpoint:
        unsigned = Checkpoint(tenant_id, sequence, head_hash, now.replace(tzinfo=None).isoformat() + "Z")
        key_id, signature = self.sign(unsigned.message())
        return dataclasses.replace(unsigned, key_id=key_id, signature=signature)

    def verify_checkpoint(self, checkpoint: Checkpoint) -> None:
        self.verify(checkpoint.key_id, checkpoint.message(), checkpoint.signature)


def build_sealer(*, provider: str, key_file: Path, verify_key_files: tuple[str, ...], create: bool,
                 sign: bool = True, signed_key_ids: Callable[[], set[str]] | None = None) -> ChainSealer:
    """The trace signing key and keyring (citetrace.signing.open_keys, shared with retrieval)."""
    signer, keyring = open_keys(provider=provider, key_file=key_file, verify_key_files=verify_key_files,
                                create=create, sign=sign, signed_key_ids=signed_key_ids, label="trace",
                                env_prefix="CITETRACE_TRACE_", items="records")
    return ChainSealer(signer, keyring)


__all__ = ["ChainSealer", "Checkpoint", "CheckpointSink", "DirectoryCheckpointSink", "SignatureError",
           "build_sealer", "seal_message"]
