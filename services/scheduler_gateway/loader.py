"""Loads a YAML or JSON description of tenants, clinics, locations, providers, schedules and slots
into the scheduling database, in one transaction. No grpc.

The format (`format: citetrace.slots/v1`) is documented in the README (scheduler-gateway) and by
deploy/samples/slots.yaml. Each tenant named in the file is replaced entirely (its catalog, slots
and appointments); tenants not named are left alone. Slots are given explicitly or generated from
weekly rules relative to "today" in each location's time zone, so a demo always has future slots.

Every error names the file and the path of the bad key, e.g.
`slots.yaml: tenants[0].locations[1].time_zone: unknown IANA time zone 'Europe/Olso'`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from citetrace.kit.validation import pattern
from sqlalchemy import Engine

from services.scheduler_gateway import schema as s
from services.scheduler_gateway.domain import (
    APPOINTMENT_BOOKED,
    APPOINTMENT_STATUSES,
    BUSY,
    BUSY_TENTATIVE,
    BUSY_UNAVAILABLE,
    ENTERED_IN_ERROR,
    FREE,
    SLOT_STATUSES,
    UTC,
    local_to_utc,
    zone,
)

FORMAT = "citetrace.slots/v1"
_ID = pattern("key")  # field_rules.yaml; matched whole
_HHMM = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
DAYS = {"mon": 0, "tue": 1, "wed": 2, "thu": 3, "fri": 4, "sat": 5, "sun": 6}
MAX_GENERATED_DAYS = 366


class LoadError(Exception):
    def __init__(self, errors: list[str]) -> None:
        super().__init__("\n".join(errors))
        self.errors = errors


@dataclasses.dataclass
class Plan:
    """Rows to write, per table, and the tenants they replace."""

    tenant_ids: list[str]
    rows: dict[str, list[dict[str, Any]]]

    def count(self, table: str) -> int:
        return len(self.rows.get(table, []))

    def slot_statuses(self) -> dict[str, int]:
        return dict(Counter(row["status"] for row in self.rows.get("slots", [])))


def read_document(path: Path) -> Any:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise LoadError([f"{path}: cannot read: {exc.strerror or exc}"]) from exc
    try:
        if Path(path).suffix.lower() == ".json":
            return json.loads(text)
        return yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise LoadError([f"{path}: not valid {'JSON' if Path(path).suffix.lower() == '.json' else 'YAML'}: {exc}"]) from exc


def plan_file(path: Path, today: dt.date | None = None,
              clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(UTC)) -> Plan:
    return build_plan(read_document(path), str(path), today=today, clock=clock)


def load_file(path: Path, database_url: str, today: dt.date | None = None) -> Plan:
    plan = plan_file(path, today=today)
    engine = s.make_engine(database_url)
    try:
        write_plan(engine, plan)
    finally:
        engine.dispose()
    return plan


def write_plan(engine: Engine, plan: Plan) -> None:
    """Replaces the plan's tenants in one transaction: all of it is written, or nothing."""
    s.ensure_schema(engine)
    with engine.connect().execution_options(**s.WRITE) as conn, conn.begin():
        for table in s.TENANT_TABLES:
            conn.execute(table.delete().where(table.c.tenant_id.in_(plan.tenant_ids)))
        for table in reversed(s.TENANT_TABLES):
            rows = plan.rows.get(table.name)
            if rows:
                conn.execute(table.insert(), rows)


