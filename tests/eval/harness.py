"""Grounding evaluation as a pipeline (issue 10, seed 000): the labelled synthetic question set
tests/eval/cases.yaml asked of the real stack (six services as processes, embedded defaults,
extractive generator), scored separately for retrieval, citation, support and outcome.

    PYTHONPATH=tests .venv/bin/python -m eval.harness [--json bench/results/eval.json]
    make eval

The stack is the e2e harness's (tests/e2e/conftest.py: `citetrace up --detach` on shifted ports, the
sample corpus ingested, the sample slots loaded). Gold evidence is resolved at run time: every
sample file is ingested once more through the retrieval API (idempotent: same version and passage
IDs) and a gold passage is a passage of the named document whose text contains the case's snippet.
Everything the scores need is read from the answer and from its trace record (GetTrace): the
retrieved set with ranks, the passages offered, the claims with the validator's verdicts."""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime as dt
import json
import os
import platform
import re
import sys
import time
import unicodedata
from pathlib import Path

import grpc
import yaml
from citetrace.common.v1 import common_pb2 as c
from citetrace.common.v1 import route_pb2 as r
from citetrace.kit.auth import bearer_metadata, mint_token
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as ret_grpc
from citetrace.vocab import INTENT
from e2e.conftest import BACKENDS, CORPUS, Stack, free_port, running_stack

from apps.cli.ingest import collect, parse_file
from services.generation.fault import ADDITION as INJECTED  # the unsupported_addition fault

REPO = Path(__file__).resolve().parents[2]
CASES = Path(__file__).resolve().parent / "cases.yaml"
RESULTS = REPO / "bench" / "results"
OUTCOMES = ("answered", "partially_answered", "abstained", "needs_clarification", "out_of_scope", "conflict",
            "source_unavailable")
OUTCOME_OF = {
    c.PART_OUTCOME_ANSWERED: "answered", c.PART_OUTCOME_PARTIALLY_ANSWERED: "partially_answered",
    c.PART_OUTCOME_ABSTAINED_NO_EVIDENCE: "abstained", c.PART_OUTCOME_UNRESOLVED: "unresolved",
    c.PART_OUTCOME_SOURCE_UNAVAILABLE: "source_unavailable", c.PART_OUTCOME_OUT_OF_SCOPE: "out_of_scope",
    c.PART_OUTCOME_NEEDS_CLARIFICATION: "needs_clarification", c.PART_OUTCOME_CONFLICT: "conflict",
}
# An abstention is an honest "cannot verify this": no evidence, or support undecided (to review).
ABSTAINING = {"abstained", "unresolved"}
RECALL_KS = (1, 3, 5, 8)
BUDGETS = (2, 4, 8)


# -- the labelled set ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Evidence:
    document: str
    contains: str = ""


@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    tenant: str
    question: str
    expect: str
    reason: str
    roles: tuple[str, ...] = ("patient",)
    location: str = ""
    locale: str = ""
    part: str = ""
    gold: tuple[Evidence, ...] = ()
    acceptable: tuple[Evidence, ...] = ()
    forbid: tuple[Evidence, ...] = ()
    unavailable: str = ""
    generator_fault: str = ""
    tags: tuple[str, ...] = ()
    # A second turn: the reply to the first answer's clarification, asked in its conversation; the
    # expectation (and every score) is about the reply's answer.
    reply: str = ""
    # The token's subject (a patient's subject is their patient reference: whose appointments the
    # gateway reads); default e2e-<tenant>.
    subject: str = ""
    # A change question: the part kinds the answer must have, in order, and its next action.
    parts: tuple[str, ...] = ()
    next_action: str = ""


