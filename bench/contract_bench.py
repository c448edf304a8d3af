"""Latency of Generate (extractive) and Validate over real gRPC on the sample corpus.

    python bench/contract_bench.py [--rounds 20] [--json bench/results/contract.json]

Starts retrieval (embedded defaults, a temporary data dir), generation and the citation validator
in-process on port 0, ingests deploy/samples/corpus, searches once per question, then times
Generate and Validate (validator reloads every cited passage from retrieval each call).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import grpc  # noqa: E402
from citetrace.citation_validator.v1 import citation_validator_service_pb2 as cv_pb  # noqa: E402
from citetrace.citation_validator.v1 import citation_validator_service_pb2_grpc as cv_grpc  # noqa: E402
from citetrace.common.v1 import common_pb2  # noqa: E402
from citetrace.generation.v1 import generation_service_pb2 as gen_pb  # noqa: E402
from citetrace.generation.v1 import generation_service_pb2_grpc as gen_grpc  # noqa: E402
from citetrace.kit.testing import serving, test_auth_settings, token_metadata  # noqa: E402
from citetrace.retrieval.v1 import retrieval_service_pb2 as ret_pb  # noqa: E402
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as ret_grpc  # noqa: E402

from apps.cli.ingest import parse_file  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from services.citation_validator.bootstrap import build_spec as validator_spec  # noqa: E402
from services.citation_validator.settings import Settings as ValidatorSettings  # noqa: E402
from services.generation.bootstrap import build_spec as generation_spec  # noqa: E402
from services.generation.settings import Settings as GenerationSettings  # noqa: E402
from services.retrieval.bootstrap import build_spec as retrieval_spec  # noqa: E402
from services.retrieval.settings import Settings as RetrievalSettings  # noqa: E402

QUESTIONS = [
    ("acme-health", "When should I arrive for my appointment?", common_pb2.INTENT_ARRIVAL_PREPARATION),
    ("acme-health", "What should I bring to my appointment?", common_pb2.INTENT_ARRIVAL_PREPARATION),
    ("acme-health", "How much is the fee if I cancel my MRI late?", common_pb2.INTENT_CANCELLATION_RESCHEDULING),
    ("acme-health", "Can I walk in without an appointment?", common_pb2.INTENT_OTHER),
    ("acme-health", "Which cardiologists work at Northside?", common_pb2.INTENT_PROVIDER_INFORMATION),
    ("borealis-clinics", "What happens if I cancel late?", common_pb2.INTENT_CANCELLATION_RESCHEDULING),
]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    auth = test_auth_settings()
    data = Path(tempfile.mkdtemp(prefix="contract-bench-"))
    with serving(retrieval_spec(RetrievalSettings(port=0, metrics_port=-1, data_dir=data)), auth) as rr, \
            serving(generation_spec(GenerationSettings(port=0, metrics_port=-1)), auth) as gr, \
            serving(validator_spec(ValidatorSettings(port=0, metrics_port=-1, retrieval_target=rr.address)), auth) as vr:
        retrieval = ret_grpc.RetrievalServiceStub(grpc.insecure_channel(rr.address))
        generation = gen_grpc.GenerationServiceStub(grpc.insecure_channel(gr.address))
        validator = cv_grpc.CitationValidatorServiceStub(grpc.insecure_channel(vr.address))
        for path in sorted((ROOT / "deploy" / "samples" / "corpus").rglob("*.md")):
            source = parse_file(path)
            retrieval.IngestDocument(source.request(), timeout=120,
                                     metadata=token_metadata(auth, source.tenant, ("policy_admin",)))
        cases = []
        for tenant, question, intent in QUESTIONS:
            md = token_metadata(auth, tenant, ("patient",))
            hits = retrieval.Search(ret_pb.SearchRequest(query=question, k=5), timeout=30, metadata=md).hits
            offered = [common_pb2.LabelledPassage(label=h.label, passage=h.passage) for h in hits]
            cases.append((md, gen_pb.GenerateRequest(question=question, intent=intent, passages=offered), offered))
        gen_ms, val_ms, claims, passed = [], [], 0, 0
        for round_no in range(args.rounds + 1):
            for md, request, offered in cases:
                started = time.perf_counter()
                generated = generation.Generate(request, timeout=10, metadata=md)
                g = (time.perf_counter() - started) * 1000
                if not generated.claims:
                    continue
                started = time.perf_counter()
                validated = validator.Validate(cv_pb.ValidateRequest(claims=generated.claims, offered=offered),
                                               timeout=10, metadata=md)
                v = (time.perf_counter() - started) * 1000
                if round_no == 0:
                    continue  # warm-up round
                gen_ms.append(g)
                val_ms.append(v)
                claims += len(generated.claims)
                passed += validated.passed
    report = {
        "calls": len(gen_ms),
        "claims_per_answer": round(claims / max(1, len(gen_ms)), 2),
        "answers_passed": f"{passed}/{len(val_ms)}",
        "generate_ms": {"p50": round(statistics.median(gen_ms), 2), "p95": round(pct(gen_ms, 0.95), 2)},
        "validate_ms": {"p50": round(statistics.median(val_ms), 2), "p95": round(pct(val_ms, 0.95), 2)},
    }
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
