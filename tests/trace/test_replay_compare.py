"""The pure comparison behind `citetrace replay`: retrieved-set changes, rank changes of cited
passages, citation and claim-verdict changes, and the two regressions that fail a replay."""

from __future__ import annotations

from citetrace.common.v1 import common_pb2 as c
from citetrace.common.v1 import route_pb2 as r
from citetrace.orchestrator.v1 import orchestrator_service_pb2 as orch
from citetrace.trace.v1 import trace_service_pb2 as pb
from tracefixtures import CANCEL_RULE, MRI_OTHER, MRI_RULE, citation, make_record

from services.trace.replay import ReplayResult, compare, record_from_answer, render, replay

PID = MRI_RULE.identity.passage_id
OTHER = MRI_OTHER.identity.passage_id
CANCEL = CANCEL_RULE.identity.passage_id


def copy(record: pb.TraceRecord, trace_id: str = "new") -> pb.TraceRecord:
    out = pb.TraceRecord()
    out.CopyFrom(record)
    out.trace_id = trace_id
    return out


def test_identical_records_are_unchanged():
    old = make_record("old")
    diff = compare(old, copy(old))
    assert not diff.changed and not diff.regressed
    assert render_of(old, copy(old))[0] == "old -> new: unchanged"


def render_of(old, new):
    return render(ReplayResult(old.trace_id, diff=compare(old, new)))


def test_passages_added_and_removed_from_the_retrieved_set():
    old = make_record("old", retrieved=(MRI_RULE, MRI_OTHER))
    new = make_record("new", retrieved=(MRI_RULE, CANCEL_RULE))
    part = compare(old, new).parts[0]
    assert part.retrieved_added == [CANCEL] and part.retrieved_removed == [OTHER]
    assert part.rank_changes == []  # the cited passage kept rank 1
    assert not compare(old, new).regressed


def test_rank_change_of_a_cited_passage_and_a_cited_passage_dropping_out():
    old = make_record("old", retrieved=(MRI_RULE, MRI_OTHER))
    demoted = make_record("new", retrieved=(MRI_OTHER, MRI_RULE))
    [change] = compare(old, demoted).parts[0].rank_changes
    assert (change.passage_id, change.old_rank, change.new_rank) == (PID, 1, 2)
    gone = make_record("new", retrieved=(MRI_OTHER,), cited=(MRI_OTHER,))
    part = compare(old, gone).parts[0]
    assert [(x.passage_id, x.new_rank) for x in part.rank_changes] == [(PID, None)]
    assert part.citations_added == [OTHER] and part.citations_removed == [PID]
    assert "rank of cited" in "\n".join(render_of(old, gone)) and "gone" in "\n".join(render_of(old, gone))


def test_supported_answer_becoming_unsupported_is_a_regression():
    old = make_record("old")
    new = make_record("new", outcome=c.PART_OUTCOME_ABSTAINED_NO_EVIDENCE, verdict=c.SUPPORT_VERDICT_UNSUPPORTED,
                      cited=())
    diff = compare(old, new)
    assert diff.regressed
    assert any("supported answer became unsupported (ANSWERED -> ABSTAINED_NO_EVIDENCE)" in x for x in diff.regressions)
    assert any("was SUPPORTED, now UNSUPPORTED" in x for x in diff.regressions)
    [claim] = diff.parts[0].claim_changes
    assert (claim.old_verdict, claim.new_verdict) == (c.SUPPORT_VERDICT_SUPPORTED, c.SUPPORT_VERDICT_UNSUPPORTED)


def test_claim_verdict_drop_alone_is_a_regression_even_when_the_part_stays_answered():
    old = make_record("old")
    new = make_record("new", verdict=c.SUPPORT_VERDICT_UNRESOLVED)
    diff = compare(old, new)
    assert diff.regressed and diff.parts[0].old_outcome == diff.parts[0].new_outcome
    assert diff.regressions == ["part ARRIVAL_PREPARATION: claim 'arrive 30 minutes early.' was SUPPORTED, now UNRESOLVED"]


def test_abstention_becoming_an_answer_is_a_regression_but_the_reverse_improvement_of_unavailable_is_not():
    old = make_record("old", outcome=c.PART_OUTCOME_ABSTAINED_NO_EVIDENCE, verdict=c.SUPPORT_VERDICT_UNSUPPORTED,
                      cited=())
    new = make_record("new")
    diff = compare(old, new)
    assert any("abstention became an answer" in x for x in diff.regressions)
    out_of_scope = make_record("old", outcome=c.PART_OUTCOME_OUT_OF_SCOPE, cited=())
    assert compare(out_of_scope, new).regressed
    unavailable = make_record("old", outcome=c.PART_OUTCOME_SOURCE_UNAVAILABLE, cited=(),
                              verdict=c.SUPPORT_VERDICT_UNSPECIFIED)
    recovered = compare(unavailable, new)
    assert recovered.changed and not recovered.regressed
    # UNSUPPORTED -> SUPPORTED is an improvement, not a regression.
    assert not compare(make_record("o", verdict=c.SUPPORT_VERDICT_UNSUPPORTED), new).regressed


