"""The canonical form of a trace record and its hash chain (no grpc, no database).

What is stored and hashed
-------------------------
A TraceRecord is split in two before it is stored:

* the **body**: the record with the query text removed (``query`` cleared) and the fields the trace
  service sets itself cleared (``previous_hash``, ``record_hash``, ``sequence``, ``needs_review``),
  serialized with protobuf's deterministic serialization. The body bytes are stored as they are and
  never re-serialized for verification, so the hash does not depend on the protobuf runtime version.
* the **query text** (raw and normalized) in its own row, with a random 32-byte nonce. The chain
  commits to the query through ``query_digest = sha256(nonce || canonical_json([raw, normalized]))``.

The record hash is::

    record_hash = sha256("citetrace.trace.v1\\n" + canonical_json({
        "tenant_id", "trace_id", "sequence", "previous_hash", "query_digest", "body_sha256"}))

with ``previous_hash`` the record hash of the tenant's previous record (``GENESIS_HASH`` for the
first). Redaction (retention) erases the query text *and its nonce*; the digest stays in the chain,
so the chain still verifies, and because the nonce is gone nobody can confirm a guessed question
against the digest afterwards (a hiding commitment). While the text is present, verification also
recomputes the digest from text + nonce, so editing the stored question is detected too.
"""

from __future__ import annotations

import dataclasses
import json
import secrets

from citetrace.identity import sha256_hex
from citetrace.trace.v1 import trace_service_pb2 as pb

HASH_DOMAIN = b"citetrace.trace.v1\n"
GENESIS_HASH = "0" * 64
NONCE_BYTES = 32


def canonical_json(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def new_nonce() -> bytes:
    return secrets.token_bytes(NONCE_BYTES)


def query_digest(raw: str, normalized: str, nonce: bytes) -> str:
    return sha256_hex(nonce + canonical_json([raw, normalized]))


def body_of(record: pb.TraceRecord) -> pb.TraceRecord:
    """A copy of the record without the query text and without the service-set fields."""
    body = pb.TraceRecord()
    body.CopyFrom(record)
    body.ClearField("query")
    body.ClearField("previous_hash")
    body.ClearField("record_hash")
    body.ClearField("sequence")
    body.ClearField("needs_review")
    return body


def body_bytes(record: pb.TraceRecord) -> bytes:
    return body_of(record).SerializeToString(deterministic=True)


def record_hash(*, tenant_id: str, trace_id: str, sequence: int, previous_hash: str, query_digest: str,
                body: bytes) -> str:
    header = {
        "tenant_id": tenant_id,
        "trace_id": trace_id,
        "sequence": int(sequence),
        "previous_hash": previous_hash,
        "query_digest": query_digest,
        "body_sha256": sha256_hex(body),
    }
    return sha256_hex(HASH_DOMAIN + canonical_json(header))


LINK_DOMAIN = b"citetrace.trace.v1.link\n"


def link_hash(*, tenant_id: str, link_id: str, kind: str, sequence: int, previous_hash: str,
              subject_trace_id: str, subject_ref: str, created_at: str, body: bytes) -> str:
    """The hash of a chain link (a workflow action, ...): the same chain as the records (previous_hash
    is the hash of whatever came before, record or link), its own domain so a link can never be
    read as a record or the other way round."""
    header = {
        "tenant_id": tenant_id, "link_id": link_id, "kind": kind, "sequence": int(sequence),
        "previous_hash": previous_hash, "subject_trace_id": subject_trace_id, "subject_ref": subject_ref,
        "created_at": created_at, "body_sha256": sha256_hex(body),
    }
    return sha256_hex(LINK_DOMAIN + canonical_json(header))


@dataclasses.dataclass(frozen=True)
class Facets:
    """What the store indexes for filtering, derived from the body (and re-derived by VerifyChain)."""

    outcome: int
    part_outcomes: frozenset[int]
    reasons: frozenset[int]
    cited_document_ids: frozenset[str]
    cited_version_ids: frozenset[str]
    cited_passage_ids: frozenset[str]

    def rows(self) -> set[tuple[str, str]]:
        rows: set[tuple[str, str]] = set()
        rows |= {("part_outcome", str(v)) for v in self.part_outcomes}
        rows |= {("reason", str(v)) for v in self.reasons}
        rows |= {("document", v) for v in self.cited_document_ids}
        rows |= {("version", v) for v in self.cited_version_ids}
        rows |= {("passage", v) for v in self.cited_passage_ids}
        return rows


def cited(record: pb.TraceRecord):
    """The citation set: citations the answer actually used (per part), in order."""
    for part in record.parts:
        yield from part.citations


def facets_of(record: pb.TraceRecord) -> Facets:
    citations = list(cited(record))
    return Facets(
        outcome=int(record.outcome),
        part_outcomes=frozenset(int(p.outcome) for p in record.parts if p.outcome),
        reasons=frozenset(int(r) for p in record.parts for r in p.reasons if r),
        cited_document_ids=frozenset(c.document_id for c in citations if c.document_id),
        cited_version_ids=frozenset(c.version_id for c in citations if c.version_id),
        cited_passage_ids=frozenset(c.passage_id for c in citations if c.passage_id),
    )


# Link kinds besides workflow actions: the evidence events of the record, each a link of the chain
# whose body is the canonical JSON of its row (VerifyChain compares the row with the link).
LINK_REVIEW = "review"
LINK_VERSION_EVENT = "version_event"
LINK_REDACTION = "redaction"


def review_body(*, review_id: str, trace_id: str, decision: int, reviewer_ref: str, rubric_note: str,
                answer_record_hash: str, evidence_version_ids, source_policy_version: str,
                created_at: str) -> bytes:
    return canonical_json({
        "review_id": review_id, "trace_id": trace_id, "decision": int(decision), "reviewer_ref": reviewer_ref,
        "rubric_note": rubric_note, "answer_record_hash": answer_record_hash,
        "evidence_version_ids": list(evidence_version_ids), "source_policy_version": source_policy_version,
        "created_at": created_at})


def version_event_body(*, version_id: str, kind: int, replaced_by_version_id: str, actor_ref: str,
                       created_at: str) -> bytes:
    return canonical_json({"version_id": version_id, "kind": int(kind),
                           "replaced_by_version_id": replaced_by_version_id, "actor_ref": actor_ref,
                           "created_at": created_at})


def version_event_link_id(version_id: str, kind: int, replaced_by_version_id: str) -> str:
    """One link per distinct event (the store's idempotency key)."""
    return "ve-" + sha256_hex(canonical_json([version_id, int(kind), replaced_by_version_id]))[:40]


def redaction_body(*, trace_id: str, redacted_at: str, reason: str, actor_ref: str) -> bytes:
    return canonical_json({"trace_id": trace_id, "redacted_at": redacted_at, "reason": reason,
                           "actor_ref": actor_ref})


def redaction_link_id(trace_id: str) -> str:
    return "rd-" + sha256_hex(trace_id.encode("utf-8"))[:40]