def load_cases(path: Path = CASES) -> list[Case]:
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    cases, seen = [], set()
    fields = {f.name for f in dataclasses.fields(Case)}
    for i, item in enumerate(raw["cases"]):
        unknown = set(item) - fields
        if unknown:
            raise ValueError(f"{path}: case #{i} ({item.get('id')}): unknown keys {sorted(unknown)}")
        for key in ("id", "tenant", "question", "expect", "reason"):
            if not item.get(key):
                raise ValueError(f"{path}: case #{i} ({item.get('id')}): {key} is required")
        if item["expect"] not in OUTCOMES:
            raise ValueError(f"{path}: case {item['id']}: expect {item['expect']!r} not in {OUTCOMES}")
        if item["id"] in seen:
            raise ValueError(f"{path}: duplicate case id {item['id']}")
        seen.add(item["id"])
        ev = {k: tuple(Evidence(**e) for e in item.get(k) or ()) for k in ("gold", "acceptable", "forbid")}
        cases.append(Case(**{**item, **ev, "roles": tuple(item.get("roles") or ("patient",)),
                             "tags": tuple(item.get("tags") or ()), "parts": tuple(item.get("parts") or ())}))
    return cases


# -- gold resolution ------------------------------------------------------------------------------


@dataclasses.dataclass
class PassageInfo:
    passage_id: str
    tenant: str
    document: str
    version_id: str
    status: str
    text: str
    anchor: str = ""
    intents: tuple[str, ...] = ()
    location_scope: tuple[str, ...] = ()


def ingest_for_gold(stack: Stack, corpus: Path = CORPUS) -> dict[str, PassageInfo]:
    """Ingests every sample file through the API (idempotent) and returns its passages with text."""
    passages: dict[str, PassageInfo] = {}
    with stack.channel("retrieval") as channel:
        stub = ret_grpc.RetrievalServiceStub(channel)
        for path in collect([corpus]):
            source = parse_file(path)
            reply = stub.IngestDocument(source.request(), timeout=60, metadata=bearer_metadata(
                stack.token(source.tenant, roles=("policy_admin",))))
            text = source.body.replace("\r\n", "\n").replace("\r", "\n")
            for ident in reply.passages:
                passages[ident.passage_id] = PassageInfo(ident.passage_id, source.tenant, source.document_id,
                                                         ident.version_id, source.status,
                                                         text[ident.start:ident.end], ident.source_anchor,
                                                         tuple(source.intents), tuple(source.location_scope))
    return passages


def _squash(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).split())


def resolve(case: Case, evidence: tuple[Evidence, ...], passages: dict[str, PassageInfo]) -> set[str]:
    """Passage IDs of the named documents whose text contains the snippet (whitespace-insensitive)."""
    found = set()
    for ev in evidence:
        snippet = _squash(ev.contains)
        hits = {p.passage_id for p in passages.values() if p.document == ev.document
                and (not snippet or snippet in _squash(p.text))}
        if not hits:
            raise ValueError(f"case {case.id}: no passage of {ev.document} contains {ev.contains!r}")
        found |= hits
    return found


# -- asking --------------------------------------------------------------------------------------


@dataclasses.dataclass
class Observation:
    case: Case
    outcome: str
    part_kind: str
    retrieved: list[str]  # passage IDs in fused-rank order
    retrieved_tenants: set[str]
    offered: int
    chars_offered: int
    cited: set[str]  # passage IDs shown to the caller (claims and conflicts)
    claims: list[dict]  # {shown, support, cited: [...], factual}
    error: str = ""
    searched_intents: tuple[str, ...] = ()  # the intent filter of the part's Search (empty: none)
    searched: bool = False
    resolved_location: str = ""  # the route's location entity ("" when none was resolved)
    first_outcome: str = ""  # the first turn's outcome when the case has a reply
    part_kinds: tuple[str, ...] = ()  # every part's kind, in order (lowercase, no prefix)
    next_action: str = ""  # the answer's next action (lowercase, no prefix)


def _part_for(case: Case, response) -> tuple[object, int]:
    parts = list(response.parts)
    if case.part:
        kind = "PART_KIND_" + case.part.upper()
        for i, part in enumerate(parts):
            if r.PartKind.Name(part.kind) == kind:
                return part, i
        return None, -1
    return (parts[0], 0) if len(parts) == 1 else (None, -1)


