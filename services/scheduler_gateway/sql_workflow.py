"""Appointments and proposals over the SQL system of record (the same database as the slots, so a
confirmation changes slots, appointments and the proposal in one transaction).

Every query names the tenant and applies the caller's scope (patient, locations) in its WHERE
clause: a row outside the scope is never read, so it cannot leak and looks exactly like a row that
does not exist. Writes that change state also write their action event to the outbox in the same
transaction (sql_tx.append_event).
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from typing import Any

from citetrace.kit.errors import FailedPrecondition
from citetrace.kit.sql import due_in_tenant_order
from sqlalchemy import Connection, and_, exists, false, func, or_, select, true, update

from services.scheduler_gateway import codec
from services.scheduler_gateway import schema as s
from services.scheduler_gateway.domain import (
    APPOINTMENT_BOOKED,
    APPOINTMENT_CANCELLED,
    APPOINTMENT_CHANGED,
    BOOK,
    BUSY,
    CANCEL,
    CONFIRMED,
    EVENT_CONFIRMED,
    EVENT_EXPIRED,
    EVENT_FAILED,
    EVENT_PROPOSED,
    EVENT_REJECTED,
    EXPIRED,
    FAILED,
    FREE,
    PENDING,
    PROPOSAL_CONFIRMED,
    REJECTED,
    RESCHEDULE,
    SLOT_NO_LONGER_AVAILABLE,
    AppointmentQuery,
    AppointmentRecord,
    Decision,
    Idempotency,
    NewProposal,
    PendingEvent,
    ProposalOutcome,
    ProposalQuery,
    ProposalRecord,
    SlotRecord,
)
from services.scheduler_gateway.sql_source import SqlSlotSource, slot_from_row, unavailable_on_db_error
from services.scheduler_gateway.sql_tx import (
    Completed,
    Unremembered,
    append_event,
    idempotent_write,
    writer_turn,
)


class ProposalExpired(Exception):
    """Raised by the core after the expiry found by a confirmation or rejection was committed."""


class SqlWorkflowStore:
    def __init__(self, source: SqlSlotSource) -> None:
        self.source = source
        self._appointment_stmt = None

    @property
    def engine(self):
        return self.source.engine

    # -- appointments ----------------------------------------------------------------------------

    def _appointment_select(self):
        if self._appointment_stmt is None:
            ap = s.appointments
            self._appointment_stmt = (
                self.source.slot_select().add_columns(
                    ap.c.appointment_id, ap.c.patient_ref, ap.c.status.label("appointment_status"),
                    ap.c.version.label("appointment_version"), ap.c.updated_at, ap.c.created_at,
                )
                .join(ap, and_(ap.c.tenant_id == s.slots.c.tenant_id, ap.c.slot_id == s.slots.c.slot_id))
            )
        return self._appointment_stmt

    @staticmethod
    def _scoped(stmt, tenant_id: str, location_ids: frozenset[str] | None, patient_ref: str | None):
        stmt = stmt.where(s.appointments.c.tenant_id == tenant_id)
        if location_ids is not None:
            stmt = stmt.where(s.schedules.c.location_id.in_(sorted(location_ids)) if location_ids else false())
        if patient_ref is not None:
            stmt = stmt.where(s.appointments.c.patient_ref == patient_ref)
        return stmt

    @unavailable_on_db_error
    def list_appointments(self, query: AppointmentQuery) -> list[AppointmentRecord]:
        ap, sl = s.appointments, s.slots
        stmt = self._scoped(self._appointment_select(), query.tenant_id, query.location_ids, query.patient_ref)
        stmt = stmt.where(ap.c.status.in_(query.statuses))
        if query.specialty:
            stmt = stmt.where(sl.c.specialty_id == query.specialty)
        if query.starts_after is not None:
            stmt = stmt.where(sl.c.start_time > query.starts_after)
        if query.cursor is not None:
            start, appointment_id = query.cursor
            stmt = stmt.where(or_(sl.c.start_time > start,
                                  and_(sl.c.start_time == start, ap.c.appointment_id > appointment_id)))
        stmt = stmt.order_by(sl.c.start_time, ap.c.appointment_id).limit(query.limit)
        with self.engine.connect() as conn:
            return [_appointment(row) for row in conn.execute(stmt)]

    @unavailable_on_db_error
    def get_appointment(self, tenant_id: str, appointment_id: str, location_ids: frozenset[str] | None,
                        patient_ref: str | None) -> AppointmentRecord | None:
        stmt = self._scoped(self._appointment_select(), tenant_id, location_ids, patient_ref)
        with self.engine.connect() as conn:
            row = conn.execute(stmt.where(s.appointments.c.appointment_id == appointment_id)).first()
        return None if row is None else _appointment(row)

    @unavailable_on_db_error
    def get_slots(self, tenant_id: str, location_ids: frozenset[str] | None,
                  slot_ids: Sequence[str]) -> dict[str, SlotRecord]:
        """The named slots of the tenant within the locations, live."""
        if location_ids is not None and not location_ids:
            return {}
        stmt = self.source.slot_select().where(s.slots.c.tenant_id == tenant_id,
                                               s.slots.c.slot_id.in_(sorted(set(slot_ids))))
        if location_ids is not None:
            stmt = stmt.where(s.schedules.c.location_id.in_(sorted(location_ids)))
        with self.engine.connect() as conn:
            return {row.slot_id: slot_from_row(row) for row in conn.execute(stmt)}

    # -- proposals: reads ------------------------------------------------------------------------

    @staticmethod
    def _proposal_scope(stmt, tenant_id: str, location_ids: frozenset[str] | None, patient_ref: str | None):
        pr, pl = s.proposals, s.proposal_locations
        stmt = stmt.where(pr.c.tenant_id == tenant_id)
        if patient_ref is not None:
            stmt = stmt.where(pr.c.patient_ref == patient_ref)
        if location_ids is not None:
            # Every location the proposal touches must be within the caller's.
            outside = select(pl.c.location_id).where(
                pl.c.tenant_id == pr.c.tenant_id, pl.c.proposal_id == pr.c.proposal_id,
                pl.c.location_id.notin_(sorted(location_ids)) if location_ids else true(),
            )
            stmt = stmt.where(~exists(outside))
        return stmt

    @unavailable_on_db_error
    def get_proposal(self, tenant_id: str, proposal_id: str, location_ids: frozenset[str] | None,
                     patient_ref: str | None) -> ProposalRecord | None:
        stmt = self._proposal_scope(select(s.proposals), tenant_id, location_ids, patient_ref)
        with self.engine.connect() as conn:
            row = conn.execute(stmt.where(s.proposals.c.proposal_id == proposal_id)).first()
        return None if row is None else _proposal(row)

    @unavailable_on_db_error
    def list_proposals(self, query: ProposalQuery) -> list[ProposalRecord]:
        pr = s.proposals
        stmt = self._proposal_scope(select(pr), query.tenant_id, query.location_ids, query.patient_ref)
        stmt = stmt.where(pr.c.status.in_(query.statuses))
        if query.review_required_only:
            stmt = stmt.where(pr.c.review_required.is_(True))
        if query.before is not None:
            created, proposal_id = query.before
            stmt = stmt.where(or_(pr.c.created_at < created,
                                  and_(pr.c.created_at == created, pr.c.proposal_id < proposal_id)))
        stmt = stmt.order_by(pr.c.created_at.desc(), pr.c.proposal_id.desc()).limit(query.limit)
        with self.engine.connect() as conn:
            return [_proposal(row) for row in conn.execute(stmt)]

    # -- proposals: writes -----------------------------------------------------------------------

    @unavailable_on_db_error
    def create_proposal(self, new: NewProposal, idem: Idempotency | None) -> ProposalRecord:
        record = ProposalRecord(**{f: getattr(new, f) for f in NewProposal.__dataclass_fields__}, status=PENDING)

        def work(conn: Connection) -> Completed[ProposalRecord]:
            conn.execute(s.proposals.insert().values(
                tenant_id=new.tenant_id, proposal_id=new.proposal_id, kind=new.kind, status=PENDING,
                patient_ref=new.patient_ref,
                appointment_id=None if new.appointment is None else new.appointment.appointment_id,
                appointment_version=None if new.appointment is None else new.appointment.version,
                review_required=new.review_required, review_reason=new.review_reason, created_at=new.created_at,
                expires_at=new.expires_at, created_by_ref=new.created_by_ref, ask_trace_id=new.ask_trace_id,
                consequence_rules_version=new.consequence_rules_version, detail=codec.proposal_detail(new),
                version=1,
            ))
            if new.location_ids:
                conn.execute(s.proposal_locations.insert(), [
                    {"tenant_id": new.tenant_id, "proposal_id": new.proposal_id, "location_id": loc}
                    for loc in sorted(new.location_ids)])
            _event(conn, EVENT_PROPOSED, record, new.created_by_ref, new.created_at)
            return Completed(record, codec.proposal_to_json(record))

        return idempotent_write(self.engine, new.tenant_id, idem, new.created_at, work, codec.proposal_from_json,
                                self.source.before_commit)

    def _locked_proposal(self, conn: Connection, tenant_id: str, proposal_id: str) -> ProposalRecord:
        row = conn.execute(
            select(s.proposals).where(s.proposals.c.tenant_id == tenant_id, s.proposals.c.proposal_id == proposal_id)
            .with_for_update()
        ).first()
        if row is None:  # the core read it in scope a moment ago: only a reload of the tenant removes it
            raise FailedPrecondition("PROPOSAL_GONE", f"proposal {proposal_id} no longer exists")
        return _proposal(row)

    def _pending_or_expire(self, conn: Connection, proposal: ProposalRecord, decision: Decision) -> ProposalRecord | None:
        """The proposal if still pending; None when it has just been marked expired."""
        if proposal.status != PENDING:
            raise FailedPrecondition(
                f"PROPOSAL_{proposal.status.upper()}",
                f"proposal {proposal.proposal_id} is {proposal.status}"
                + (f" ({proposal.outcome_reason})" if proposal.outcome_reason else "") + ": it can no longer be decided",
                status=proposal.status)
        if decision.now >= proposal.expires_at:
            self._end(conn, proposal, EXPIRED, decision.now, "", outcome_reason="PROPOSAL_EXPIRED",
                      event=EVENT_EXPIRED)
            return None
        return proposal

    @unavailable_on_db_error
    def confirm_proposal(self, decision: Decision, idem: Idempotency | None) -> ProposalOutcome:
        def work(conn: Connection) -> Completed[ProposalOutcome] | Unremembered[ProposalOutcome | None]:
            proposal = self._pending_or_expire(
                conn, self._locked_proposal(conn, decision.tenant_id, decision.proposal_id), decision)
            if proposal is None:
                return Unremembered(None)
            outcome = self._execute(conn, proposal, decision)
            return Completed(outcome, codec.proposal_outcome_to_json(outcome))

        outcome = idempotent_write(self.engine, decision.tenant_id, idem, decision.now, work,
                                   codec.proposal_outcome_from_json, self.source.before_commit)
        if outcome is None:
            raise ProposalExpired(decision.proposal_id)
        return outcome

    @unavailable_on_db_error
    def reject_proposal(self, decision: Decision, idem: Idempotency | None) -> ProposalRecord:
        def work(conn: Connection) -> Completed[ProposalRecord] | Unremembered[ProposalRecord | None]:
            proposal = self._pending_or_expire(
                conn, self._locked_proposal(conn, decision.tenant_id, decision.proposal_id), decision)
            if proposal is None:
                return Unremembered(None)
            ended = self._end(conn, proposal, REJECTED, decision.now, decision.actor_ref, note=decision.note,
                              event=EVENT_REJECTED)
            return Completed(ended, codec.proposal_to_json(ended))

        record = idempotent_write(self.engine, decision.tenant_id, idem, decision.now, work, codec.proposal_from_json,
                                  self.source.before_commit)
        if record is None:
            raise ProposalExpired(decision.proposal_id)
        return record

    @unavailable_on_db_error
    def expire_due(self, now: dt.datetime, limit: int = 100) -> int:
        """Marks pending proposals past their expiry as expired (with their events); returns how many."""
        pr = s.proposals
        with writer_turn(self.engine), self.engine.connect().execution_options(**s.WRITE) as conn, conn.begin():
            stmt = (select(pr).where(pr.c.status == PENDING, pr.c.expires_at <= now)
                    .order_by(pr.c.expires_at).limit(limit))
            if conn.dialect.name == "postgresql":
                stmt = stmt.with_for_update(skip_locked=True)
            rows = conn.execute(stmt).all()
            for row in rows:
                self._end(conn, _proposal(row), EXPIRED, now, "", outcome_reason="PROPOSAL_EXPIRED",
                          event=EVENT_EXPIRED)
            return len(rows)

    # -- the action-event outbox (kit TableOutbox) -----------------------------------------------

    @unavailable_on_db_error
    def due(self, now: dt.datetime, limit: int = 100) -> list[PendingEvent]:
        # A tenant's events become chain links in the order they were written.
        with self.engine.connect() as conn:
            rows = conn.execute(due_in_tenant_order(s.action_events_outbox, now).limit(limit)).all()
        return [PendingEvent(int(r.id), r.tenant_id, r.event_id, r.payload, int(r.attempts)) for r in rows]

    @unavailable_on_db_error
    def mark_delivered(self, row_id: int, now: dt.datetime) -> None:
        ob = s.action_events_outbox
        with writer_turn(self.engine), self.engine.connect().execution_options(**s.WRITE) as conn, conn.begin():
            conn.execute(update(ob).where(ob.c.id == row_id).values(delivered_at=now))

    @unavailable_on_db_error
    def mark_failed(self, row_id: int, error: str, next_attempt_at: dt.datetime) -> None:
        ob = s.action_events_outbox
        with writer_turn(self.engine), self.engine.connect().execution_options(**s.WRITE) as conn, conn.begin():
            conn.execute(update(ob).where(ob.c.id == row_id).values(
                attempts=ob.c.attempts + 1, last_error=error[:2000], next_attempt_at=next_attempt_at))

    def pending_count(self) -> int:
        ob = s.action_events_outbox
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(ob).where(ob.c.delivered_at.is_(None))).scalar_one())

    # -- the change itself -------------------------------------------------------------------------

    def _execute(self, conn: Connection, proposal: ProposalRecord, decision: Decision) -> ProposalOutcome:
        """Executes a pending proposal or records why it cannot be: the appointment is checked
        first (locked, version compared), then the chosen slot claimed with a compare-and-set, so
        a failure has written nothing yet."""
        tenant = proposal.tenant_id
        before: AppointmentRecord | None = None
        if proposal.kind in (RESCHEDULE, CANCEL):
            before = self._locked_appointment(conn, tenant, proposal.appointment.appointment_id)
            if before is None or before.status != APPOINTMENT_BOOKED or before.version != proposal.appointment.version:
                ended = self._end(conn, proposal, FAILED, decision.now, decision.actor_ref,
                                  outcome_reason="APPOINTMENT_CHANGED", event=EVENT_FAILED, note=decision.note,
                                  extra={"appointment_now": None if before is None else codec.appointment_to_json(before)})
                return ProposalOutcome(APPOINTMENT_CHANGED, ended, before)
        chosen: SlotRecord | None = None
        if proposal.kind in (BOOK, RESCHEDULE):
            option = proposal.option(decision.slot_id)
            won = conn.execute(
                update(s.slots)
                .where(s.slots.c.tenant_id == tenant, s.slots.c.slot_id == option.slot_id,
                       s.slots.c.version == option.version, s.slots.c.status == FREE,
                       s.slots.c.start_time > decision.now)
                .values(status=BUSY, version=s.slots.c.version + 1, updated_at=decision.now)
            ).rowcount == 1
            chosen = self._slot(conn, tenant, option.slot_id)
            if not won:
                return self._slot_lost(conn, proposal, decision, chosen, before)
        appointment_id = self._apply(conn, proposal, decision, before, chosen)
        after = self._appointment_now(conn, tenant, appointment_id)
        ended = self._end(conn, proposal, PROPOSAL_CONFIRMED, decision.now, decision.actor_ref,
                          note=decision.note, event=EVENT_CONFIRMED, chosen_slot_id=decision.slot_id,
                          result_appointment_id=appointment_id,
                          extra={"appointment_before": None if before is None else codec.appointment_to_json(before),
                                 "appointment_after": codec.appointment_to_json(after),
                                 "slot": None if chosen is None else codec.slot_to_json(chosen)})
        return ProposalOutcome(CONFIRMED, ended, after, chosen)

    def _slot_lost(self, conn: Connection, proposal: ProposalRecord, decision: Decision, slot: SlotRecord | None,
                   before: AppointmentRecord | None) -> ProposalOutcome:
        """The chosen slot is gone. While other offered slots are still free at their offered
        version the proposal stays pending (the patient may choose another); else it failed."""
        others = [o for o in proposal.options if o.slot_id != decision.slot_id]
        live = self._free_at_version(conn, proposal.tenant_id, others, decision.now)
        if live:
            return ProposalOutcome(SLOT_NO_LONGER_AVAILABLE, proposal, before, slot)
        ended = self._end(conn, proposal, FAILED, decision.now, decision.actor_ref,
                          outcome_reason="SLOT_NO_LONGER_AVAILABLE", event=EVENT_FAILED, note=decision.note,
                          chosen_slot_id=decision.slot_id,
                          extra={"slot": None if slot is None else codec.slot_to_json(slot)})
        return ProposalOutcome(SLOT_NO_LONGER_AVAILABLE, ended, before, slot)

    def _free_at_version(self, conn: Connection, tenant_id: str, options: Sequence[SlotRecord],
                         now: dt.datetime) -> list[str]:
        if not options:
            return []
        sl = s.slots
        wanted = or_(*[and_(sl.c.slot_id == o.slot_id, sl.c.version == o.version) for o in options])
        return list(conn.execute(select(sl.c.slot_id).where(
            sl.c.tenant_id == tenant_id, wanted, sl.c.status == FREE, sl.c.start_time > now)).scalars())

    def _apply(self, conn: Connection, proposal: ProposalRecord, decision: Decision,
               before: AppointmentRecord | None, chosen: SlotRecord | None) -> str:
        """The writes of a confirmed change; returns the appointment it booked or changed."""
        ap, tenant, now = s.appointments, proposal.tenant_id, decision.now
        if proposal.kind == BOOK:
            appointment_id = f"appt-{uuid.uuid4().hex}"
            conn.execute(ap.insert().values(
                tenant_id=tenant, appointment_id=appointment_id, slot_id=chosen.slot_id,
                patient_ref=proposal.patient_ref, status=APPOINTMENT_BOOKED, created_at=now, version=1, updated_at=now))
            return appointment_id
        keyed = and_(ap.c.tenant_id == tenant, ap.c.appointment_id == before.appointment_id,
                     ap.c.version == before.version)
        if proposal.kind == RESCHEDULE:
            conn.execute(update(ap).where(keyed).values(slot_id=chosen.slot_id, version=ap.c.version + 1,
                                                        updated_at=now))
        else:
            conn.execute(update(ap).where(keyed).values(status=APPOINTMENT_CANCELLED, version=ap.c.version + 1,
                                                        updated_at=now))
        # The old slot is free again (only if nothing else changed it meanwhile).
        conn.execute(update(s.slots).where(
            s.slots.c.tenant_id == tenant, s.slots.c.slot_id == before.slot.slot_id, s.slots.c.status == BUSY,
        ).values(status=FREE, version=s.slots.c.version + 1, updated_at=now))
        return before.appointment_id

    def _end(self, conn: Connection, proposal: ProposalRecord, status: str, now: dt.datetime, actor_ref: str, *,
             event: str, outcome_reason: str = "", note: str = "", chosen_slot_id: str = "",
             result_appointment_id: str = "", extra: dict[str, Any] | None = None) -> ProposalRecord:
        pr = s.proposals
        values = {"status": status, "decided_at": now, "decided_by_ref": actor_ref, "outcome_reason": outcome_reason,
                  "decision_note": note, "chosen_slot_id": chosen_slot_id,
                  "result_appointment_id": result_appointment_id, "version": proposal.version + 1}
        conn.execute(update(pr).where(pr.c.tenant_id == proposal.tenant_id, pr.c.proposal_id == proposal.proposal_id,
                                      pr.c.version == proposal.version).values(**values))
        ended = ProposalRecord(**{**{f: getattr(proposal, f) for f in ProposalRecord.__dataclass_fields__}, **values})
        _event(conn, event, ended, actor_ref, now, extra)
        return ended

    # -- small reads inside the transaction ------------------------------------------------------

    def _locked_appointment(self, conn: Connection, tenant_id: str, appointment_id: str) -> AppointmentRecord | None:
        ap = s.appointments
        locked = conn.execute(select(ap.c.appointment_id).where(
            ap.c.tenant_id == tenant_id, ap.c.appointment_id == appointment_id).with_for_update()).first()
        return None if locked is None else self._appointment_now(conn, tenant_id, appointment_id)

    def _appointment_now(self, conn: Connection, tenant_id: str, appointment_id: str) -> AppointmentRecord | None:
        row = conn.execute(self._appointment_select().where(
            s.appointments.c.tenant_id == tenant_id, s.appointments.c.appointment_id == appointment_id)).first()
        return None if row is None else _appointment(row)

    def _slot(self, conn: Connection, tenant_id: str, slot_id: str) -> SlotRecord | None:
        row = conn.execute(self.source.slot_select().where(
            s.slots.c.tenant_id == tenant_id, s.slots.c.slot_id == slot_id)).first()
        return None if row is None else slot_from_row(row)


def _event(conn: Connection, kind: str, proposal: ProposalRecord, actor_ref: str, now: dt.datetime,
           extra: dict[str, Any] | None = None) -> None:
    append_event(conn, proposal.tenant_id, {
        "kind": kind, "proposal_id": proposal.proposal_id, "ask_trace_id": proposal.ask_trace_id,
        "actor_ref": actor_ref, "occurred_at": codec.time_to_json(now), "proposal": codec.proposal_to_json(proposal),
        **(extra or {}),
    }, now)


def _appointment(row) -> AppointmentRecord:
    return AppointmentRecord(
        appointment_id=row.appointment_id, patient_ref=row.patient_ref, status=row.appointment_status,
        version=int(row.appointment_version), slot=slot_from_row(row),
        updated_at=row.updated_at or row.created_at,
    )


def _proposal(row) -> ProposalRecord:
    detail = row.detail
    return ProposalRecord(
        tenant_id=row.tenant_id, proposal_id=row.proposal_id, kind=row.kind, status=row.status,
        patient_ref=row.patient_ref, appointment=codec.appointment_from_json(detail.get("appointment")),
        options=tuple(codec.slot_from_json(o) for o in detail.get("options", ())),
        consequences=tuple(codec.consequence_from_json(c) for c in detail.get("consequences", ())),
        review_required=bool(row.review_required), review_reason=row.review_reason, created_at=row.created_at,
        expires_at=row.expires_at, created_by_ref=row.created_by_ref, ask_trace_id=row.ask_trace_id,
        consequence_rules_version=row.consequence_rules_version,
        policy_version_ids=tuple(detail.get("policy_version_ids", ())),
        location_ids=frozenset(detail.get("location_ids", ())), version=int(row.version), decided_at=row.decided_at,
        decided_by_ref=row.decided_by_ref, chosen_slot_id=row.chosen_slot_id,
        result_appointment_id=row.result_appointment_id, outcome_reason=row.outcome_reason,
        decision_note=row.decision_note,
    )
