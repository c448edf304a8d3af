"""Signed version statements: what the retrieval authority vouches for (issue 16).

A version's identity and lifecycle state is a canonical JSON statement signed with Ed25519 by a
key outside the database (citetrace.signing). The statement names the tenant, document and source
class, the version ID (= sha256 of the text, so the text is covered), the status and the
transition that produced it, the validity window, the audience (roles, locations, intents,
locale), title and locator, and `passages_sha256`, a digest of every passage row of the version
(identity, span, digest, anchor, heading context, active flag). Every change the service makes
(ingestion, status change, supersession, re-extraction, re-signing after a key rotation) writes a
new statement with the next revision in the same transaction.

`verify_bundle` is what every read and every index rebuild runs: the signature, then the text
against the version ID, then the passage rows against the signed digest, then each passage's ID
and span digest. A database writer who rewrites text, recomputes every sha256, the version ID and
the passage IDs, or edits audience, validity or status, cannot produce a matching signature: the
read is refused with DATA_LOSS and the reason names what failed.

Residual risk (documented): a writer who saved an earlier signed state of the same version (all
its columns) can restore it; the retirements and supersessions that state would undo are links of
the trace chain (version events), which is checkpointed outside the trace database.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from datetime import UTC, datetime

from citetrace.identity import passage_id_of, sha256_hex, version_id_of
from citetrace.signing import Keyring, SignatureError, Signer, b64, unb64

STATEMENT_DOMAIN = b"citetrace.retrieval.version-statement.v1\n"

# Transitions named in statements (besides "<old>-><new>" for a status change).
INGESTED = "ingested"
SUPERSEDED = "superseded"
REEXTRACTED = "reextracted"
PASSAGES_APPROVED = "passages-approved"  # passages awaiting review approved by a policy admin (issue 19)
RESIGNED = "resigned"
ADOPTED = "adopted"


@dataclasses.dataclass(frozen=True)
class Seal:
    """The signature columns of a version row."""

    revision: int
    transition: str
    sealed_at: datetime
    passages_sha256: str
    key_id: str
    signature: str  # base64


class IntegrityFailure(Exception):
    """A stored version or passage that the service must not serve. `reason` is the ErrorInfo
    reason, `kind` the metric label (version_signature | version_text | passage_span |
    passage_identity)."""

    def __init__(self, reason: str, kind: str, message: str, version_id: str, passage_id: str = "") -> None:
        super().__init__(message)
        self.reason = reason
        self.kind = kind
        self.message = message
        self.version_id = version_id
        self.passage_id = passage_id


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat(timespec="microseconds")


def _passage_fields(p) -> list:
    """A passage row as signed. The page locator and review state (issue 19) are appended only when
    they are not the defaults, so rows signed before they existed still verify."""
    row = [p.passage_id, p.ordinal, p.start, p.end, p.content_sha256, p.source_anchor, p.heading_context,
           p.extraction_version, bool(p.active)]
    pages = [p.page_start, p.page_end, p.page_label_start, p.page_label_end]
    review = [p.review_state, p.review_reason]
    if p.page_start or p.review_state != "not_required" or p.review_reason:
        row.extend(pages + review)
    return row


def passages_digest(passages: Iterable) -> str:
    """sha256 over every passage row of a version (active or not), order-independent."""
    rows = sorted((_passage_fields(p) for p in passages), key=lambda r: (r[2], r[3], r[0]))
    return sha256_hex(json.dumps(rows, separators=(",", ":"), ensure_ascii=False))


def statement_bytes(version, *, revision: int, transition: str, sealed_at: datetime, passages_sha256: str,
                    key_id: str) -> bytes:
    """The canonical statement of `version` (a VersionRecord) in one state."""
    body = {
        "tenant_id": version.tenant_id,
        "document_id": version.document_id,
        "source_class": version.source_class,
        "version_id": version.version_id,
        "title": version.title,
        "source_uri": version.source_uri,
        "status": version.status,
        "transition": transition,
        "revision": int(revision),
        "valid_from": _iso(version.valid_from),
        "valid_to": _iso(version.valid_to),
        "superseded_by_version_id": version.superseded_by_version_id or "",
        "roles": sorted(version.roles),
        "location_scope": sorted(version.location_scope),
        "intents": sorted(version.intents),
        "locale": version.locale,
        "extraction_version": version.extraction_version,
        "ingested_at": _iso(version.ingested_at),
        "text_length": int(version.text_length),
        "passages_sha256": passages_sha256,
        "sealed_at": _iso(sealed_at),
        "key_id": key_id,
    }
    # The source of the text (issue 19): named only when recorded, so older statements still verify.
    if version.source_sha256:
        body.update(source_sha256=version.source_sha256, media_type=version.media_type,
                    page_count=int(version.page_count))
    return STATEMENT_DOMAIN + json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


class VersionSealer:
    """Signs version statements (with the one signing key) and verifies stored ones (with every
    verify key: rotation)."""

    def __init__(self, signer: Signer | None, keyring: Keyring) -> None:
        self.signer = signer
        self.keyring = keyring

    def seal(self, version, passages: Iterable, *, transition: str, revision: int, now: datetime) -> Seal:
        if self.signer is None:
            raise RuntimeError("no signing key configured: this process can verify but not sign versions")
        digest = passages_digest(passages)
        message = statement_bytes(version, revision=revision, transition=transition, sealed_at=now,
                                  passages_sha256=digest, key_id=self.signer.key_id)
        return Seal(revision=revision, transition=transition, sealed_at=now, passages_sha256=digest,
                    key_id=self.signer.key_id, signature=b64(self.signer.sign(message)))

    def verify_statement(self, version) -> None:
        """The signature over the version's metadata (no text needed): raises IntegrityFailure."""
        seal = version.seal
        if seal is None:
            raise IntegrityFailure("VERSION_SIGNATURE_MISSING", "version_signature",
                                   f"version {version.version_id} carries no signature; it was not stored by this "
                                   "retrieval authority (or predates signing: re-ingest or "
                                   "`citetrace index resign --adopt-unsigned`)", version.version_id)
        message = statement_bytes(version, revision=seal.revision, transition=seal.transition,
                                  sealed_at=seal.sealed_at, passages_sha256=seal.passages_sha256, key_id=seal.key_id)
        try:
            self.keyring.verify(seal.key_id, message, unb64(seal.signature))
        except SignatureError as exc:
            reason = {"MISSING": "VERSION_SIGNATURE_MISSING", "UNKNOWN_KEY": "VERSION_SIGNATURE_UNKNOWN_KEY"}.get(
                exc.reason, "VERSION_SIGNATURE_INVALID")
            detail = ("its metadata (status, validity, audience, identity) or text was changed outside the service"
                      if reason == "VERSION_SIGNATURE_INVALID" else exc.message)
            raise IntegrityFailure(reason, "version_signature",
                                   f"version {version.version_id}: {detail}", version.version_id) from exc

    def verify_bundle(self, version, text: str, passages: list, focus: Iterable[str] = ()) -> None:
        """Everything about one version that a read may serve. `passages` are ALL its passage rows;
        `focus` names passages the caller asked for, checked first so the reason is the most exact
        one (their own span before the rest of the version)."""
        self.verify_statement(version)
        check_content(version, text, passages, focus)
        if passages_digest(passages) != version.seal.passages_sha256:
            raise IntegrityFailure("PASSAGE_SET_MISMATCH", "passage_identity",
                                   f"the passage rows of version {version.version_id} (spans, anchors, heading "
                                   "context, which are active) differ from the signed set", version.version_id)