def _metadata(stack: Stack, case: Case):
    if case.subject:
        return bearer_metadata(mint_token(stack.auth, tenant_id=case.tenant, subject=case.subject, roles=case.roles))
    return bearer_metadata(stack.token(case.tenant, case.roles))


def ask_case(stack: Stack, case: Case, target: str) -> Observation:
    from citetrace.orchestrator.v1 import orchestrator_service_pb2 as pb
    from citetrace.orchestrator.v1 import orchestrator_service_pb2_grpc as pb_grpc

    with stack.channel(target) as channel:
        try:
            response = pb_grpc.OrchestratorServiceStub(channel).Ask(
                pb.AskRequest(question=case.question, location_id=case.location, locale=case.locale), timeout=30,
                metadata=_metadata(stack, case))
        except grpc.RpcError as err:
            return Observation(case, f"error:{err.code().name}", "", [], set(), 0, 0, set(), [], err.details() or "")
        first_outcome = ""
        if case.reply:
            first_outcome = ",".join(OUTCOME_OF.get(p.outcome, "?") for p in response.parts)
            try:
                response = pb_grpc.OrchestratorServiceStub(channel).Ask(
                    pb.AskRequest(question=case.reply, location_id=case.location, locale=case.locale,
                                  conversation_id=response.conversation_id), timeout=30,
                    metadata=_metadata(stack, case))
            except grpc.RpcError as err:
                return Observation(case, f"error:{err.code().name}", "", [], set(), 0, 0, set(), [],
                                   err.details() or "")
    resolved_location = next((e.value for e in response.route.entities if e.kind == "location"), "")
    part, index = _part_for(case, response)
    prefix = ""
    if part is None:  # not the expected part: scored as a wrong outcome, retrieval still scored
        part, index, prefix = response.parts[0], 0, "wrong_part:"
    # Delivered by the orchestrator's outbox in the background: get_trace waits for it briefly.
    record = stack.get_trace(response.trace_id, tenant=case.tenant, roles=("auditor",) + tuple(case.roles)).record
    prec = next((p for p in record.parts if p.part_id == part.part_id), record.parts[index])
    hits = sorted(prec.retrieval.retrieved, key=lambda h: h.fused_rank or 10**6)
    cited = {cit.passage_id for claim in part.claims for cit in claim.citations}
    cited |= {conf.citation.passage_id for conf in part.conflicts}
    claims = []
    for cr in prec.claims:
        claims.append({
            "shown": cr.shown, "support": c.SupportVerdict.Name(cr.validation.support).removeprefix("SUPPORT_VERDICT_"),
            "cited": [cit.passage_id for cit in cr.validation.citations],
            "factual": cr.claim.claim_type != c.CLAIM_TYPE_NON_FACTUAL, "attempt": cr.attempt,
            "injected": INJECTED in cr.claim.text, "text": cr.claim.text,
        })
    return Observation(
        case, prefix + OUTCOME_OF.get(part.outcome, c.PartOutcome.Name(part.outcome)), r.PartKind.Name(part.kind),
        [h.passage.identity.passage_id for h in hits], {h.passage.identity.tenant_id for h in hits},
        prec.generation.passages_offered, prec.generation.chars_offered, cited, claims, prec.error,
        tuple(INTENT.name(i) for i in prec.retrieval.settings.filters.intents), prec.HasField("retrieval"),
        resolved_location, first_outcome,
        tuple(r.PartKind.Name(p.kind).removeprefix("PART_KIND_").lower() for p in response.parts),
        c.NextAction.Name(response.next_action).removeprefix("NEXT_ACTION_").lower())


# -- scoring -------------------------------------------------------------------------------------


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold()))


@dataclasses.dataclass(frozen=True)
class ClaimLabel:
    document: str
    claim: str
    label: str  # SUPPORTED | UNSUPPORTED