class _Checker:
    def __init__(self, source: str) -> None:
        self.source = source
        self.errors: list[str] = []

    def error(self, path: str, message: str) -> None:
        self.errors.append(f"{self.source}: {path}: {message}" if path else f"{self.source}: {message}")

    def mapping(self, value: Any, path: str, required: set[str], optional: set[str]) -> dict | None:
        if not isinstance(value, dict):
            self.error(path, f"expected a mapping, got {_kind(value)}")
            return None
        for key in sorted(set(value) - required - optional, key=str):
            self.error(f"{path}.{key}" if path else str(key),
                       f"unknown key (allowed: {', '.join(sorted(required | optional))})")
        for key in sorted(required - set(value)):
            self.error(f"{path}.{key}" if path else key, "required key is missing")
        return value

    def items(self, value: Any, path: str, required: bool = False) -> list:
        if value is None:
            if required:
                self.error(path, "required list is missing")
            return []
        if not isinstance(value, list):
            self.error(path, f"expected a list, got {_kind(value)}")
            return []
        return value

    def text(self, value: Any, path: str) -> str | None:
        if not isinstance(value, str) or not value.strip():
            self.error(path, f"expected a non-empty string, got {_kind(value)}")
            return None
        return value.strip()

    def ident(self, value: Any, path: str) -> str | None:
        text = self.text(value, path)
        if text is not None and not _ID.fullmatch(text):
            self.error(path, f"{text!r} is not a valid ID (letters, digits, _ . : -; at most 128)")
            return None
        return text

    def integer(self, value: Any, path: str, low: int, high: int) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int):
            self.error(path, f"expected an integer, got {_kind(value)}")
            return None
        if not low <= value <= high:
            self.error(path, f"{value} is out of range {low}..{high}")
            return None
        return value

    def hhmm(self, value: Any, path: str) -> dt.time | None:
        if isinstance(value, int) and not isinstance(value, bool):
            self.error(path, f"got the number {value}: quote times in YAML ('10:30'), or YAML 1.1 "
                             "reads them as base-60 numbers")
            return None
        match = _HHMM.match(value) if isinstance(value, str) else None
        if match is None:
            self.error(path, f"expected a time HH:MM (24-hour), got {value!r}")
            return None
        return dt.time(int(match.group(1)), int(match.group(2)))

    def time_zone(self, value: Any, path: str):
        text = self.text(value, path)
        if text is None:
            return None
        try:
            return zone(text)
        except ValueError as exc:
            self.error(path, str(exc))
            return None

    def ref(self, value: Any, path: str, known: dict | set, what: str) -> str | None:
        ident = self.ident(value, path)
        if ident is not None and ident not in known:
            self.error(path, f"unknown {what} {ident!r} (known: {', '.join(sorted(known)) or 'none'})")
            return None
        return ident


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number"}.get(type(value), type(value).__name__)


def build_plan(document: Any, source: str, today: dt.date | None = None,
               clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(UTC)) -> Plan:
    """Validates the whole document (collecting every error) and returns the rows to write."""
    check = _Checker(source)
    rows: dict[str, list[dict[str, Any]]] = {t.name: [] for t in s.TENANT_TABLES}
    tenant_ids: list[str] = []
    now = clock()
    top = check.mapping(document, "", {"tenants"}, {"format", "description"})
    if top is None:
        raise LoadError(check.errors)
    if "format" in top and top["format"] != FORMAT:
        check.error("format", f"expected {FORMAT!r}, got {top['format']!r}")
    for ti, tenant in enumerate(check.items(top.get("tenants"), "tenants", required=True)):
        path = f"tenants[{ti}]"
        tenant_id = _tenant(check, tenant, path, rows, now, today)
        if tenant_id is not None:
            if tenant_id in tenant_ids:
                check.error(f"{path}.id", f"duplicate tenant {tenant_id!r}")
            tenant_ids.append(tenant_id)
    if not tenant_ids and not check.errors:
        check.error("tenants", "no tenants to load")
    if check.errors:
        raise LoadError(check.errors)
    return Plan(tenant_ids, rows)


def _named_list(check: _Checker, values: Any, path: str) -> dict[str, str]:
    """A list of IDs or of {id, name} mappings -> {id: name}."""
    out: dict[str, str] = {}
    for i, item in enumerate(check.items(values, path)):
        item_path = f"{path}[{i}]"
        if isinstance(item, str):
            ident, name = check.ident(item, item_path), item.replace("_", " ").capitalize()
        else:
            entry = check.mapping(item, item_path, {"id"}, {"name"})
            if entry is None:
                continue
            ident = check.ident(entry.get("id"), f"{item_path}.id")
            name = check.text(entry.get("name"), f"{item_path}.name") if "name" in entry else str(ident)
        if ident is None:
            continue
        if ident != ident.lower():
            check.error(item_path, f"{ident!r}: specialty and appointment type IDs are lowercase")
            continue
        if ident in out:
            check.error(item_path, f"duplicate {ident!r}")
        out[ident] = name or ident
    return out


