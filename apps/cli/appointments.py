"""citetrace appointments / citetrace propose: the patient's appointments and the change proposals
the assistant prepared, through the scheduler-gateway (the system of record and proposal store).

    citetrace appointments list --tenant T --subject PATIENT [--include-past] [--status S]... [--json]
    citetrace appointments list --tenant T --roles staff [--patient P]
    citetrace appointments show APPOINTMENT_ID ...
    citetrace propose show|list ...
    citetrace propose confirm PROPOSAL_ID [--slot SLOT] [--note TEXT] [--idempotency-key K]
    citetrace propose reject PROPOSAL_ID [--note TEXT] [--idempotency-key K]

Confirmations and rejections carry an idempotency key (a fresh one per invocation unless given):
a transient failure is retried with the same key, so a lost reply never books twice.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time
import uuid

from apps.cli.common import add_caller, add_data_dir, caller_token, fail, target

_RETRIES = 2


def register(subparsers: argparse._SubParsersAction) -> None:
    appointments = subparsers.add_parser("appointments", help="the patient's appointments (scheduler-gateway)")
    commands = appointments.add_subparsers(dest="appointments_command", required=True, metavar="SUBCOMMAND")
    listing = commands.add_parser("list", help="list appointments: a patient's own, or a named patient's (staff)")
    listing.add_argument("--patient", default="", help="staff: the patient (default: every patient in scope)")
    listing.add_argument("--status", action="append", default=[],
                         choices=["booked", "cancelled", "fulfilled", "noshow", "entered-in-error"],
                         help="statuses to list (repeatable; default booked)")
    listing.add_argument("--include-past", action="store_true", help="also appointments that have started")
    listing.add_argument("--specialty", default="")
    _common(listing)
    listing.set_defaults(func=run_list)
    show = commands.add_parser("show", help="one appointment")
    show.add_argument("appointment_id")
    _common(show)
    show.set_defaults(func=run_show)

    propose = subparsers.add_parser("propose", help="change proposals: show, list, confirm, reject")
    pcommands = propose.add_subparsers(dest="propose_command", required=True, metavar="SUBCOMMAND")
    pshow = pcommands.add_parser("show", help="one proposal with its options and policy consequences")
    pshow.add_argument("proposal_id")
    _common(pshow)
    pshow.set_defaults(func=run_proposal_show)
    plist = pcommands.add_parser("list", help="proposals (default pending); staff: --review for the review queue")
    plist.add_argument("--review", action="store_true", help="only review tasks")
    plist.add_argument("--status", action="append", default=[],
                       choices=["pending", "confirmed", "rejected", "expired", "failed"])
    plist.add_argument("--patient", default="", help="staff: one patient's proposals")
    _common(plist)
    plist.set_defaults(func=run_proposal_list)
    confirm = pcommands.add_parser("confirm", help="confirm a proposal (the change happens now)")
    confirm.add_argument("proposal_id")
    confirm.add_argument("--slot", default="", help="which offered slot (needed when several are offered)")
    confirm.add_argument("--note", default="")
    confirm.add_argument("--idempotency-key", default="", help="default: a fresh key for this invocation")
    _common(confirm)
    confirm.set_defaults(func=run_confirm)
    reject = pcommands.add_parser("reject", help="reject (withdraw) a proposal")
    reject.add_argument("proposal_id")
    reject.add_argument("--note", default="")
    reject.add_argument("--idempotency-key", default="", help="default: a fresh key for this invocation")
    _common(reject)
    reject.set_defaults(func=run_reject)


def _common(parser: argparse.ArgumentParser) -> None:
    add_caller(parser)
    parser.add_argument("--target", help="scheduler-gateway address (default: the local stack's)")
    parser.add_argument("--json", action="store_true", help="print protobuf's JSON mapping")
    add_data_dir(parser)


def _stub(args):
    from citetrace.kit.clients import stub
    from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2_grpc as pb_grpc

    return stub(pb_grpc.SchedulerGatewayServiceStub, args.target or target(args.data_dir, "scheduler_gateway"))


def _call(method, request, token, retry: bool = False):
    """One call; with retry, transient failures are repeated (the request carries its key)."""
    import grpc
    from citetrace.kit.clients import call, error_info

    for attempt in range(_RETRIES + 1 if retry else 1):
        try:
            return call(method, request, timeout=10, token=token)
        except grpc.RpcError as err:
            transient = err.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
            if retry and transient and attempt < _RETRIES:
                time.sleep(0.5 * (attempt + 1))
                continue
            info = error_info(err)
            reason = f" [{info.reason}]" if info else ""
            fail(f"{err.code().name}{reason}: {err.details()}", code=1)
    raise AssertionError("unreachable")


def _json(message) -> str:
    from google.protobuf import json_format

    return json.dumps(json_format.MessageToDict(message, preserving_proto_field_name=True), indent=2, sort_keys=True)


def _enum(enum_type, value: int, prefix: str) -> str:
    return enum_type.Name(value).removeprefix(prefix)


def _local(stamp, zone: str) -> str:
    from zoneinfo import ZoneInfo

    instant = stamp.ToDatetime(tzinfo=dt.UTC)
    local = instant.astimezone(ZoneInfo(zone)) if zone else instant
    return f"{local:%a %Y-%m-%d %H:%M} {local.tzname()}"


def appointment_line(a) -> str:
    from citetrace.common.v1 import appointments_pb2 as ap

    status = _enum(ap.AppointmentStatus, a.status, "APPOINTMENT_STATUS_").lower()
    return (f"{a.appointment_id}  {_local(a.start_time, a.time_zone)}  {a.specialty} {a.appointment_type}  "
            f"{a.location_name} [{a.location_id}]  {a.provider_name or '-'}  {status}  v{a.version}")


def proposal_text(p) -> str:
    from citetrace.common.v1 import appointments_pb2 as ap

    kind = _enum(ap.ChangeKind, p.kind, "CHANGE_KIND_").lower()
    status = _enum(ap.ProposalStatus, p.status, "PROPOSAL_STATUS_")
    zone = p.appointment.time_zone or (p.options[0].time_zone if p.options else "")
    lines = [f"proposal {p.proposal_id} ({kind}) {status}" + (f" [{p.outcome_reason}]" if p.outcome_reason else "")
             + f"; expires {_local(p.expires_at, zone)}"]
    if p.HasField("appointment"):
        lines.append(f"  appointment: {appointment_line(p.appointment)}")
    for index, option in enumerate(p.options, 1):
        lines.append(f"  option {index}: {_local(option.start_time, option.time_zone)}  {option.location_name}  "
                     f"{option.provider_name or '-'}  {option.appointment_type}  slot {option.slot_id} v{option.version}")
    for consequence in p.consequences:
        sources = ", ".join(f"{c.document_id}@{c.version_id[:12]} {c.source_anchor}" for c in consequence.citations)
        lines.append(f"  {_enum(ap.ConsequenceKind, consequence.kind, 'CONSEQUENCE_KIND_')}: {consequence.text}"
                     + (f" [{sources}]" if sources else "")
                     + (f" ({consequence.explanation})" if consequence.explanation else ""))
    if p.review_required:
        lines.append(f"  review task for staff: {p.review_reason}")
    if p.decided_by_ref:
        lines.append(f"  decided by {p.decided_by_ref}" + (f": {p.decision_note}" if p.decision_note else ""))
    if p.status == ap.PROPOSAL_STATUS_PENDING:
        slot = " --slot SLOT" if len(p.options) > 1 else ""
        who = "staff confirm" if p.review_required else "confirm"
        lines.append(f"  next: {who} with `citetrace propose confirm {p.proposal_id}{slot}` or reject with "
                     f"`citetrace propose reject {p.proposal_id}`")
    return "\n".join(lines)


def _statuses(names: list[str], enum_type, prefix: str) -> list[int]:
    return [enum_type.Value(prefix + name.upper().replace("-", "_")) for name in names]


def run_list(args: argparse.Namespace) -> int:
    from citetrace.common.v1 import appointments_pb2 as ap
    from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as pb

    token, stub = caller_token(args), _stub(args)
    request = pb.ListAppointmentsRequest(
        patient_ref=args.patient, statuses=_statuses(args.status, ap.AppointmentStatus, "APPOINTMENT_STATUS_"),
        include_past=args.include_past, specialty=args.specialty, page_size=100)
    shown = 0
    while True:
        reply = _call(stub.ListAppointments, request, token)
        for appointment in reply.appointments:
            print(_json(appointment) if args.json else appointment_line(appointment))
        shown += len(reply.appointments)
        if not reply.next_page_token:
            break
        request.page_token = reply.next_page_token
    if not args.json:
        print(f"{shown} appointment(s) as of {reply.as_of.ToDatetime(tzinfo=dt.UTC).isoformat()}")
    return 0


def run_show(args: argparse.Namespace) -> int:
    from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as pb

    reply = _call(_stub(args).GetAppointment, pb.GetAppointmentRequest(appointment_id=args.appointment_id),
                  caller_token(args))
    print(_json(reply.appointment) if args.json else appointment_line(reply.appointment))
    return 0


def run_proposal_show(args: argparse.Namespace) -> int:
    from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as pb

    reply = _call(_stub(args).GetProposal, pb.GetProposalRequest(proposal_id=args.proposal_id), caller_token(args))
    print(_json(reply.proposal) if args.json else proposal_text(reply.proposal))
    return 0


def run_proposal_list(args: argparse.Namespace) -> int:
    from citetrace.common.v1 import appointments_pb2 as ap
    from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as pb

    token, stub = caller_token(args), _stub(args)
    request = pb.ListProposalsRequest(statuses=_statuses(args.status, ap.ProposalStatus, "PROPOSAL_STATUS_"),
                                      review_required_only=args.review, patient_ref=args.patient, page_size=100)
    while True:
        reply = _call(stub.ListProposals, request, token)
        for proposal in reply.proposals:
            print(_json(proposal) if args.json else proposal_text(proposal))
        if not reply.next_page_token:
            return 0
        request.page_token = reply.next_page_token


def run_confirm(args: argparse.Namespace) -> int:
    from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as pb

    request = pb.ConfirmProposalRequest(proposal_id=args.proposal_id, slot_id=args.slot, note=args.note,
                                        idempotency_key=args.idempotency_key or f"cli-{uuid.uuid4().hex}")
    reply = _call(_stub(args).ConfirmProposal, request, caller_token(args), retry=True)
    if args.json:
        print(_json(reply))
    else:
        result = pb.ConfirmProposalResult.Name(reply.result).removeprefix("CONFIRM_PROPOSAL_RESULT_")
        print(f"{result}: {reply.message}")
        if reply.HasField("appointment"):
            print(f"  appointment: {appointment_line(reply.appointment)}")
        print(proposal_text(reply.proposal))
    return 0 if reply.result == pb.CONFIRM_PROPOSAL_RESULT_CONFIRMED else 1


def run_reject(args: argparse.Namespace) -> int:
    from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as pb

    request = pb.RejectProposalRequest(proposal_id=args.proposal_id, note=args.note,
                                       idempotency_key=args.idempotency_key or f"cli-{uuid.uuid4().hex}")
    reply = _call(_stub(args).RejectProposal, request, caller_token(args), retry=True)
    print(_json(reply.proposal) if args.json else proposal_text(reply.proposal))
    return 0