def load_claim_labels(path: Path = CASES) -> dict[tuple[str, str], str]:
    """The support labels written in the cases file (`claim_labels`): a claim's text (whitespace-
    insensitive) as cited from a document, and whether that document states it. A human's judgement,
    never computed: the validator's verdicts are scored against these and nothing else."""
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    labels: dict[tuple[str, str], str] = {}
    for i, item in enumerate(raw.get("claim_labels") or []):
        unknown = set(item) - {"document", "claim", "label", "note"}
        if unknown or not item.get("document") or not item.get("claim"):
            raise ValueError(f"{path}: claim_labels[{i}]: need document, claim, label (unknown keys {sorted(unknown)})")
        label = str(item.get("label", "")).upper()
        if label not in ("SUPPORTED", "UNSUPPORTED"):
            raise ValueError(f"{path}: claim_labels[{i}]: label must be supported or unsupported")
        key = (item["document"], _squash(item["claim"]))
        if key in labels:
            raise ValueError(f"{path}: claim_labels[{i}]: the claim is labelled twice for {item['document']}")
        labels[key] = label
    return labels


def support_label(claim: dict, passages: dict[str, PassageInfo], labels: dict[tuple[str, str], str]) -> str | None:
    """The label of a judged claim from the cases file, or None when nobody labelled it yet. A claim
    without any known cited passage is UNSUPPORTED by definition (nothing states it)."""
    documents = sorted({passages[pid].document for pid in claim["cited"] if pid in passages})
    if not documents:
        return "UNSUPPORTED"
    found = {labels[(doc, _squash(claim["text"]))] for doc in documents if (doc, _squash(claim["text"])) in labels}
    if not found:
        return None
    return "SUPPORTED" if "SUPPORTED" in found else "UNSUPPORTED"


def ratio(num: int | float, den: int) -> dict:
    return {"numerator": num, "denominator": den, "value": round(num / den, 4) if den else None}