def _unique(check: _Checker, seen: dict, ident: str | None, path: str, what: str) -> bool:
    if ident is None:
        return False
    if ident in seen:
        check.error(path, f"duplicate {what} {ident!r}")
        return False
    return True


def _tenant(check: _Checker, tenant: Any, path: str, rows: dict, now: dt.datetime,
            today: dt.date | None) -> str | None:
    entry = check.mapping(
        tenant, path, {"id", "name", "time_zone", "specialties", "appointment_types", "locations"},
        {"clinics", "providers", "schedules", "slots", "appointments", "description"},
    )
    if entry is None:
        return None
    tenant_id = check.ident(entry.get("id"), f"{path}.id")
    name = check.text(entry.get("name"), f"{path}.name")
    tenant_zone = check.time_zone(entry.get("time_zone"), f"{path}.time_zone")
    specialties = _named_list(check, entry.get("specialties"), f"{path}.specialties")
    types = _named_list(check, entry.get("appointment_types"), f"{path}.appointment_types")
    if tenant_id is None:
        return None
    t = {"tenant_id": tenant_id}
    rows["tenants"].append({**t, "name": name or tenant_id, "time_zone": str(tenant_zone or "UTC")})
    rows["specialties"] += [{**t, "specialty_id": k, "name": v} for k, v in specialties.items()]
    rows["appointment_types"] += [{**t, "appointment_type_id": k, "name": v} for k, v in types.items()]

    clinics: dict[str, str] = {}
    for i, clinic in enumerate(check.items(entry.get("clinics"), f"{path}.clinics")):
        cpath = f"{path}.clinics[{i}]"
        c = check.mapping(clinic, cpath, {"id", "name"}, set())
        if c is None:
            continue
        cid = check.ident(c.get("id"), f"{cpath}.id")
        if _unique(check, clinics, cid, f"{cpath}.id", "clinic"):
            clinics[cid] = check.text(c.get("name"), f"{cpath}.name") or cid

    # location_id -> (zone, specialties, appointment types)
    locations: dict[str, tuple[Any, set[str], set[str]]] = {}
    implicit_clinics: dict[str, str] = {}
    for i, location in enumerate(check.items(entry.get("locations"), f"{path}.locations", required=True)):
        lpath = f"{path}.locations[{i}]"
        loc = check.mapping(location, lpath, {"id", "name", "specialties"},
                            {"clinic", "time_zone", "aliases", "appointment_types"})
        if loc is None:
            continue
        lid = check.ident(loc.get("id"), f"{lpath}.id")
        lname = check.text(loc.get("name"), f"{lpath}.name")
        lzone = check.time_zone(loc["time_zone"], f"{lpath}.time_zone") if "time_zone" in loc else tenant_zone
        clinic_id = check.ref(loc["clinic"], f"{lpath}.clinic", clinics, "clinic") if "clinic" in loc else lid
        aliases = [check.text(a, f"{lpath}.aliases[{j}]")
                   for j, a in enumerate(check.items(loc.get("aliases"), f"{lpath}.aliases"))]
        lspecs = {check.ref(v, f"{lpath}.specialties[{j}]", specialties, "specialty")
                  for j, v in enumerate(check.items(loc.get("specialties"), f"{lpath}.specialties"))}
        ltypes = {check.ref(v, f"{lpath}.appointment_types[{j}]", types, "appointment type")
                  for j, v in enumerate(check.items(loc.get("appointment_types"), f"{lpath}.appointment_types"))}
        lspecs.discard(None)
        ltypes.discard(None)
        if not _unique(check, locations, lid, f"{lpath}.id", "location") or clinic_id is None:
            continue
        if "clinic" not in loc:
            implicit_clinics[lid] = lname or lid
        locations[lid] = (lzone, lspecs, ltypes)
        rows["locations"].append({**t, "location_id": lid, "clinic_id": clinic_id, "name": lname or lid,
                                  "time_zone": str(lzone or "UTC"), "aliases": [a for a in aliases if a]})
        rows["location_specialties"] += [{**t, "location_id": lid, "specialty_id": v} for v in sorted(lspecs)]
        rows["location_appointment_types"] += [
            {**t, "location_id": lid, "appointment_type_id": v} for v in sorted(ltypes)]
    for cid in implicit_clinics:
        if cid in clinics:
            check.error(f"{path}.clinics", f"clinic {cid!r} clashes with the implicit clinic of location {cid!r}")
    rows["clinics"] += [{**t, "clinic_id": k, "name": v} for k, v in {**clinics, **implicit_clinics}.items()]

    providers: dict[str, str] = {}
    for i, provider in enumerate(check.items(entry.get("providers"), f"{path}.providers")):
        ppath = f"{path}.providers[{i}]"
        p = check.mapping(provider, ppath, {"id", "name", "specialty"}, set())
        if p is None:
            continue
        pid = check.ident(p.get("id"), f"{ppath}.id")
        pspec = check.ref(p.get("specialty"), f"{ppath}.specialty", specialties, "specialty")
        pname = check.text(p.get("name"), f"{ppath}.name")
        if _unique(check, providers, pid, f"{ppath}.id", "provider") and pspec:
            providers[pid] = pspec
            rows["providers"].append({**t, "provider_id": pid, "name": pname or pid, "specialty_id": pspec})

    slot_ids: set[str] = set()
    # schedule_id -> (location zone, specialty, default type, location types)
    schedules: dict[str, tuple[Any, str, str, set[str]]] = {}
    for i, schedule in enumerate(check.items(entry.get("schedules"), f"{path}.schedules")):
        spath = f"{path}.schedules[{i}]"
        sch = check.mapping(schedule, spath, {"id", "location", "appointment_type"},
                            {"provider", "specialty", "weekly", "from_day", "days_ahead", "status_pattern"})
        if sch is None:
            continue
        sid = check.ident(sch.get("id"), f"{spath}.id")
        lid = check.ref(sch.get("location"), f"{spath}.location", locations, "location")
        pid = check.ref(sch["provider"], f"{spath}.provider", providers, "provider") if "provider" in sch else None
        if "specialty" in sch:
            spec = check.ref(sch["specialty"], f"{spath}.specialty", specialties, "specialty")
        elif pid is not None:
            spec = providers[pid]
        else:
            spec = None
            if "provider" not in sch:
                check.error(f"{spath}.specialty", "required when the schedule has no provider")
        atype = check.ref(sch.get("appointment_type"), f"{spath}.appointment_type", types, "appointment type")
        if not _unique(check, schedules, sid, f"{spath}.id", "schedule") or None in (lid, spec, atype):
            continue
        lzone, lspecs, ltypes = locations[lid]
        if spec not in lspecs:
            check.error(f"{spath}.specialty", f"location {lid!r} does not offer specialty {spec!r}")
            continue
        if atype not in ltypes:
            check.error(f"{spath}.appointment_type", f"location {lid!r} does not offer appointment type {atype!r}")
            continue
        schedules[sid] = (lzone, spec, atype, ltypes)
        rows["schedules"].append({**t, "schedule_id": sid, "location_id": lid, "provider_id": pid,
                                  "specialty_id": spec})
        _generate(check, sch, spath, t, sid, schedules[sid], rows, slot_ids, now, today)

    for i, slot in enumerate(check.items(entry.get("slots"), f"{path}.slots")):
        _explicit_slot(check, slot, f"{path}.slots[{i}]", t, schedules, types, rows, slot_ids, now, today)
    _appointments(check, entry.get("appointments"), f"{path}.appointments", t, rows, now)
    return tenant_id


