"""Scheduler-gateway latency over real gRPC, in-process: FindSlots (a day in the clinic's zone, a
7-day range, paged), ConfirmSlot, and a proposal's ProposeChange (book, through a delegated
assistant token) + ConfirmProposal (the patient's token, with an idempotency key) at concurrency 1
and 8, on SQLite and/or PostgreSQL, loaded from the synthetic sample.

    .venv/bin/python bench/scheduler_bench.py [--backend sqlite|postgresql|both] [--requests 500]
        [--proposals 200] [--days-ahead 60] [--postgres-url URL] [--json FILE]
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from zoneinfo import ZoneInfo

import grpc
import yaml
from citetrace.common.v1 import appointments_pb2 as ap_pb
from citetrace.kit.auth import bearer_metadata, mint_token
from citetrace.kit.testing import serving, test_auth_settings, through, token_metadata
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as pb
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2_grpc as pb_grpc
from google.protobuf import timestamp_pb2
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from services.scheduler_gateway import schema  # noqa: E402
from services.scheduler_gateway.bootstrap import build_spec  # noqa: E402
from services.scheduler_gateway.domain import day_bounds_utc  # noqa: E402
from services.scheduler_gateway.loader import build_plan, write_plan  # noqa: E402
from services.scheduler_gateway.settings import Settings  # noqa: E402

SAMPLE = ROOT / "deploy" / "samples" / "slots.yaml"


def ts(value: dt.datetime) -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(value)
    return stamp


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {"n": len(ordered), "p50_ms": round(pick(0.50) * 1000, 3), "p95_ms": round(pick(0.95) * 1000, 3),
            "p99_ms": round(pick(0.99) * 1000, 3), "mean_ms": round(statistics.fmean(ordered) * 1000, 3)}


def free_slots(stub, md, start: dt.datetime, specialties=("cardiology", "family_medicine", "imaging", "dermatology")):
    out = []
    for specialty in specialties:
        token = ""
        while True:
            reply = stub.FindSlots(pb.FindSlotsRequest(
                specialty=specialty, start_time=ts(start), end_time=ts(start + dt.timedelta(days=31)),
                page_size=100, page_token=token), timeout=10, metadata=md)
            out.extend(reply.slots)
            token = reply.next_page_token
            if not token:
                break
    return out


def proposals(stub, auth, slots: list, concurrency: int) -> dict:
    """ProposeChange (book one slot, as the assistant acting for a patient) then ConfirmProposal
    (the patient), each pair on its own free slot, `concurrency` pairs in flight."""
    propose_s, confirm_s, pair_s = [], [], []
    lock = threading.Lock()

    def one(index: int, slot) -> None:
        ref = f"bench-patient-{concurrency}-{index}"
        assistant = through(bearer_metadata(mint_token(auth, tenant_id="acme-health", subject=ref, roles=["patient"],
                                                       patient_ref=ref)), "orchestrator")  # the orchestrator calls
        patient = bearer_metadata(mint_token(auth, tenant_id="acme-health", subject=ref, roles=["patient"]))
        began = time.perf_counter()
        proposal = stub.ProposeChange(pb.ProposeChangeRequest(
            kind=ap_pb.CHANGE_KIND_BOOK, slots=[pb.SlotChoice(slot_id=slot.slot_id, expected_version=slot.version)],
            ask_trace_id=uuid.uuid4().hex), timeout=10, metadata=assistant).proposal
        proposed = time.perf_counter()
        reply = stub.ConfirmProposal(pb.ConfirmProposalRequest(
            proposal_id=proposal.proposal_id, idempotency_key=f"bench-{uuid.uuid4().hex}"), timeout=10,
            metadata=patient)
        done = time.perf_counter()
        assert reply.result == pb.CONFIRM_PROPOSAL_RESULT_CONFIRMED, reply
        with lock:
            propose_s.append(proposed - began)
            confirm_s.append(done - proposed)
            pair_s.append(done - began)

    began, cpu = time.perf_counter(), time.process_time()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(lambda item: one(*item), enumerate(slots)))
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu
    # CPU of this process: the gateway and the benchmark client together (the database's own aside).
    return {"concurrency": concurrency, "propose_change": percentiles(propose_s),
            "confirm_proposal": percentiles(confirm_s), "propose_plus_confirm": percentiles(pair_s),
            "pairs_per_second": round(len(slots) / wall, 1),
            "process_cpu_ms_per_pair": round(cpu / len(slots) * 1000, 2)}


def run(url: str, requests: int, days_ahead: int, proposal_pairs: int = 0) -> dict:
    document = yaml.safe_load(SAMPLE.read_text())
    for tenant in document["tenants"]:
        for schedule in tenant.get("schedules", []):
            schedule["days_ahead"] = days_ahead
    plan = build_plan(copy.deepcopy(document), str(SAMPLE))
    engine = schema.make_engine(url)
    write_plan(engine, plan)
    engine.dispose()
    auth = test_auth_settings()
    md = token_metadata(auth, "acme-health")
    spec = build_spec(Settings(port=0, metrics_port=-1, database_url=url))
    results: dict = {"slots_loaded": plan.count("slots")}
    with serving(spec, auth) as runner, grpc.insecure_channel(runner.address) as channel:
        stub = pb_grpc.SchedulerGatewayServiceStub(channel)
        tomorrow = dt.datetime.now(ZoneInfo("America/New_York")).date() + dt.timedelta(days=1)
        start, end = day_bounds_utc(tomorrow, "America/New_York")
        queries = {
            "find_day_location": pb.FindSlotsRequest(specialty="cardiology", location_id="acme-northside",
                                                     start_time=ts(start), end_time=ts(end)),
            "find_7_days_tenant": pb.FindSlotsRequest(specialty="cardiology", page_size=20),
            "find_31_days_page100": pb.FindSlotsRequest(
                specialty="imaging", start_time=ts(start), end_time=ts(start + dt.timedelta(days=31)),
                page_size=100),
        }
        for name, request in queries.items():
            stub.FindSlots(request, timeout=10, metadata=md)  # warm
            samples = []
            for _ in range(requests):
                began = time.perf_counter()
                reply = stub.FindSlots(request, timeout=10, metadata=md)
                samples.append(time.perf_counter() - began)
            results[name] = {**percentiles(samples), "slots_per_reply": len(reply.slots)}
        free = []
        token = ""
        while len(free) < requests:
            reply = stub.FindSlots(pb.FindSlotsRequest(
                specialty="cardiology", start_time=ts(start), end_time=ts(start + dt.timedelta(days=31)),
                page_size=100, page_token=token), timeout=10, metadata=md)
            free.extend(reply.slots)
            token = reply.next_page_token
            if not token:
                break
        samples = []
        for slot in free[:requests]:
            began = time.perf_counter()
            reply = stub.ConfirmSlot(pb.ConfirmSlotRequest(slot_id=slot.slot_id, expected_version=slot.version),
                                 timeout=10, metadata=md)
            samples.append(time.perf_counter() - began)
            assert reply.result == pb.CONFIRM_RESULT_CONFIRMED
        results["confirm_slot"] = percentiles(samples)
        if proposal_pairs:
            reload = schema.make_engine(url)  # every slot free again (the confirm phase took 300)
            write_plan(reload, plan)
            reload.dispose()
            offered = [slot for slot in free_slots(stub, md, start) if slot.status == 1]
            warm, n = 10, proposal_pairs
            if len(offered) < warm + 2 * n:
                raise SystemExit(f"only {len(offered)} free slots for {warm + 2 * n} proposals: raise --days-ahead")
            proposals(stub, auth, offered[:warm], 1)  # warm the proposal path (not reported)
            results["proposals_c1"] = proposals(stub, auth, offered[warm:warm + n], 1)
            results["proposals_c8"] = proposals(stub, auth, offered[warm + n:warm + 2 * n], 8)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--days-ahead", type=int, default=21)
    parser.add_argument("--proposals", type=int, default=0,
                        help="ProposeChange + ConfirmProposal pairs at concurrency 1 and again at 8 (0: skip)")
    parser.add_argument("--postgres-url", default=os.environ.get(
        "CITETRACE_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:55432/postgres"))
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    out = {"requests": args.requests, "proposals": args.proposals, "days_ahead": args.days_ahead,
           "cpu_count": os.cpu_count(), "load_average_before": [round(x, 2) for x in os.getloadavg()]}
    if args.backend in ("sqlite", "both"):
        with tempfile.TemporaryDirectory() as tmp:
            out["sqlite"] = run(schema.default_database_url(Path(tmp)), args.requests, args.days_ahead,
                                args.proposals)
    if args.backend in ("postgresql", "both"):
        admin_url = make_url(args.postgres_url)
        name = f"bench_{uuid.uuid4().hex[:10]}"
        admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        try:
            out["postgresql"] = run(admin_url.set(database=name).render_as_string(hide_password=False),
                                    args.requests, args.days_ahead, args.proposals)
        finally:
            with admin.connect() as conn:
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            admin.dispose()
    out["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    text = json.dumps(out, indent=2)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