def score(observations: list[Observation], passages: dict[str, PassageInfo],
          labels: dict[tuple[str, str], str] | None = None) -> tuple[dict, list[dict]]:
    labels = load_claim_labels() if labels is None else labels
    unlabelled: dict[tuple[str, str], dict] = {}
    per_case = []
    recall = {k: [0, 0] for k in RECALL_KS}
    gold_version_ranks: list[int] = []
    gold_passage_ranks: list[int] = []
    covered_missed: list[str] = []
    missed_by_cause = collections.Counter({"not_searched": 0, "intent_filter": 0, "ranking": 0})
    claims_needing, claims_cited = 0, 0
    shown_factual, shown_relevant = 0, 0
    support_agree, support_total = 0, 0
    support_matrix = collections.Counter()
    outcome_by = {o: [0, 0] for o in OUTCOMES}
    abst_tp = abst_pred = abst_true = 0
    refused_with_evidence = 0
    forbidden_cited: list[str] = []
    leaks: list[str] = []
    other_location: list[str] = []
    gold_cited = [0, 0]
    offered_sum, offered_n = 0, 0
    for ob in observations:
        case = ob.case
        gold = resolve(case, case.gold, passages)
        relevant = gold | resolve(case, case.acceptable, passages)
        forbidden = resolve(case, case.forbid, passages)
        gold_versions = {(passages[p].document, passages[p].version_id) for p in gold}
        row = {"id": case.id, "tenant": case.tenant, "expect": case.expect, "actual": ob.outcome,
               "ok": ob.outcome == case.expect, "part": ob.part_kind, "tags": list(case.tags)}
        outcome_by[case.expect][1] += 1
        outcome_by[case.expect][0] += row["ok"]
        predicted_abstain = ob.outcome in ABSTAINING
        abst_pred += predicted_abstain
        abst_true += case.expect == "abstained"
        abst_tp += predicted_abstain and case.expect == "abstained"
        if predicted_abstain and gold:
            refused_with_evidence += 1
        # Retrieval, where an answer rests on evidence and retrieval was reachable.
        if gold and not case.unavailable:
            ranks = [i + 1 for i, pid in enumerate(ob.retrieved) if pid in gold]
            version_ranks = [i + 1 for i, pid in enumerate(ob.retrieved)
                             if pid in passages and (passages[pid].document, passages[pid].version_id) in gold_versions]
            for k in RECALL_KS:
                recall[k][1] += 1
                recall[k][0] += bool(ranks and ranks[0] <= k)
            if version_ranks:
                gold_version_ranks.append(version_ranks[0])
            if ranks:
                gold_passage_ranks.append(ranks[0])
            else:
                covered_missed.append(case.id)
                # Why: no Search at all (routed to a part without retrieval), a Search whose intent
                # filter excludes every gold document (routing), or the retriever ranked it out.
                gold_intents = {i for p in gold for i in passages[p].intents}
                if not ob.searched:
                    cause = "not_searched"
                elif ob.searched_intents and not gold_intents & set(ob.searched_intents):
                    cause = "intent_filter"
                else:
                    cause = "ranking"
                missed_by_cause[cause] += 1
                row["missed_cause"] = cause
            row["gold_rank"] = ranks[0] if ranks else None
            gold_cited[1] += 1
            gold_cited[0] += bool(ob.cited & gold)
            row["gold_cited"] = bool(ob.cited & gold)
        # Claims: completeness (every shown factual claim has evidence) and support vs labels.
        for claim in ob.claims:
            if claim["shown"] and claim["factual"]:
                claims_needing += 1
                claims_cited += bool(claim["cited"])
                if relevant:
                    shown_factual += 1
                    shown_relevant += bool(set(claim["cited"]) & relevant)
            if claim["support"] in ("SUPPORTED", "UNSUPPORTED", "UNRESOLVED"):
                label = support_label(claim, passages, labels)
                if label is None:
                    documents = sorted({passages[p].document for p in claim["cited"] if p in passages})
                    unlabelled.setdefault((",".join(documents), _squash(claim["text"])), {
                        "case": case.id, "documents": documents, "claim": claim["text"],
                        "validator": claim["support"]})
                    continue
                support_total += 1
                support_agree += claim["support"] == label
                support_matrix[f"label {label} / validator {claim['support']}"] += 1
        bad = sorted(ob.cited & forbidden)
        if bad:
            forbidden_cited.append(case.id)
            row["forbidden_cited"] = bad
        if ob.retrieved_tenants - {case.tenant} or any(
                pid in passages and passages[pid].tenant != case.tenant for pid in ob.cited):
            leaks.append(case.id)
        scopes = [passages[pid].location_scope for pid in ob.cited if pid in passages]
        if any(scope and ob.resolved_location not in scope for scope in scopes):
            other_location.append(case.id)
            row["cited_other_location"] = True
        if ob.offered:
            offered_sum += ob.offered
            offered_n += 1
        if case.parts or case.next_action:
            row["flow_ok"] = (not case.parts or ob.part_kinds == case.parts) and \
                (not case.next_action or ob.next_action == case.next_action)
            row["flow"] = {"parts": list(ob.part_kinds), "next_action": ob.next_action}
        if ob.error:
            row["error"] = ob.error[:200]
        per_case.append(row)
    n = len(observations)
    by_tag: dict[str, list[int]] = {}
    for row in per_case:
        for tag in row["tags"]:
            by_tag.setdefault(tag, [0, 0])
            by_tag[tag][0] += row["ok"]
            by_tag[tag][1] += 1
    metrics = {
        "cases": n,
        "outcome_accuracy": ratio(sum(r["ok"] for r in per_case), n),
        "outcome_accuracy_by_expected": {o: ratio(*v) for o, v in outcome_by.items()},
        "outcome_accuracy_by_tag": {tag: ratio(*v) for tag, v in sorted(by_tag.items())},
        # Change questions: the expected parts in order and the expected next action.
        "change_flow_accuracy": ratio(sum(bool(r.get("flow_ok")) for r in per_case),
                                      sum("flow_ok" in r for r in per_case)),
        "retrieval_recall_at_k": {str(k): ratio(*v) for k, v in recall.items()},
        "mean_rank_gold_version": ratio(sum(gold_version_ranks), len(gold_version_ranks)),
        "mean_rank_gold_passage": ratio(sum(gold_passage_ranks), len(gold_passage_ranks)),
        "covered_question_missed": ratio(len(covered_missed), recall[RECALL_KS[0]][1]),
        "covered_question_missed_by_cause": dict(missed_by_cause),
        "gold_cited": ratio(*gold_cited),
        "citation_completeness": ratio(claims_cited, claims_needing),
        "support_correctness": ratio(support_agree, support_total),
        "shown_claims_citing_relevant_evidence": ratio(shown_relevant, shown_factual),
        "support_confusion": dict(sorted(support_matrix.items())),
        "support_unlabelled": len(unlabelled),
        "unlabelled_claims": list(unlabelled.values()),
        "abstention_precision": ratio(abst_tp, abst_pred),
        "abstention_recall": ratio(abst_tp, abst_true),
        "refused_with_gold_evidence": ratio(refused_with_evidence, sum(1 for o in observations if o.case.gold)),
        "forbidden_evidence_cited": ratio(len(forbidden_cited), sum(1 for o in observations if o.case.forbid)),
        "cross_tenant_leaks": ratio(len(leaks), n),
        # Answers citing a passage scoped to a location other than the one the route resolved (or
        # any location-scoped passage when none was resolved).
        "cited_other_location": ratio(len(other_location), sum(1 for o in observations if o.cited)),
        "cited_other_location_cases": other_location,
        "mean_passages_offered": ratio(offered_sum, offered_n),
        "covered_question_missed_cases": covered_missed,
        "forbidden_evidence_cited_cases": forbidden_cited,
        "cross_tenant_leak_cases": leaks,
    }
    return metrics, per_case


