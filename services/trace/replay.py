"""Replay: re-run stored questions through the current pipeline and report what changed (no grpc).

`compare(old, new)` is a pure function over two TraceRecords: the stored one and the one the
current pipeline produced for the same question and `as_of` (either the new full record read back
from the trace service, or `record_from_answer(AskResponse)` when only the answer envelope is
available, in which case the retrieved set is unknown and not compared).

Per part (matched by kind, then by order among parts of that kind) it reports: passages added to
or removed from the retrieved set, rank changes of the passages the old answer cited, passages
added to or removed from the citation set, claim verdict changes (claims matched by text, then by
claim ID), and the outcome change. Regressions, which make `citetrace replay` exit non-zero:
* a supported answer became unsupported: a part (or the record) that was ANSWERED or
  PARTIALLY_ANSWERED is no longer answered, or a claim that was SUPPORTED no longer is;
* an abstention became an answer: a part (or the record) that was ABSTAINED_NO_EVIDENCE or
  OUT_OF_SCOPE is now ANSWERED or PARTIALLY_ANSWERED.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

from citetrace.citation_validator.v1 import citation_validator_service_pb2 as cv_pb
from citetrace.common.v1 import common_pb2 as c
from citetrace.common.v1 import route_pb2
from citetrace.trace.v1 import trace_service_pb2 as pb

ANSWERED = frozenset({c.PART_OUTCOME_ANSWERED, c.PART_OUTCOME_PARTIALLY_ANSWERED})
ABSTAINED = frozenset({c.PART_OUTCOME_ABSTAINED_NO_EVIDENCE, c.PART_OUTCOME_OUT_OF_SCOPE})


def outcome_name(value: int) -> str:
    return c.PartOutcome.Name(value).removeprefix("PART_OUTCOME_") if value in c.PartOutcome.values() else str(value)


def verdict_name(value: int | None) -> str:
    if value is None:
        return "ABSENT"
    return c.SupportVerdict.Name(value).removeprefix("SUPPORT_VERDICT_")


def kind_name(value: int) -> str:
    return route_pb2.PartKind.Name(value).removeprefix("PART_KIND_") if value in route_pb2.PartKind.values() \
        else str(value)


@dataclasses.dataclass(frozen=True)
class RankChange:
    passage_id: str
    old_rank: int
    new_rank: int | None  # None: no longer in the retrieved set


@dataclasses.dataclass(frozen=True)
class ClaimChange:
    key: str  # the claim text when known, else its ID
    old_verdict: int | None  # None: the claim did not exist
    new_verdict: int | None


@dataclasses.dataclass
class PartDiff:
    kind: str
    old_part_id: str
    new_part_id: str
    old_outcome: int
    new_outcome: int
    retrieved_known: bool = True
    retrieved_added: list[str] = dataclasses.field(default_factory=list)
    retrieved_removed: list[str] = dataclasses.field(default_factory=list)
    rank_changes: list[RankChange] = dataclasses.field(default_factory=list)
    citations_added: list[str] = dataclasses.field(default_factory=list)
    citations_removed: list[str] = dataclasses.field(default_factory=list)
    claim_changes: list[ClaimChange] = dataclasses.field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.old_outcome != self.new_outcome or self.retrieved_added or self.retrieved_removed
                    or self.rank_changes or self.citations_added or self.citations_removed or self.claim_changes)


@dataclasses.dataclass
class TraceDiff:
    trace_id: str
    new_trace_id: str
    old_outcome: int
    new_outcome: int
    parts: list[PartDiff]
    regressions: list[str]

    @property
    def changed(self) -> bool:
        return self.old_outcome != self.new_outcome or any(p.changed for p in self.parts)

    @property
    def regressed(self) -> bool:
        return bool(self.regressions)


def _keyed_parts(record: pb.TraceRecord) -> dict[tuple[int, int], pb.PartRecord]:
    seen: dict[int, int] = {}
    out: dict[tuple[int, int], pb.PartRecord] = {}
    for part in record.parts:
        n = seen.get(part.kind, 0)
        seen[part.kind] = n + 1
        out[(part.kind, n)] = part
    return out


def _ranks(part: pb.PartRecord) -> dict[str, int]:
    ranks: dict[str, int] = {}
    for position, hit in enumerate(part.retrieval.retrieved, start=1):
        ranks.setdefault(hit.passage.identity.passage_id, hit.fused_rank or position)
    return ranks


def _claims(part: pb.PartRecord) -> list[tuple[str, str, int]]:
    """(text key, claim id, verdict) per claim, text normalized for matching."""
    return [(" ".join(cr.claim.text.lower().split()), cr.claim.claim_id or cr.validation.claim_id,
             cr.validation.support) for cr in part.claims]


def _claim_changes(old: pb.PartRecord, new: pb.PartRecord) -> list[ClaimChange]:
    old_claims, new_claims = _claims(old), _claims(new)
    unmatched_new = list(range(len(new_claims)))
    changes: list[ClaimChange] = []
    pairs: list[tuple[int, int | None]] = []
    for i, (text, _, _) in enumerate(old_claims):  # by text first
        match = next((j for j in unmatched_new if text and new_claims[j][0] == text), None)
        if match is not None:
            unmatched_new.remove(match)
        pairs.append((i, match))
    resolved: list[tuple[int, int | None]] = []
    for i, match in pairs:  # then by claim ID
        if match is None:
            cid = old_claims[i][1]
            match = next((j for j in unmatched_new if cid and new_claims[j][1] == cid
                          and not (old_claims[i][0] and new_claims[j][0])), None)
            if match is not None:
                unmatched_new.remove(match)
        resolved.append((i, match))
    for i, j in resolved:
        text, cid, verdict = old_claims[i]
        new_verdict = new_claims[j][2] if j is not None else None
        if new_verdict != verdict:
            changes.append(ClaimChange(text or cid, verdict, new_verdict))
    for j in unmatched_new:
        text, cid, verdict = new_claims[j]
        changes.append(ClaimChange(text or cid, None, verdict))
    return changes


def compare(old: pb.TraceRecord, new: pb.TraceRecord, *, new_retrieved_known: bool = True) -> TraceDiff:
    old_parts, new_parts = _keyed_parts(old), _keyed_parts(new)
    diffs: list[PartDiff] = []
    regressions: list[str] = []
    for key in list(old_parts) + [k for k in new_parts if k not in old_parts]:
        o, n = old_parts.get(key), new_parts.get(key)
        kind = kind_name(key[0]) + (f"#{key[1] + 1}" if key[1] else "")
        diff = PartDiff(kind=kind, old_part_id=o.part_id if o else "", new_part_id=n.part_id if n else "",
                        old_outcome=o.outcome if o else c.PART_OUTCOME_UNSPECIFIED,
                        new_outcome=n.outcome if n else c.PART_OUTCOME_UNSPECIFIED,
                        retrieved_known=new_retrieved_known)
        o = o or pb.PartRecord()
        n = n or pb.PartRecord()
        old_ranks, new_ranks = _ranks(o), _ranks(n)
        if new_retrieved_known:
            diff.retrieved_added = [p for p in new_ranks if p not in old_ranks]
            diff.retrieved_removed = [p for p in old_ranks if p not in new_ranks]
            for pid in dict.fromkeys(ci.passage_id for ci in o.citations):
                if pid in old_ranks and new_ranks.get(pid) != old_ranks[pid]:
                    diff.rank_changes.append(RankChange(pid, old_ranks[pid], new_ranks.get(pid)))
        old_cited = list(dict.fromkeys(ci.passage_id for ci in o.citations))
        new_cited = list(dict.fromkeys(ci.passage_id for ci in n.citations))
        diff.citations_added = [p for p in new_cited if p not in old_cited]
        diff.citations_removed = [p for p in old_cited if p not in new_cited]
        diff.claim_changes = _claim_changes(o, n)
        regressions += _regressions(f"part {kind}", diff.old_outcome, diff.new_outcome)
        for change in diff.claim_changes:
            if change.old_verdict == c.SUPPORT_VERDICT_SUPPORTED and change.new_verdict is not None:
                regressions.append(f"part {kind}: claim {change.key!r} was SUPPORTED, now "
                                   f"{verdict_name(change.new_verdict)}")
        diffs.append(diff)
    if old.outcome and new.outcome:
        regressions = _regressions("answer", old.outcome, new.outcome) + regressions
    return TraceDiff(old.trace_id, new.trace_id, old.outcome, new.outcome, diffs, regressions)


def _regressions(what: str, old: int, new: int) -> list[str]:
    if old in ANSWERED and new not in ANSWERED:
        return [f"{what}: supported answer became unsupported ({outcome_name(old)} -> {outcome_name(new)})"]
    if old in ABSTAINED and new in ANSWERED:
        return [f"{what}: abstention became an answer ({outcome_name(old)} -> {outcome_name(new)})"]
    return []


def record_from_answer(answer) -> pb.TraceRecord:
    """A TraceRecord holding what an AskResponse tells (parts, outcomes, claims with verdicts and
    citations); it has no retrieved set. The record outcome is left unspecified."""
    record = pb.TraceRecord(trace_id=answer.trace_id, route=answer.route)
    for part in answer.parts:
        out = pb.PartRecord(part_id=part.part_id, kind=part.kind, outcome=part.outcome,
                            next_action=part.next_action, answer_text=part.answer_text, slots=part.slots)
        seen: set[str] = set()
        for claim in part.claims:
            out.claims.append(pb.ClaimRecord(
                claim=c.Claim(claim_id=claim.claim_id, text=claim.text, claim_type=claim.claim_type,
                              evidence_labels=[ci.label for ci in claim.citations]),
                validation=cv_pb.ClaimValidation(claim_id=claim.claim_id, support=claim.support,
                                                 citations=claim.citations),
                shown=True))
            for ci in claim.citations:
                if ci.passage_id not in seen:
                    seen.add(ci.passage_id)
                    out.citations.append(ci)
        for withheld in part.withheld:
            out.claims.append(pb.ClaimRecord(
                claim=c.Claim(claim_id=withheld.claim_id),
                validation=cv_pb.ClaimValidation(claim_id=withheld.claim_id, support=withheld.support,
                                                 withheld=True),
                shown=False))
            out.reasons.extend(withheld.reasons)
        record.parts.append(out)
    return record


@dataclasses.dataclass
class ReplayResult:
    trace_id: str
    diff: TraceDiff | None = None
    error: str = ""
    skipped: str = ""


# ask(old_record) -> (new_record, retrieved_known); raises on failure.
Ask = Callable[[pb.TraceRecord], tuple[pb.TraceRecord, bool]]


def replay(records: Iterable[pb.TraceRecord], ask: Ask) -> list[ReplayResult]:
    results: list[ReplayResult] = []
    for old in records:
        if old.query.redacted:
            results.append(ReplayResult(old.trace_id, skipped="query text redacted by retention"))
            continue
        if not old.query.raw:
            results.append(ReplayResult(old.trace_id, skipped="query text not readable (needs reviewer or auditor)"))
            continue
        try:
            new, known = ask(old)
        except Exception as exc:  # noqa: BLE001 - one failed replay must not stop the others
            results.append(ReplayResult(old.trace_id, error=str(exc) or type(exc).__name__))
            continue
        results.append(ReplayResult(old.trace_id, diff=compare(old, new, new_retrieved_known=known)))
    return results


def render(result: ReplayResult) -> list[str]:
    if result.skipped:
        return [f"{result.trace_id}: skipped ({result.skipped})"]
    if result.error:
        return [f"{result.trace_id}: ERROR {result.error}"]
    d = result.diff
    assert d is not None
    head = (f"{d.trace_id} -> {d.new_trace_id or '-'}: "
            + ("REGRESSED" if d.regressed else "changed" if d.changed else "unchanged")
            + (f" (answer {outcome_name(d.old_outcome)} -> {outcome_name(d.new_outcome)})"
               if d.old_outcome != d.new_outcome and d.new_outcome else ""))
    lines = [head]
    for p in d.parts:
        if not p.changed:
            continue
        lines.append(f"  part {p.kind}: {outcome_name(p.old_outcome)} -> {outcome_name(p.new_outcome)}")
        if not p.retrieved_known:
            lines.append("    retrieved set: not compared (the new record was not readable)")
        for pid in p.retrieved_added:
            lines.append(f"    + retrieved {pid}")
        for pid in p.retrieved_removed:
            lines.append(f"    - retrieved {pid}")
        for r in p.rank_changes:
            lines.append(f"    rank of cited {r.passage_id}: {r.old_rank} -> {r.new_rank if r.new_rank else 'gone'}")
        for pid in p.citations_added:
            lines.append(f"    + cited {pid}")
        for pid in p.citations_removed:
            lines.append(f"    - cited {pid}")
        for ch in p.claim_changes:
            lines.append(f"    claim {ch.key!r}: {verdict_name(ch.old_verdict)} -> {verdict_name(ch.new_verdict)}")
    lines += [f"  REGRESSION: {r}" for r in d.regressions]
    return lines