def test_parts_are_matched_by_kind_and_a_missing_answered_part_regresses():
    old = make_record("old")
    slot_part = pb.PartRecord(part_id="p0", kind=r.PART_KIND_LIVE_SLOT, outcome=c.PART_OUTCOME_ANSWERED)
    old.parts.insert(0, slot_part)
    new = copy(old)
    new.parts[0].part_id, new.parts[1].part_id = "x-arrival", "x-slots"  # IDs differ, kinds match
    new.parts[0].kind, new.parts[1].kind = new.parts[1].kind, new.parts[0].kind
    new.parts[0].CopyFrom(old.parts[1])
    new.parts[1].CopyFrom(slot_part)
    assert not compare(old, new).changed
    dropped = copy(old)
    del dropped.parts[0]
    diff = compare(old, dropped)
    assert any("part LIVE_SLOT: supported answer became unsupported (ANSWERED -> UNSPECIFIED)" in x
               for x in diff.regressions)


def test_new_claims_are_reported_and_claims_match_by_text_not_position():
    old = make_record("old")
    new = copy(old)
    extra = new.parts[0].claims.add()
    extra.CopyFrom(old.parts[0].claims[0])
    extra.claim.claim_id = "c0"
    extra.claim.text = "Bring your referral letter."
    # Reorder: the new claim first, the old one renamed c2 but with the same text.
    claims = [pb.ClaimRecord(), pb.ClaimRecord()]
    claims[0].CopyFrom(new.parts[0].claims[1])
    claims[1].CopyFrom(new.parts[0].claims[0])
    claims[1].claim.claim_id = "c2"
    del new.parts[0].claims[:]
    new.parts[0].claims.extend(claims)
    [change] = compare(old, new).parts[0].claim_changes
    assert change.key == "bring your referral letter." and change.old_verdict is None
    assert change.new_verdict == c.SUPPORT_VERDICT_SUPPORTED


def test_answer_envelope_comparison_without_a_retrieved_set():
    old = make_record("old")
    answer = orch.AskResponse(trace_id="new-trace", parts=[orch.AnswerPart(
        part_id="p9", kind=r.PART_KIND_ARRIVAL_PREPARATION, outcome=c.PART_OUTCOME_PARTIALLY_ANSWERED,
        claims=[orch.AnsweredClaim(claim_id="c1", text="Arrive 30 minutes early.",
                                   citations=[citation("S1", MRI_RULE)], support=c.SUPPORT_VERDICT_SUPPORTED)],
        withheld=[orch.WithheldClaim(claim_id="c2", reasons=[c.FAILURE_REASON_UNSUPPORTED_CLAIM],
                                     support=c.SUPPORT_VERDICT_UNSUPPORTED)])])
    new = record_from_answer(answer)
    assert new.trace_id == "new-trace" and list(new.parts[0].reasons) == [c.FAILURE_REASON_UNSUPPORTED_CLAIM]
    diff = compare(old, new, new_retrieved_known=False)
    part = diff.parts[0]
    assert not part.retrieved_known and part.retrieved_removed == [] and part.rank_changes == []
    assert part.citations_added == [] and part.citations_removed == []
    assert [(x.key, x.old_verdict, x.new_verdict) for x in part.claim_changes] == [
        ("c2", None, c.SUPPORT_VERDICT_UNSUPPORTED)]
    assert not diff.regressed  # ANSWERED -> PARTIALLY_ANSWERED still answers; record outcome unknown
    assert "not compared" in "\n".join(render(ReplayResult("old", diff=diff)))


def test_replay_skips_redacted_and_unreadable_questions_and_isolates_failures():
    redacted = make_record("redacted")
    redacted.query.Clear()
    redacted.query.redacted = True
    hidden = make_record("hidden")
    hidden.query.Clear()
    ok = make_record("ok")
    boom = make_record("boom")
    asked = []

    def ask(old):
        asked.append((old.trace_id, old.query.raw, old.as_of.seconds))
        if old.trace_id == "boom":
            raise RuntimeError("UNAVAILABLE: orchestrator down")
        return copy(old, "ok-again"), True

    results = {x.trace_id: x for x in replay([redacted, hidden, ok, boom], ask)}
    assert "redacted" in results["redacted"].skipped and "reviewer" in results["hidden"].skipped
    assert results["ok"].diff is not None and not results["ok"].diff.changed
    assert results["boom"].error == "UNAVAILABLE: orchestrator down"
    assert asked == [("ok", ok.query.raw, ok.as_of.seconds), ("boom", boom.query.raw, boom.as_of.seconds)]