# -- the run -------------------------------------------------------------------------------------


def _orchestrator(stack: Stack, data_dir: Path, name: str, **settings: str) -> str:
    return stack.start_service("orchestrator", data_dir / name, default_deadline_seconds="10", **settings)


def run_eval(stack: Stack, data_dir: Path, cases: list[Case], budgets=BUDGETS, log=print) -> dict:
    started = time.monotonic()
    passages = ingest_for_gold(stack)
    for case in cases:  # fail early on a stale snippet
        for key in ("gold", "acceptable", "forbid"):
            resolve(case, getattr(case, key), passages)
    dead = f"127.0.0.1:{free_port()}"
    targets = {("", ""): stack.target("orchestrator")}
    for service, fault in sorted({(case.unavailable, case.generator_fault) for case in cases} - {("", "")}):
        settings = {f"{service}_target": dead} if service else {}
        if fault:  # the generation service's `test` backend, no regeneration: the fault stays
            settings["generation_target"] = stack.start_service(
                "generation", data_dir / f"gen-{fault}", backend="test", test_fault=fault, test_fault_attempts="0")
            settings["max_regenerations"] = "0"
        targets[(service, fault)] = _orchestrator(stack, data_dir, f"orch-{service or 'all'}-{fault or 'none'}",
                                                  **settings)
    observations = [ask_case(stack, case, targets[(case.unavailable, case.generator_fault)]) for case in cases]
    metrics, per_case = score(observations, passages)
    log(f"eval: {len(cases)} cases asked in {time.monotonic() - started:.1f}s")
    # Context budget: the answerable cases again, the orchestrator restarted with each budget.
    budget_rows = {}
    answerable = [case for case in cases if case.gold and not case.unavailable and not case.generator_fault
                  and case.expect in
                  ("answered", "partially_answered")]
    for budget in budgets:
        target = _orchestrator(stack, data_dir, f"budget-{budget}", context_max_passages=str(budget))
        obs = [ask_case(stack, case, target) for case in answerable]
        bm, _ = score(obs, passages)
        budget_rows[str(budget)] = {
            "context_max_passages": budget,
            "citation_coverage": bm["gold_cited"],
            "outcome_accuracy": bm["outcome_accuracy"],
            "citation_completeness": bm["citation_completeness"],
            "support_correctness": bm["support_correctness"],
            "mean_passages_offered": bm["mean_passages_offered"],
        }
    metrics["context_budget"] = {"default_context_max_passages": _default_budget(), "by_budget": budget_rows,
                                 "cases": len(answerable)}
    return {
        "schema": "citetrace.eval/v1",
        "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
        "stack": f"six services as processes (citetrace up), {stack.backend} search backend, extractive generator",
        "backend": stack.backend,
        "cases_file": str(CASES.relative_to(REPO)),
        "seconds": round(time.monotonic() - started, 1),
        "metrics": metrics,
        "cases": per_case,
    }


