"""JSON forms of the gateway's domain records: a proposal's stored detail, the original result kept
under an idempotency key, and the payload of an action event. Plain dicts of str/int/bool/list
(times as ISO 8601 UTC), so SQLite's and PostgreSQL's JSON columns hold the same thing. No grpc."""

from __future__ import annotations

import datetime as dt
from typing import Any

from services.scheduler_gateway.domain import (
    UTC,
    AppointmentRecord,
    ConfirmOutcome,
    Consequence,
    ProposalOutcome,
    ProposalRecord,
    SlotRecord,
)


def time_to_json(value: dt.datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat()


def time_from_json(value: str | None) -> dt.datetime | None:
    return None if value is None else dt.datetime.fromisoformat(value).astimezone(UTC)


def slot_to_json(slot: SlotRecord) -> dict[str, Any]:
    return {
        "slot_id": slot.slot_id, "version": slot.version, "location_id": slot.location_id,
        "location_name": slot.location_name, "clinic_name": slot.clinic_name, "time_zone": slot.time_zone,
        "provider_id": slot.provider_id, "provider_name": slot.provider_name, "specialty": slot.specialty,
        "appointment_type": slot.appointment_type, "start": time_to_json(slot.start), "end": time_to_json(slot.end),
        "status": slot.status,
    }


def slot_from_json(data: dict[str, Any]) -> SlotRecord:
    return SlotRecord(**{**data, "start": time_from_json(data["start"]), "end": time_from_json(data["end"])})


def appointment_to_json(appointment: AppointmentRecord) -> dict[str, Any]:
    return {
        "appointment_id": appointment.appointment_id, "patient_ref": appointment.patient_ref,
        "status": appointment.status, "version": appointment.version, "slot": slot_to_json(appointment.slot),
        "updated_at": time_to_json(appointment.updated_at),
    }


def appointment_from_json(data: dict[str, Any] | None) -> AppointmentRecord | None:
    if data is None:
        return None
    return AppointmentRecord(
        appointment_id=data["appointment_id"], patient_ref=data["patient_ref"], status=data["status"],
        version=int(data["version"]), slot=slot_from_json(data["slot"]), updated_at=time_from_json(data["updated_at"]),
    )


def consequence_to_json(consequence: Consequence) -> dict[str, Any]:
    return {
        "kind": consequence.kind, "text": consequence.text, "citations": [dict(c) for c in consequence.citations],
        "support": consequence.support, "explanation": consequence.explanation, "part_id": consequence.part_id,
    }


def consequence_from_json(data: dict[str, Any]) -> Consequence:
    return Consequence(**{**data, "citations": tuple(dict(c) for c in data.get("citations", ()))})


def proposal_detail(proposal: ProposalRecord | Any) -> dict[str, Any]:
    """What the proposals table keeps in its JSON `detail` column."""
    return {
        "appointment": None if proposal.appointment is None else appointment_to_json(proposal.appointment),
        "options": [slot_to_json(o) for o in proposal.options],
        "consequences": [consequence_to_json(c) for c in proposal.consequences],
        "policy_version_ids": list(proposal.policy_version_ids),
        "location_ids": sorted(proposal.location_ids),
    }


def proposal_to_json(proposal: ProposalRecord) -> dict[str, Any]:
    return {
        **proposal_detail(proposal),
        "tenant_id": proposal.tenant_id, "proposal_id": proposal.proposal_id, "kind": proposal.kind,
        "status": proposal.status, "patient_ref": proposal.patient_ref, "review_required": proposal.review_required,
        "review_reason": proposal.review_reason, "created_at": time_to_json(proposal.created_at),
        "expires_at": time_to_json(proposal.expires_at), "created_by_ref": proposal.created_by_ref,
        "ask_trace_id": proposal.ask_trace_id, "consequence_rules_version": proposal.consequence_rules_version,
        "version": proposal.version, "decided_at": time_to_json(proposal.decided_at),
        "decided_by_ref": proposal.decided_by_ref, "chosen_slot_id": proposal.chosen_slot_id,
        "result_appointment_id": proposal.result_appointment_id, "outcome_reason": proposal.outcome_reason,
        "decision_note": proposal.decision_note,
    }


def proposal_from_json(data: dict[str, Any]) -> ProposalRecord:
    return ProposalRecord(
        tenant_id=data["tenant_id"], proposal_id=data["proposal_id"], kind=data["kind"], status=data["status"],
        patient_ref=data["patient_ref"], appointment=appointment_from_json(data.get("appointment")),
        options=tuple(slot_from_json(o) for o in data.get("options", ())),
        consequences=tuple(consequence_from_json(c) for c in data.get("consequences", ())),
        review_required=bool(data["review_required"]), review_reason=data["review_reason"],
        created_at=time_from_json(data["created_at"]), expires_at=time_from_json(data["expires_at"]),
        created_by_ref=data["created_by_ref"], ask_trace_id=data["ask_trace_id"],
        consequence_rules_version=data["consequence_rules_version"],
        policy_version_ids=tuple(data.get("policy_version_ids", ())),
        location_ids=frozenset(data.get("location_ids", ())), version=int(data["version"]),
        decided_at=time_from_json(data.get("decided_at")), decided_by_ref=data.get("decided_by_ref", ""),
        chosen_slot_id=data.get("chosen_slot_id", ""), result_appointment_id=data.get("result_appointment_id", ""),
        outcome_reason=data.get("outcome_reason", ""), decision_note=data.get("decision_note", ""),
    )


def confirm_outcome_to_json(outcome: ConfirmOutcome) -> dict[str, Any]:
    return {"result": outcome.result, "appointment_id": outcome.appointment_id,
            "slot": None if outcome.slot is None else slot_to_json(outcome.slot)}


def confirm_outcome_from_json(data: dict[str, Any]) -> ConfirmOutcome:
    slot = data.get("slot")
    return ConfirmOutcome(data["result"], None if slot is None else slot_from_json(slot), data.get("appointment_id", ""))


def proposal_outcome_to_json(outcome: ProposalOutcome) -> dict[str, Any]:
    return {
        "result": outcome.result, "proposal": proposal_to_json(outcome.proposal),
        "appointment": None if outcome.appointment is None else appointment_to_json(outcome.appointment),
        "slot": None if outcome.slot is None else slot_to_json(outcome.slot),
    }


def proposal_outcome_from_json(data: dict[str, Any]) -> ProposalOutcome:
    slot = data.get("slot")
    return ProposalOutcome(
        result=data["result"], proposal=proposal_from_json(data["proposal"]),
        appointment=appointment_from_json(data.get("appointment")),
        slot=None if slot is None else slot_from_json(slot),
    )