def check_content(version, text: str, passages: list, focus: Iterable[str] = ()) -> None:
    """The digests alone (no signature): the focus passages' spans, the text against the version
    ID, then every passage's ID and span digest."""
    by_id = {p.passage_id: p for p in passages}
    for pid in focus:
        if pid in by_id:
            check_passage(version, text, by_id[pid])
    if len(text) != version.text_length or version_id_of(text) != version.version_id:
        raise IntegrityFailure("VERSION_DIGEST_MISMATCH", "version_text",
                               f"the stored text of version {version.version_id} no longer matches its "
                               "content-derived version ID", version.version_id)
    for p in passages:
        check_passage(version, text, p)


def check_passage(version, text: str, passage) -> None:
    expected = passage_id_of(version.tenant_id, version.document_id, version.version_id, passage.start, passage.end)
    if (passage.passage_id != expected or passage.tenant_id != version.tenant_id
            or passage.document_id != version.document_id or passage.version_id != version.version_id):
        raise IntegrityFailure("PASSAGE_ID_MISMATCH", "passage_identity",
                               f"passage {passage.passage_id} does not derive from its locator in version "
                               f"{version.version_id}", version.version_id, passage.passage_id)
    if not 0 <= passage.start < passage.end <= len(text) or \
            sha256_hex(text[passage.start:passage.end]) != passage.content_sha256:
        raise IntegrityFailure("PASSAGE_DIGEST_MISMATCH", "passage_span",
                               f"the stored text of passage {passage.passage_id} no longer matches its "
                               "content_sha256", version.version_id, passage.passage_id)