def _default_budget() -> int:
    from services.orchestrator.settings import Settings

    return Settings().context_max_passages


# -- report --------------------------------------------------------------------------------------


def _fmt(m: dict) -> str:
    v = m["value"]
    return f"{m['numerator']}/{m['denominator']}" + ("" if v is None else f" = {v:.3f}")


def table(result: dict) -> str:
    m = result["metrics"]
    rows = [("outcome accuracy (cases with the expected outcome / cases)", m["outcome_accuracy"])]
    for outcome, value in m["outcome_accuracy_by_expected"].items():
        if value["denominator"]:
            rows.append((f"  expected {outcome}", value))
    for k, value in m["retrieval_recall_at_k"].items():
        rows.append((f"retrieval recall@{k} (gold passage in top {k} / cases with gold)", value))
    rows += [
        ("mean rank of the gold version (sum of ranks / cases where found)", m["mean_rank_gold_version"]),
        ("mean rank of the gold passage (sum of ranks / cases where found)", m["mean_rank_gold_passage"]),
        ("covered question missed (gold exists, not retrieved / cases with gold)", m["covered_question_missed"]),
        ("gold cited (answers citing a gold passage / cases with gold)", m["gold_cited"]),
        ("citation completeness (shown factual claims with evidence / shown factual claims)",
         m["citation_completeness"]),
        ("support correctness (validator verdict = cases-file label / labelled claims)", m["support_correctness"]),
        ("shown claims citing gold/acceptable evidence / shown factual claims", m["shown_claims_citing_relevant_evidence"]),
        ("abstention precision (abstained and should / abstained)", m["abstention_precision"]),
        ("abstention recall (abstained and should / should abstain)", m["abstention_recall"]),
        ("refused with gold evidence (abstained / cases with gold)", m["refused_with_gold_evidence"]),
        ("forbidden evidence cited (cases / cases with a forbid list)", m["forbidden_evidence_cited"]),
        ("cross-tenant leaks (cases / cases)", m["cross_tenant_leaks"]),
        ("cited a passage of another location (cases / cases citing)", m["cited_other_location"]),
        ("passages offered (sum / parts that reached generation)", m["mean_passages_offered"]),
    ]
    for budget, row in m["context_budget"]["by_budget"].items():
        rows.append((f"citation coverage at {budget} passages offered (gold cited / answerable)",
                     row["citation_coverage"]))
    width = max(len(label) for label, _ in rows)
    lines = [f"{label:<{width}}  {_fmt(value)}" for label, value in rows]
    lines.append("outcome accuracy by case kind: " + ", ".join(
        f"{tag} {v['numerator']}/{v['denominator']}" for tag, v in m["outcome_accuracy_by_tag"].items()))
    if m.get("support_unlabelled"):
        lines.append(f"claims judged by the validator but not labelled in the cases file (not scored): "
                     f"{m['support_unlabelled']} (listed under metrics.unlabelled_claims)")
    causes = ", ".join(f"{k} {v}" for k, v in m["covered_question_missed_by_cause"].items())
    lines.append(f"covered question missed, by cause: {causes}")
    lines.append(f"context budget (default context_max_passages): {m['context_budget']['default_context_max_passages']}")
    failing = [f"  {row['id']}: expected {row['expect']}, got {row['actual']}" for row in result["cases"]
               if not row["ok"]]
    if failing:
        lines.append(f"cases with another outcome ({len(failing)}):")
        lines += failing
    return "\n".join(lines)


# -- regression check ----------------------------------------------------------------------------

