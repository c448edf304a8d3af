"""The self-contained JSON receipt of one evidence record (`citetrace trace export`, the console's
receipt download): the record, its reviews and redactions, every citation with the claims it backs,
and whether each cited passage can still be read today by the same caller."""

from __future__ import annotations

import grpc
from google.protobuf import json_format

from citetrace.common.v1 import common_pb2
from citetrace.kit.auth import bearer_metadata
from citetrace.kit.clients import domain_error
from citetrace.kit.timestamps import iso_z, utc_now
from citetrace.retrieval.v1 import retrieval_service_pb2 as ret_pb
from citetrace.trace.v1 import trace_service_pb2 as pb
from citetrace.vocab import enum_label

RECEIPT_VERSION = "citetrace.receipt.v1"


def to_dict(message) -> dict:
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def check_retrievable(retrieval_stub, token: str, passage_ids: list[str], timeout: float = 10.0
                      ) -> tuple[dict[str, dict], str]:
    """Asks retrieval, with the caller's token, whether each cited passage can still be read.
    Returns per passage {"retrievable", "reason", "status"} and an error when retrieval was not
    reachable (then nothing is claimed either way)."""
    results: dict[str, dict] = {}
    for pid in passage_ids:
        try:
            reply = retrieval_stub.GetPassages(ret_pb.GetPassagesRequest(passage_ids=[pid]), timeout=timeout,
                                               metadata=bearer_metadata(token))
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.NOT_FOUND:
                results[pid] = {"retrievable": False, "reason": "NOT_FOUND", "status": ""}
                continue
            error = domain_error(err, "retrieval")
            return results, f"{error.code.value} [{error.reason}]: {error.message}"
        status = {v.version_id: v.status for v in reply.versions}
        passage = reply.passages[0] if reply.passages else None
        if passage is None:
            results[pid] = {"retrievable": False, "reason": "NOT_FOUND", "status": ""}
            continue
        version_status = status.get(passage.identity.version_id, 0)
        name = enum_label(common_pb2.VersionStatus, version_status, "VERSION_STATUS_")
        if version_status == common_pb2.VERSION_STATUS_RETIRED:
            results[pid] = {"retrievable": False, "reason": "RETIRED", "status": name}
        else:
            results[pid] = {"retrievable": True, "reason": "", "status": name,
                            "content_sha256": passage.identity.content_sha256}
    return results, ""


def cited_passage_ids(reply: pb.GetTraceResponse) -> list[str]:
    return list(dict.fromkeys(c.passage_id for p in reply.record.parts for c in p.citations if c.passage_id))


def build_receipt(reply: pb.GetTraceResponse, availability: dict[str, dict], availability_error: str) -> dict:
    rec = reply.record
    citations = []
    for part in rec.parts:
        claims_by_label: dict[str, list[str]] = {}
        for claim_record in part.claims:
            for label in claim_record.claim.evidence_labels:
                claims_by_label.setdefault(label, []).append(claim_record.claim.claim_id)
        for c in part.citations:
            entry = {"part_id": part.part_id, "claim_ids": claims_by_label.get(c.label, []), **to_dict(c)}
            state = availability.get(c.passage_id)
            if state is not None:
                entry["retrievable_now"] = state["retrievable"]
                entry["status_now"] = state["status"]
                if state.get("content_sha256") and state["content_sha256"] != c.content_sha256:
                    entry["retrievable_now"] = False
                    state = {**state, "retrievable": False, "reason": "DIGEST_MISMATCH"}
                    availability[c.passage_id] = state
            citations.append(entry)
    not_retrievable = []
    seen: set[str] = set()
    for entry in citations:
        pid = entry["passage_id"]
        state = availability.get(pid)
        if state is not None and not state["retrievable"] and pid not in seen:
            seen.add(pid)
            not_retrievable.append({"passage_id": pid, "document_id": entry.get("document_id", ""),
                                    "version_id": entry.get("version_id", ""), "reason": state["reason"]})
    return {
        "receipt_version": RECEIPT_VERSION,
        "exported_at": iso_z(utc_now()),
        "trace_id": rec.trace_id,
        "tenant_id": rec.tenant_id,
        "chain": {"sequence": str(rec.sequence), "previous_hash": rec.previous_hash,
                  "record_hash": rec.record_hash},
        "needs_review": rec.needs_review,
        "citations": citations,
        "retrievability": {
            "checked": not availability_error,
            "error": availability_error,
            "not_retrievable": not_retrievable,
        },
        "record": to_dict(rec),
        "reviews": [to_dict(r) for r in reply.reviews],
        "redactions": [to_dict(r) for r in reply.redactions],
        "links": [to_dict(link) for link in reply.links],
    }
