"""The live slot part: open appointments from scheduler-gateway, never from a document. Only slots
the gateway verified (read at as_of from the system of record, status FREE) are shown; a request
still missing an entity gets its one clarification question instead."""

from __future__ import annotations

import dataclasses
import datetime as dt
from zoneinfo import ZoneInfo

from citetrace.kit.errors import DeadlineExceeded, DomainError, InvalidArgument, Unavailable

from services.orchestrator.core.model import NextAction, Outcome, PartResult, Slot, SlotQuery, SlotStatus
from services.orchestrator.core.parts import PartContext, unavailable
from services.orchestrator.core.ports import Scheduler
from services.orchestrator.core.routing import PartPlan, clarification_text
from services.orchestrator.core.wording import Wording

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclasses.dataclass(frozen=True)
class SlotSettings:
    page_size: int = 6


class SlotPart:
    def __init__(self, scheduler: Scheduler, settings: SlotSettings | None = None) -> None:
        self.scheduler = scheduler
        self.settings = settings or SlotSettings()

    def answer(self, plan: PartPlan, ctx: PartContext, out: PartResult) -> PartResult:
        wording, route = ctx.wording, ctx.route
        if plan.clarification is not None:
            out.clarification_question = clarification_text(plan.clarification, wording)
            return out.settle(Outcome.NEEDS_CLARIFICATION, out.clarification_question, NextAction.ANSWER_CLARIFICATION)
        location_id = route.location.location_id if route.location else ctx.request.location_id
        query = SlotQuery(route.specialty, location_id, route.appointment_type, self.settings.page_size,
                          ctx.request.as_of, plan.range_start, plan.range_end)
        try:
            reply = ctx.calls("scheduler_gateway", "scheduler.find_slots", self.scheduler.find_slots, query)
        except (Unavailable, DeadlineExceeded) as err:
            return unavailable(out, ctx, "scheduler_gateway", err)
        except InvalidArgument as err:
            # e.g. UNKNOWN_SPECIALTY: the scheduler says this cannot be booked here.
            out.error = f"scheduler_gateway: {err.reason}"
            of_type = wording.say("slots", "of_that_type") if route.appointment_type else ""
            text = wording.say("slots", "not_bookable", specialty=wording.specialty(route.specialty), of_type=of_type)
            return out.settle(Outcome.ABSTAINED_NO_EVIDENCE, text, NextAction.CONTACT_SCHEDULING_DESK)
        except DomainError as err:
            return unavailable(out, ctx, "scheduler_gateway", err)
        verified = reply.as_of is not None
        slots = tuple(s for s in reply.slots if verified and s.status == SlotStatus.FREE)
        out.slots, out.slots_as_of = slots, reply.as_of
        return self._say(out, plan, ctx, slots)

    def _say(self, out: PartResult, plan: PartPlan, ctx: PartContext, slots: tuple[Slot, ...]) -> PartResult:
        wording, route, zone = ctx.wording, ctx.route, ctx.route.zone
        place = route.location.display_name if route.location else wording.say("slots", "your_clinic")
        when = ""
        single_day = False
        if plan.range_start is not None:
            local_start = plan.range_start.astimezone(zone).date()
            local_end = (plan.range_end - dt.timedelta(seconds=1)).astimezone(zone).date()
            single_day = local_start == local_end
            when = wording.say("slots", "on_day", date=wording.date("day", local_start)) if single_day else \
                wording.say("slots", "between_days", start=wording.date("day_in_range_start", local_start),
                            end=wording.date("day_in_range_end", local_end))
        checked = wording.date("checked_at", out.slots_as_of.astimezone(zone)) if out.slots_as_of is not None \
            else wording.say("slots", "checked_unknown")
        values = {"specialty": wording.specialty(route.specialty), "place": place, "when": when, "checked": checked}
        if slots:
            times = wording.listing([slot_time(s, zone, wording, with_day=not single_day) for s in slots])
            return out.settle(Outcome.ANSWERED, wording.say("slots", "open", times=times, **values),
                              NextAction.CONFIRM_SLOT)
        return out.settle(Outcome.ANSWERED, wording.say("slots", "none", **values), NextAction.CONTACT_SCHEDULING_DESK)


def slot_time(slot: Slot, fallback: dt.tzinfo, wording: Wording, with_day: bool = True) -> str:
    zone = ZoneInfo(slot.time_zone) if slot.time_zone else fallback
    start = (slot.start_time or EPOCH).astimezone(zone)
    who = wording.say("slots", "with_provider", provider=slot.provider_name) if slot.provider_name else ""
    return wording.date("slot_with_day" if with_day else "slot_time", start) + who