# Rates where higher is better, and lower is better; each may move against us by at most TOLERANCE.
TOLERANCE = 0.05
HIGHER = ("outcome_accuracy", "change_flow_accuracy", "retrieval_recall_at_k.8", "retrieval_recall_at_k.3", "gold_cited",
          "citation_completeness", "support_correctness", "abstention_precision", "abstention_recall")
LOWER = ("covered_question_missed", "refused_with_gold_evidence", "forbidden_evidence_cited")
# Counts that may never grow at all.
NEVER_WORSE = ("cross_tenant_leaks", "cited_other_location")
MEAN_RANK_TOLERANCE = 0.5


def _get(metrics: dict, path: str) -> dict:
    node = metrics
    for key in path.split("."):
        node = node[key]
    return node


def regressions(current: dict, baseline: dict, tolerance: float = TOLERANCE) -> list[str]:
    cur, base = current["metrics"], baseline["metrics"]
    problems = []
    for path in HIGHER + LOWER:
        if path.split(".")[0] not in base or path.split(".")[0] not in cur:
            continue  # a metric the baseline predates
        now, before = _get(cur, path)["value"], _get(base, path)["value"]
        if now is None or before is None:
            continue
        worse = before - now if path in HIGHER else now - before
        if worse > tolerance + 1e-9:
            problems.append(f"{path}: {before:.3f} -> {now:.3f} (tolerance {tolerance})")
    for path in NEVER_WORSE:
        if path not in cur:
            continue
        before = base[path]["numerator"] if path in base else 0  # a metric the baseline predates: 0
        if _get(cur, path)["numerator"] > before:
            problems.append(f"{path}: {before} -> {_get(cur, path)['numerator']}")
    now, before = cur["mean_rank_gold_version"]["value"], base["mean_rank_gold_version"]["value"]
    if now is not None and before is not None and now - before > MEAN_RANK_TOLERANCE:
        problems.append(f"mean_rank_gold_version: {before:.2f} -> {now:.2f} (tolerance {MEAN_RANK_TOLERANCE})")
    for budget, row in base["context_budget"]["by_budget"].items():
        now_row = cur["context_budget"]["by_budget"].get(budget)
        if now_row and row["citation_coverage"]["value"] is not None and \
                row["citation_coverage"]["value"] - now_row["citation_coverage"]["value"] > tolerance + 1e-9:
            problems.append(f"citation coverage at {budget}: {row['citation_coverage']['value']:.3f} -> "
                            f"{now_row['citation_coverage']['value']:.3f} (tolerance {tolerance})")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=Path, default=CASES)
    parser.add_argument("--json", type=Path, default=RESULTS / "eval.json")
    parser.add_argument("--baseline", type=Path, default=RESULTS / "eval-baseline.json",
                        help="compare with this baseline (skipped when the file is missing)")
    parser.add_argument("--write-baseline", action="store_true", help="store this run as the baseline")
    parser.add_argument("--data-dir", type=Path, help="stack data dir (default: a temporary one)")
    parser.add_argument("--backend", choices=BACKENDS, default="embedded",
                        help="retrieval's search backend (opensearch: the local node, make opensearch-up)")
    args = parser.parse_args(argv)
    import tempfile

    cases = load_cases(args.cases)
    with tempfile.TemporaryDirectory(prefix="citetrace-eval-") as tmp:
        data_dir = args.data_dir or Path(tmp)
        with running_stack(data_dir / "stack", backend=args.backend) as stack:
            result = run_eval(stack, data_dir, cases, log=lambda m: print(m, file=sys.stderr))
    print(table(result))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"eval: wrote {args.json}")
    if args.write_baseline:
        args.baseline.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"eval: wrote baseline {args.baseline}")
        return 0
    if args.baseline.exists():
        problems = regressions(result, json.loads(args.baseline.read_text(encoding="utf-8")))
        if problems:
            print("eval: REGRESSION against the baseline:\n  " + "\n  ".join(problems))
            return 1
        print(f"eval: no regression beyond tolerance {TOLERANCE} against {args.baseline}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
