"""Conversation envelopes (issue 14, DESIGN.md §10): what a clarification is waiting for, so the
reply ("Northside") is a new Ask that answers the original question without the user restating it.

An envelope is short-lived (expiry a setting), bound to the tenant and the principal that opened it
(another tenant's or principal's conversation does not exist for a caller), and holds the pending
route as structured data: the in-scope clauses the parts search with, the entity asked for, the
candidates offered, the entities already found. Never a transcript. It lives in a SQL store so a
restarted or second orchestrator replica finds it: SQLite under the data dir by default, PostgreSQL
in production (CITETRACE_ORCHESTRATOR_DATABASE_URL), opened and migrated through citetrace.kit.sql."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import sqlalchemy as sa
from citetrace.kit import sql as kit_sql
from citetrace.kit.context import check_deadline

from services.orchestrator.core.conversation import Conversation, Pending, new_conversation_id

__all__ = ["Conversation", "ConversationStore", "Pending", "new_conversation_id"]

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
_META = sa.MetaData()
CONVERSATIONS = sa.Table(
    "orch_conversations", _META,
    sa.Column("conversation_id", sa.String(64), primary_key=True),
    sa.Column("tenant_id", sa.String(128), nullable=False),
    sa.Column("principal_ref", sa.String(256), nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("turns", sa.Integer, nullable=False),
    sa.Column("last_trace_id", sa.String(64), nullable=False),
    sa.Column("pending", sa.Text, nullable=False),
    # The idempotency key of the turn that last moved the conversation, and the conversation as it was
    # before that turn: a retry of that turn (same key: its first attempt failed after moving the
    # conversation on) continues from there (migration 0002).
    sa.Column("turn_key", sa.String(256), nullable=False, server_default=""),
    sa.Column("prior_turns", sa.Integer, nullable=False, server_default="0"),
    sa.Column("prior_trace_id", sa.String(64), nullable=False, server_default=""),
    sa.Column("prior_pending", sa.Text, nullable=False, server_default="{}"),
)


class ConversationStore:
    def __init__(self, url: str, ttl_seconds: float = 900.0, *,
                 before_commit: Callable[[], None] | None = None) -> None:
        """`before_commit` is a test seam (never a setting): called inside a turn's transaction just
        before the deadline check and the commit, so a test can slow the commit down."""
        self.engine = kit_sql.make_engine(url, sqlite_synchronous="NORMAL")
        self.ttl = dt.timedelta(seconds=ttl_seconds)
        self._before_commit = before_commit
        kit_sql.alembic_upgrade(self.engine, "orchestrator", MIGRATIONS)

    def close(self) -> None:
        self.engine.dispose()

    def get(self, conversation_id: str, tenant_id: str, principal_ref: str,
            now: dt.datetime | None = None, retry_key: str = "") -> Conversation | None:
        """The caller's live conversation, or None (unknown, expired, or someone else's: the same).
        With `retry_key` equal to the key of the turn that last moved it, that turn is being retried
        (its first attempt did not complete): the conversation as it was before that turn."""
        now = now or dt.datetime.now(dt.UTC)
        c = CONVERSATIONS.c
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(CONVERSATIONS).where(
                c.conversation_id == conversation_id, c.tenant_id == tenant_id, c.principal_ref == principal_ref,
            )).first()
        if row is None or _aware(row.expires_at) <= now:
            return None
        if retry_key and row.turn_key == retry_key:
            return Conversation(row.conversation_id, row.tenant_id, row.principal_ref, row.prior_turns,
                                row.prior_trace_id, Pending.from_json(row.prior_pending), _aware(row.expires_at))
        return Conversation(row.conversation_id, row.tenant_id, row.principal_ref, row.turns, row.last_trace_id,
                            Pending.from_json(row.pending), _aware(row.expires_at))

    def record_turn(self, conversation_id: str, tenant_id: str, principal_ref: str, trace_id: str,
                    pending: Pending, now: dt.datetime | None = None, turn_key: str = "") -> None:
        """Creates the conversation or moves it one turn on (the pending clarification replaced). A
        turn under the key of the turn that last moved it is that turn's retry: it replaces that turn
        (counted from the state before it) instead of following it."""
        now = now or dt.datetime.now(dt.UTC)
        c = CONVERSATIONS.c
        mine = (c.conversation_id == conversation_id, c.tenant_id == tenant_id, c.principal_ref == principal_ref)
        with self.engine.begin() as conn:
            row = conn.execute(sa.select(c.turn_key, c.turns, c.last_trace_id, c.pending, c.prior_turns,
                                         c.prior_trace_id, c.prior_pending).where(*mine).with_for_update()).first()
            if row is None:
                conn.execute(sa.insert(CONVERSATIONS).values(
                    conversation_id=conversation_id, tenant_id=tenant_id, principal_ref=principal_ref,
                    created_at=now, updated_at=now, expires_at=now + self.ttl, turns=1, last_trace_id=trace_id,
                    pending=pending.to_json(), turn_key=turn_key, prior_turns=0, prior_trace_id="",
                    prior_pending=Pending().to_json()))
            else:
                retried = bool(turn_key) and row.turn_key == turn_key
                before = ((row.prior_turns, row.prior_trace_id, row.prior_pending) if retried
                          else (row.turns, row.last_trace_id, row.pending))
                conn.execute(sa.update(CONVERSATIONS).where(*mine).values(
                    updated_at=now, expires_at=now + self.ttl, turns=before[0] + 1, last_trace_id=trace_id,
                    pending=pending.to_json(), turn_key=turn_key, prior_turns=before[0], prior_trace_id=before[1],
                    prior_pending=before[2]))
            if self._before_commit is not None:
                self._before_commit()
            # The Ask's first commit of its own: past the caller's deadline it rolls back and the
            # Ask fails DEADLINE_EXCEEDED (its key given back, its failure recorded) (issue 17 §4).
            check_deadline("conversation turn")

    def purge_expired(self, now: dt.datetime | None = None) -> int:
        now = now or dt.datetime.now(dt.UTC)
        with self.engine.begin() as conn:
            return conn.execute(sa.delete(CONVERSATIONS).where(CONVERSATIONS.c.expires_at <= now)).rowcount


def _aware(value: dt.datetime) -> dt.datetime:
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