# A booked appointment occupies its slot: the loader marks the slot busy. These slot statuses
# cannot hold a booking at all.
_UNBOOKABLE = {BUSY_UNAVAILABLE, BUSY_TENTATIVE, ENTERED_IN_ERROR}


def _appointments(check: _Checker, values: Any, path: str, t: dict, rows: dict, now: dt.datetime) -> None:
    """Existing appointments: {id, patient, slot, status?}. The slot is one of this tenant's
    (explicit or generated); a booked appointment marks it busy."""
    tenant_slots = {row["slot_id"]: row for row in rows["slots"] if row["tenant_id"] == t["tenant_id"]}
    seen: dict[str, str] = {}
    booked: dict[str, str] = {}
    for i, item in enumerate(check.items(values, path)):
        apath = f"{path}[{i}]"
        entry = check.mapping(item, apath, {"id", "patient", "slot"}, {"status"})
        if entry is None:
            continue
        aid = check.ident(entry.get("id"), f"{apath}.id")
        patient = check.text(entry.get("patient"), f"{apath}.patient")
        slot_id = check.ident(entry.get("slot"), f"{apath}.slot")
        if slot_id is not None and slot_id not in tenant_slots:
            check.error(f"{apath}.slot", f"unknown slot {slot_id!r} (not a slot of this tenant)")
            slot_id = None
        status = entry.get("status", APPOINTMENT_BOOKED)
        if status not in APPOINTMENT_STATUSES:
            check.error(f"{apath}.status", f"{status!r} is not an appointment status ({', '.join(APPOINTMENT_STATUSES)})")
            continue
        if patient is not None and len(patient) > 256:
            check.error(f"{apath}.patient", "at most 256 characters")
            continue
        if not _unique(check, seen, aid, f"{apath}.id", "appointment") or None in (patient, slot_id):
            continue
        seen[aid] = slot_id
        slot = tenant_slots[slot_id]
        if status == APPOINTMENT_BOOKED:
            if slot["status"] in _UNBOOKABLE:
                check.error(f"{apath}.slot", f"slot {slot_id!r} is {slot['status']}: it cannot hold a booked appointment")
                continue
            if slot_id in booked:
                check.error(f"{apath}.slot", f"slot {slot_id!r} is already booked by appointment {booked[slot_id]!r}")
                continue
            booked[slot_id] = aid
            slot["status"] = BUSY
        rows["appointments"].append({**t, "appointment_id": aid, "slot_id": slot_id, "patient_ref": patient,
                                     "status": status, "created_at": now, "version": 1, "updated_at": now})


