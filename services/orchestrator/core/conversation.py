"""The conversation a turn belongs to, as plain values (the store: services/orchestrator/conversations.py)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import secrets


@dataclasses.dataclass(frozen=True)
class Pending:
    """The clarification a conversation waits for (empty `missing`: nothing pending)."""

    clauses: tuple[str, ...] = ()
    missing: str = ""  # location | specialty | appointment
    candidates: tuple[str, ...] = ()  # location IDs, specialty keys or appointment IDs offered
    location_id: str = ""
    locale: str = ""
    # The free slots this turn's answer offered ("book the 10:00" next binds to them).
    offered: OfferedSlots | None = None

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Pending:
        raw = json.loads(text or "{}")
        offered = raw.get("offered")
        return cls(tuple(raw.get("clauses", ())), raw.get("missing", ""), tuple(raw.get("candidates", ())),
                   raw.get("location_id", ""), raw.get("locale", ""),
                   OfferedSlots.from_dict(offered) if offered else None)


@dataclasses.dataclass(frozen=True)
class OfferedSlots:
    """A slot answer of the last turn: where, what and when it searched, and the slots it showed."""

    slot_ids: tuple[str, ...]
    location_id: str
    location_name: str = ""
    time_zone: str = "UTC"
    specialty: str = ""
    appointment_type: str = ""
    range_start: str = ""  # ISO 8601, UTC
    range_end: str = ""

    @classmethod
    def from_dict(cls, raw: dict) -> OfferedSlots:
        return cls(tuple(raw.get("slot_ids", ())), raw.get("location_id", ""), raw.get("location_name", ""),
                   raw.get("time_zone", "UTC"), raw.get("specialty", ""), raw.get("appointment_type", ""),
                   raw.get("range_start", ""), raw.get("range_end", ""))


@dataclasses.dataclass(frozen=True)
class Conversation:
    conversation_id: str
    tenant_id: str
    principal_ref: str
    turns: int
    last_trace_id: str
    pending: Pending
    expires_at: dt.datetime


def new_conversation_id() -> str:
    return "conv_" + secrets.token_hex(12)
