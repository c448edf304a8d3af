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
    missing: str = ""  # location | specialty
    candidates: tuple[str, ...] = ()  # location IDs or specialty keys offered
    location_id: str = ""
    locale: str = ""

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Pending:
        raw = json.loads(text or "{}")
        return cls(tuple(raw.get("clauses", ())), raw.get("missing", ""), tuple(raw.get("candidates", ())),
                   raw.get("location_id", ""), raw.get("locale", ""))


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