def _day_list(check: _Checker, values: Any, path: str) -> set[int]:
    if values == "daily":
        return set(range(7))
    days: set[int] = set()
    for j, day in enumerate(check.items(values, path, required=True)):
        key = str(day).strip().lower()[:3]
        if key not in DAYS:
            check.error(f"{path}[{j}]", f"expected a weekday mon..sun, got {day!r}")
        else:
            days.add(DAYS[key])
    return days


def _generate(check: _Checker, sch: dict, spath: str, t: dict, sid: str, info: tuple, rows: dict,
              slot_ids: set[str], now: dt.datetime, today: dt.date | None) -> None:
    lzone, spec, default_type, ltypes = info
    from_day = check.integer(sch.get("from_day", 0), f"{spath}.from_day", -MAX_GENERATED_DAYS, MAX_GENERATED_DAYS)
    days_ahead = check.integer(sch.get("days_ahead", 14), f"{spath}.days_ahead", 0, MAX_GENERATED_DAYS)
    pattern = []
    for j, status in enumerate(check.items(sch.get("status_pattern", [FREE]), f"{spath}.status_pattern")):
        if status not in SLOT_STATUSES:
            check.error(f"{spath}.status_pattern[{j}]",
                        f"{status!r} is not a FHIR Slot.status ({', '.join(SLOT_STATUSES)})")
        pattern.append(status)
    rules = []
    for r, rule in enumerate(check.items(sch.get("weekly"), f"{spath}.weekly")):
        rpath = f"{spath}.weekly[{r}]"
        w = check.mapping(rule, rpath, {"days", "start", "end", "minutes"}, {"appointment_type"})
        if w is None:
            continue
        days = _day_list(check, w.get("days"), f"{rpath}.days")
        start, end = check.hhmm(w.get("start"), f"{rpath}.start"), check.hhmm(w.get("end"), f"{rpath}.end")
        minutes = check.integer(w.get("minutes"), f"{rpath}.minutes", 5, 24 * 60)
        atype = default_type
        if "appointment_type" in w:
            atype = check.ref(w["appointment_type"], f"{rpath}.appointment_type", ltypes,
                              "appointment type at this location")
        if start and end and end <= start:
            check.error(f"{rpath}.end", f"end {w['end']} is not after start {w['start']}")
            continue
        if None not in (start, end, minutes, atype):
            rules.append((days, start, end, minutes, atype))
    if None in (from_day, days_ahead) or not pattern or check.errors:
        return
    base = today or now.astimezone(lzone).date()
    generated = []
    for offset in range(from_day, days_ahead):
        day = base + dt.timedelta(days=offset)
        for days, start, end, minutes, atype in rules:
            if day.weekday() not in days:
                continue
            wall = dt.datetime.combine(day, start)
            while wall + dt.timedelta(minutes=minutes) <= dt.datetime.combine(day, end):
                instant = local_to_utc(day, wall.time(), lzone)
                if instant is not None:  # wall times inside a DST gap do not exist
                    generated.append((instant, f"{sid}-{day:%Y%m%d}-{wall:%H%M}", minutes, atype))
                wall += dt.timedelta(minutes=minutes)
    for index, (instant, slot_id, minutes, atype) in enumerate(sorted(generated)):
        if slot_id in slot_ids:
            check.error(f"{spath}.weekly", f"generates slot {slot_id!r} twice (overlapping rules)")
            return
        slot_ids.add(slot_id)
        rows["slots"].append(_slot_row(t, slot_id, sid, spec, atype, pattern[index % len(pattern)],
                                       instant, instant + dt.timedelta(minutes=minutes), now))


