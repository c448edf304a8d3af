"""What the evidence seal costs (issue 16): Ed25519 signing per append and verification per read.

--part trace (part of `make bench-trace`; bench/results/integrity-trace.json):
  * sign / verify of one chain item alone (the trace key, citetrace.signing), verify cold (no memo:
    the first read after a restart) and warm (memoised);
  * RecordTrace's core append on the real store (SQLite by default), with the real signer and
    with a signer that does nothing, so the difference is the seal's share of an append;
  * VerifyChain per item over the whole chain, cold keyring and warm.
--part retrieval (part of `make bench-retrieval`; bench/results/integrity-retrieval.json):
  * a version statement signed at ingestion (VersionSealer.seal) and verified per read
    (verify_statement cold / warm, verify_bundle = signature + every digest of the version);
  * GetPassages by ID over real gRPC with the memo cleared before every call (cold) and kept (warm).

Figures are medians (µs) on this machine (whole-chain walks: median of 3); the load average is
recorded — on the shared 2-core machine the end-to-end figures (append, GetPassages) move by more
than the seal costs, so the seal's own cost is the sign/verify rows.

    .venv/bin/python bench/integrity_bench.py --part trace|retrieval [--n 2000] [--database-url URL]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "trace"))
sys.path.insert(0, str(REPO / "tests" / "retrieval" / "service"))


def median_us(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1e6, 1)


def p95_us(samples: list[float]) -> float:
    ordered = sorted(samples)
    return round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1e6, 1)


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def machine() -> dict:
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2),
            "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}


def trace_part(n: int, database_url: str | None) -> dict:
    from citetrace.kit.auth import Principal
    from citetrace.signing import Keyring
    from tracefixtures import TENANT, core_on, make_record

    from services.trace.sealing import ChainSealer, seal_message
    from services.trace.store import open_store

    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        url = database_url or f"sqlite:///{Path(tmp) / 'trace.db'}"
        store = open_store(url)
        core = core_on(store, data_dir=Path(tmp) / "authority")
        sealer: ChainSealer = core.sealer
        messages = [seal_message(TENANT, i, f"{i:064x}") for i in range(n)]
        signed = [(m, *sealer.sign(m)) for m in messages]
        out["sign_us"] = median_us([timed(lambda m=m: sealer.sign(m)) for m in messages])
        cold = ChainSealer(None, Keyring([sealer.signer.public_key()], memo_size=0))
        out["verify_cold_us"] = median_us([timed(lambda s=s: cold.verify(s[1], s[0], s[2])) for s in signed])
        for s in signed:
            sealer.verify(s[1], s[0], s[2])
        out["verify_warm_us"] = median_us([timed(lambda s=s: sealer.verify(s[1], s[0], s[2])) for s in signed])

        writer = Principal(TENANT, "service:orchestrator", ("service",))
        records = [make_record(f"b-{i:05d}") for i in range(2 * n)]
        # Interleaved so that load changes hit both equally: sealed append, then one with a no-op signer.
        noop = ChainSealer(None, sealer.keyring)
        noop.sign = lambda message: (sealer.signer.key_id, "")  # type: ignore[method-assign]
        sealed, unsealed = [], []
        for i in range(n):
            core.sealer = sealer
            sealed.append(timed(lambda r=records[2 * i]: core.record_trace(writer, r)))
            core.sealer = noop
            unsealed.append(timed(lambda r=records[2 * i + 1]: core.record_trace(writer, r)))
        core.sealer = sealer
        out["append_sealed_us"] = {"p50": median_us(sealed), "p95": p95_us(sealed)}
        out["append_unsealed_us"] = {"p50": median_us(unsealed), "p95": p95_us(unsealed)}
        out["append_seal_share_us"] = round(out["append_sealed_us"]["p50"] - out["append_unsealed_us"]["p50"], 1)
        # The no-op half has no valid signatures: verify a chain of sealed records only.
        store.close()
        store = open_store(f"sqlite:///{Path(tmp) / 'verify.db'}" if database_url is None else url)
        if database_url is None:
            chain_core = core_on(store, data_dir=Path(tmp) / "authority")
            for r in [make_record(f"v-{i:05d}") for i in range(n)]:
                chain_core.record_trace(writer, r)
            chain_core.sealer = ChainSealer(sealer.signer, Keyring([sealer.signer.public_key()], memo_size=0))
            took_cold = statistics.median(timed(lambda: chain_core.verify_tenant(TENANT)) for _ in range(3))
            chain_core.sealer = sealer
            chain_core.verify_tenant(TENANT)
            took_warm = statistics.median(timed(lambda: chain_core.verify_tenant(TENANT)) for _ in range(3))
            report = chain_core.verify_tenant(TENANT)
            assert report.ok, report.detail
            out["verify_chain_per_item_us"] = {"cold": round(took_cold / report.records_checked * 1e6, 1),
                                               "warm": round(took_warm / report.records_checked * 1e6, 1),
                                               "items": report.records_checked}
        out["store"] = store.dialect
        store.close()
    return out


CORPUS = "\n\n".join(
    f"## Section {i}\n\nArrive 30 minutes before an MRI appointment at Harbor Imaging (rule {i}). Remove all "
    "metal objects before the scan. Bring your referral and a list of your medicines; cancel 24 hours ahead."
    for i in range(8))


def retrieval_part(n: int) -> dict:
    from citetrace.kit.testing import test_auth_settings
    from citetrace.signing import Keyring
    from conftest import running_service

    out: dict = {}
    auth = test_auth_settings()
    with tempfile.TemporaryDirectory() as tmp, running_service(auth, Path(tmp)) as client:
        tenant = "acme-health"
        versions = []
        for i in range(20):
            reply = client.ingest(tenant, f"bench-doc-{i}", CORPUS + f" Document {i}.")
            versions.append(reply.version.version_id)
        core = client.core
        store = core.store
        sealer = store.sealer
        bundles = list(store.version_bundles(tenant, versions).values())
        hits = client.search(tenant, "when should I arrive for my MRI", k=10).hits
        passage_ids = [h.passage.identity.passage_id for h in hits][:5]
        assert passage_ids, "the benchmark corpus gives search hits"
        client.get(tenant, passage_ids)
        warm, cold = [], []
        for _ in range(n):  # interleaved, so load changes hit both alike
            warm.append(timed(lambda: client.get(tenant, passage_ids)))
            sealer.keyring._memo.clear()
            cold.append(timed(lambda: client.get(tenant, passage_ids)))
        out["get_passages_5_ids_us"] = {"warm_p50": median_us(warm), "cold_p50": median_us(cold),
                                        "signature_share_us": round(median_us(cold) - median_us(warm), 1)}
        from services.retrieval.store.sealing import VersionSealer

        cold_sealer = VersionSealer(None, Keyring([sealer.signer.public_key()], memo_size=0))
        repeated = bundles * max(1, n // len(bundles))
        out["verify_statement_us"] = {
            "cold": median_us([timed(lambda b=b: cold_sealer.verify_statement(b.version)) for b in repeated]),
            "warm": median_us([timed(lambda b=b: sealer.verify_statement(b.version)) for b in repeated])}
        out["verify_bundle_us"] = {
            "cold": median_us([timed(lambda b=b: cold_sealer.verify_bundle(b.version, b.text, b.passages))
                               for b in repeated]),
            "warm": median_us([timed(lambda b=b: sealer.verify_bundle(b.version, b.text, b.passages))
                               for b in repeated]),
            "passages_per_version": round(statistics.mean(len(b.passages) for b in bundles), 1)}
        out["sign_version_us"] = median_us([timed(lambda: sealer.signer.sign(b"x" * 600)) for _ in range(n)])
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--part", choices=("trace", "retrieval"), required=True)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--database-url")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    figures = trace_part(args.n, args.database_url) if args.part == "trace" else retrieval_part(args.n)
    result = {"benchmark": f"integrity-{args.part}", "n": args.n, "machine": machine(), "figures_us": figures}
    out = args.out or REPO / "bench" / "results" / f"integrity-{args.part}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
