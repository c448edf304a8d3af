"""citetrace slots: load the scheduling system of record from a file, and find slots through the
scheduler-gateway.

`slots load` writes straight to the scheduling database (by default the local stack's SQLite file
under the data directory): loading is an operator's bootstrap of the system of record, not a
gateway operation, so the gateway keeps no write path besides ConfirmSlot. `slots find` goes
through the running gateway with a development token, like any other caller.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys

from citetrace.kit.timestamps import from_timestamp, to_timestamp

from apps.cli.common import add_data_dir, dev_token, fail, split_list, target, time_arg


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("slots", help="load and query the scheduling system of record")
    commands = parser.add_subparsers(dest="slots_command", required=True, metavar="SUBCOMMAND")

    load = commands.add_parser("load", help="load tenants, locations, providers and slots from YAML or JSON")
    load.add_argument("file", help="a citetrace.slots/v1 file (e.g. deploy/samples/slots.yaml)")
    load.add_argument("--database-url", help="SQLAlchemy URL of the scheduling database "
                      "(default: the local stack's SQLite file under --data-dir)")
    load.add_argument("--today", type=dt.date.fromisoformat,
                      help="the day relative slots are generated from (default: today in each location's zone)")
    load.add_argument("--check", action="store_true", help="validate only; write nothing")
    add_data_dir(load)
    load.set_defaults(func=run_load)

    find = commands.add_parser("find", help="find free slots through the scheduler-gateway")
    find.add_argument("--tenant", required=True)
    find.add_argument("--specialty", required=True)
    find.add_argument("--location", default="", help="a location ID (see --list-locations)")
    find.add_argument("--provider", default="")
    find.add_argument("--type", dest="appointment_type", default="", help="appointment type")
    find.add_argument("--from", dest="start", help="range start, ISO 8601 with offset (default: now)")
    find.add_argument("--to", dest="end", help="range end, ISO 8601 with offset (default: start + 7 days)")
    find.add_argument("--day", help="today, tomorrow or YYYY-MM-DD: that whole day in the location's time zone "
                      "(needs --location or --zone)")
    find.add_argument("--zone", help="IANA zone for --day when no --location is given")
    find.add_argument("--page-size", type=int, default=0)
    find.add_argument("--page-token", default="")
    find.add_argument("--all", action="store_true", help="follow next_page_token to the end")
    find.add_argument("--roles", default="patient", help="roles of the development token (default: patient)")
    find.add_argument("--locations", default="", help="permitted locations of the token (default: all)")
    find.add_argument("--target", help="gateway address (default: the local stack's)")
    find.add_argument("--json", action="store_true", help="print JSON lines instead of a table")
    add_data_dir(find)
    find.set_defaults(func=run_find)

    locations = commands.add_parser("locations", help="list the tenant's locations through the gateway")
    locations.add_argument("--tenant", required=True)
    locations.add_argument("--target", help="gateway address (default: the local stack's)")
    add_data_dir(locations)
    locations.set_defaults(func=run_locations)


def run_load(args: argparse.Namespace) -> int:
    from services.scheduler_gateway.loader import LoadError, plan_file, write_plan
    from services.scheduler_gateway.schema import default_database_url, make_engine

    try:
        plan = plan_file(args.file, today=args.today)
    except LoadError as err:
        for line in err.errors:
            print(f"citetrace: error: {line}", file=sys.stderr)
        print(f"citetrace: {len(err.errors)} error(s); nothing was loaded", file=sys.stderr)
        return 2
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(plan.slot_statuses().items()))
    summary = (f"{len(plan.tenant_ids)} tenants ({', '.join(plan.tenant_ids)}), {plan.count('locations')} locations, "
               f"{plan.count('providers')} providers, {plan.count('schedules')} schedules, "
               f"{plan.count('slots')} slots ({statuses}), {plan.count('appointments')} appointments")
    if args.check:
        print(f"{args.file}: valid: {summary}")
        return 0
    url = args.database_url or default_database_url(args.data_dir)
    engine = make_engine(url)
    try:
        write_plan(engine, plan)
    finally:
        engine.dispose()
    print(f"loaded {summary} into {_redact(url)}")
    return 0


def _redact(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def _stub(args):
    from citetrace.kit.clients import stub
    from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2_grpc as pb_grpc

    return stub(pb_grpc.SchedulerGatewayServiceStub, args.target or target(args.data_dir, "scheduler_gateway"))


def _call(method, request, token):
    import grpc
    from citetrace.kit.clients import call

    from apps.cli.common import rpc_failure

    try:
        return call(method, request, timeout=10, token=token)
    except grpc.RpcError as err:
        fail(rpc_failure(err, "scheduler_gateway"))


def _locations(args, token) -> list:
    from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as pb

    stub, out, page = _stub(args), [], ""
    while True:
        reply = _call(stub.ListLocations, pb.ListLocationsRequest(page_size=100, page_token=page), token)
        out.extend(reply.locations)
        page = reply.next_page_token
        if not page:
            return out


def run_find(args: argparse.Namespace) -> int:
    from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as pb

    from services.scheduler_gateway.domain import day_bounds_utc, zone

    token = dev_token(args.data_dir, args.tenant, split_list(args.roles), split_list(args.locations))
    request = pb.FindSlotsRequest(
        specialty=args.specialty, location_id=args.location, provider_id=args.provider,
        appointment_type=args.appointment_type, page_size=args.page_size, page_token=args.page_token,
    )
    if args.day:
        if args.start or args.end:
            fail("give either --day or --from/--to")
        zone_name = args.zone
        if not zone_name:
            if not args.location:
                fail("--day needs --location (its time zone) or --zone")
            match = [loc for loc in _locations(args, token) if loc.location_id == args.location]
            if not match:
                fail(f"location {args.location!r} is not a known location")
            zone_name = match[0].time_zone
        try:
            tz = zone(zone_name)
        except ValueError as exc:
            fail(str(exc))
        today = dt.datetime.now(tz).date()
        day = {"today": today, "tomorrow": today + dt.timedelta(days=1)}.get(args.day.lower())
        if day is None:
            try:
                day = dt.date.fromisoformat(args.day)
            except ValueError:
                fail(f"--day {args.day!r}: expected today, tomorrow or YYYY-MM-DD")
        start, end = day_bounds_utc(day, zone_name)
        request.start_time.CopyFrom(to_timestamp(start))
        request.end_time.CopyFrom(to_timestamp(end))
    else:
        if args.start:
            request.start_time.CopyFrom(to_timestamp(time_arg(args.start, "--from")))
        if args.end:
            request.end_time.CopyFrom(to_timestamp(time_arg(args.end, "--to")))
    stub = _stub(args)
    shown = 0
    while True:
        reply = _call(stub.FindSlots, request, token)
        for slot in reply.slots:
            _print_slot(slot, args.json)
        shown += len(reply.slots)
        if not (args.all and reply.next_page_token):
            break
        request.page_token = reply.next_page_token
    as_of = from_timestamp(reply.as_of).isoformat()
    if not args.json:
        print(f"{shown} free slot(s) as of {as_of}")
        if reply.next_page_token:
            print(f"more: --page-token {reply.next_page_token}")
    return 0


def _print_slot(slot, as_json: bool) -> None:
    from zoneinfo import ZoneInfo

    start = from_timestamp(slot.start_time)
    end = from_timestamp(slot.end_time)
    local = start.astimezone(ZoneInfo(slot.time_zone)) if slot.time_zone else start
    if as_json:
        print(json.dumps({
            "slot_id": slot.slot_id, "version": slot.version, "location_id": slot.location_id,
            "location_name": slot.location_name, "time_zone": slot.time_zone, "provider_id": slot.provider_id,
            "provider_name": slot.provider_name, "specialty": slot.specialty,
            "appointment_type": slot.appointment_type, "start_time": start.isoformat(),
            "end_time": end.isoformat(), "local_start": local.isoformat(),
            "as_of": from_timestamp(slot.as_of).isoformat(),
        }))
        return
    minutes = int((end - start).total_seconds() // 60)
    print(f"{local:%a %Y-%m-%d %H:%M} {local.tzname():<5} ({start:%Y-%m-%dT%H:%MZ}) {minutes:>3} min  "
          f"{slot.location_name} [{slot.location_id}]  {slot.provider_name or '-'}  {slot.appointment_type}  "
          f"{slot.slot_id} v{slot.version}")


def run_locations(args: argparse.Namespace) -> int:
    token = dev_token(args.data_dir, args.tenant, ["staff"])
    for loc in _locations(args, token):
        print(f"{loc.location_id:<16} {loc.name:<28} {loc.time_zone:<18} specialties: {', '.join(loc.specialties)}; "
              f"types: {', '.join(loc.appointment_types)}; aliases: {', '.join(loc.aliases)}")
    return 0