def _explicit_slot(check: _Checker, slot: Any, path: str, t: dict, schedules: dict, types: dict, rows: dict,
                   slot_ids: set[str], now: dt.datetime, today: dt.date | None) -> None:
    sl = check.mapping(slot, path, {"id", "schedule"},
                       {"status", "start", "day", "time", "minutes", "appointment_type"})
    if sl is None:
        return
    slot_id = check.ident(sl.get("id"), f"{path}.id")
    sid = check.ref(sl.get("schedule"), f"{path}.schedule", schedules, "schedule")
    status = sl.get("status", FREE)
    if status not in SLOT_STATUSES:
        check.error(f"{path}.status", f"{status!r} is not a FHIR Slot.status ({', '.join(SLOT_STATUSES)})")
    minutes = check.integer(sl.get("minutes", 30), f"{path}.minutes", 5, 24 * 60)
    if sid is None:
        return
    lzone, spec, default_type, ltypes = schedules[sid]
    atype = default_type
    if "appointment_type" in sl:
        atype = check.ref(sl["appointment_type"], f"{path}.appointment_type", ltypes,
                          "appointment type at this location")
    start = None
    if "start" in sl:
        if "day" in sl or "time" in sl:
            check.error(path, "give either start (ISO 8601 with offset) or day + time, not both")
        start = _iso(check, sl["start"], f"{path}.start")
    elif "day" in sl and "time" in sl:
        offset = check.integer(sl["day"], f"{path}.day", -MAX_GENERATED_DAYS, MAX_GENERATED_DAYS)
        wall = check.hhmm(sl["time"], f"{path}.time")
        if offset is not None and wall is not None:
            day = (today or now.astimezone(lzone).date()) + dt.timedelta(days=offset)
            start = local_to_utc(day, wall, lzone)
            if start is None:
                check.error(f"{path}.time", f"{sl['time']} does not exist on {day} in {lzone} (DST gap)")
    else:
        check.error(path, "a slot needs start (ISO 8601 with offset) or day (offset from today) and time")
    if slot_id is not None and slot_id in slot_ids:
        check.error(f"{path}.id", f"duplicate slot {slot_id!r}")
        return
    if None in (slot_id, start, minutes, atype) or status not in SLOT_STATUSES:
        return
    slot_ids.add(slot_id)
    rows["slots"].append(_slot_row(t, slot_id, sid, spec, atype, status, start,
                                   start + dt.timedelta(minutes=minutes), now))


def _iso(check: _Checker, value: Any, path: str) -> dt.datetime | None:
    if isinstance(value, dt.datetime):  # YAML parses unquoted timestamps itself
        parsed = value
    else:
        try:
            parsed = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            check.error(path, f"expected an ISO 8601 date-time with offset, got {value!r}")
            return None
    if parsed.tzinfo is None:
        check.error(path, f"{value!r} has no UTC offset (e.g. 2026-12-01T09:00:00-05:00)")
        return None
    return parsed.astimezone(UTC)


def _slot_row(t: dict, slot_id: str, schedule_id: str, specialty: str, appointment_type: str, status: str,
              start: dt.datetime, end: dt.datetime, now: dt.datetime) -> dict[str, Any]:
    return {**t, "slot_id": slot_id, "schedule_id": schedule_id, "specialty_id": specialty,
            "appointment_type_id": appointment_type, "status": status, "start_time": start,
            "end_time": end, "version": 1, "updated_at": now}
