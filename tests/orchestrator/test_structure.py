"""The orchestrator's shape (issue 13): a core of plain values (no protobuf, no grpc), one codec
table per enum, mirrors that cannot silently drop a field, wording as versioned data per locale,
and one assembler building the answer and its trace record from the same result."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import pytest
from citetrace.citation_validator.v1 import citation_validator_service_pb2 as cv_pb
from citetrace.common.v1 import appointments_pb2 as ap_pb
from citetrace.common.v1 import common_pb2 as c_pb
from citetrace.generation.v1 import generation_service_pb2 as gen_pb
from citetrace.retrieval.v1 import retrieval_service_pb2 as ret_pb
from source_reading import imports_of

from services.orchestrator import assembler, codec
from services.orchestrator.core import model as m
from services.orchestrator.core.wording import WORDING_DIR, WordingError, load_catalog

CORE = Path(__file__).resolve().parents[2] / "services" / "orchestrator" / "core"


def _imports(path: Path) -> set[str]:
    return imports_of(path)


def test_the_core_imports_neither_protobuf_nor_grpc():
    files = sorted(CORE.glob("*.py"))
    assert len(files) > 10
    for path in files:
        bad = {n for n in _imports(path) if n.startswith(("grpc", "google.protobuf")) or n.endswith("_pb2")
               or "_pb2." in n or n.endswith("_pb2_grpc")}
        assert not bad, f"{path.name} imports {sorted(bad)}"


MIRRORS = [
    (m.PassageIdentity, c_pb.PassageIdentity), (m.Passage, c_pb.Passage), (m.LabelledPassage, c_pb.LabelledPassage),
    (m.Hit, ret_pb.SearchHit), (m.AppliedFilters, ret_pb.AppliedFilters), (m.RetrievalSettings, ret_pb.RetrievalSettings),
    (m.Citation, c_pb.Citation), (m.Claim, c_pb.Claim), (m.Finding, cv_pb.Finding),
    (m.ClaimValidation, cv_pb.ClaimValidation), (m.ValidationResult, cv_pb.ValidateResponse),
    (m.GeneratorInfo, gen_pb.GeneratorInfo), (m.ClaimFeedback, gen_pb.ClaimFeedback), (m.Slot, c_pb.Slot),
    (m.Appointment, ap_pb.Appointment), (m.PolicyConsequence, ap_pb.PolicyConsequence), (m.Proposal, ap_pb.Proposal),
]


@pytest.mark.parametrize(("domain", "message"), MIRRORS, ids=lambda x: getattr(x, "__name__", ""))
def test_every_mirrored_message_field_has_a_domain_field(domain, message):
    """A field added to the contract must be added to the mirror (and the codec), or the trace
    would silently lose it."""
    assert {f.name for f in dataclasses.fields(domain)} == set(message.DESCRIPTOR.fields_by_name)


def test_generation_result_mirrors_the_reply():
    assert {f.name for f in dataclasses.fields(m.GenerationResult)} == set(gen_pb.GenerateResponse.DESCRIPTOR.fields_by_name)


def test_enum_tables_are_complete_both_ways():
    tables = [v for v in vars(codec).values() if isinstance(v, codec.EnumTable)]
    assert len(tables) == 15
    assert all(not t.unknown for t in tables), [t.unknown for t in tables if t.unknown]
    for table, domain in ((codec.OUTCOME, m.Outcome), (codec.NEXT_ACTION, m.NextAction), (codec.INTENT, m.Intent),
                          (codec.PART_KIND, m.PartKind), (codec.FAILURE_REASON, m.FailureReason),
                          (codec.APPOINTMENT_STATUS, m.AppointmentStatus), (codec.CHANGE_KIND, m.ChangeKind),
                          (codec.PROPOSAL_STATUS, m.ProposalStatus), (codec.CONSEQUENCE_KIND, m.ConsequenceKind)):
        assert set(table.to_pb) == set(domain)
        assert all(table.domain(table.pb(member)) == member for member in domain)
    assert codec.INTENT.pb(None) == 0 and codec.INTENT.domain(0) is None
    assert codec.OUTCOME.domain(999) == m.Outcome.UNSPECIFIED  # a newer peer's value


def test_wording_is_one_versioned_file_per_locale_and_the_locale_picks_it():
    catalog = load_catalog()
    assert {"en", "nb-no"} <= set(catalog.by_locale)
    for locale, expected in (("nb-NO", "nb-NO"), ("nb", "nb-NO"), ("no", "nb-NO"), ("nb_no", "nb-NO"),
                             ("en-GB", "en"), ("fr-FR", "en"), ("", "en")):
        assert catalog.for_locale(locale).locale == expected
    assert all(w.version.startswith("wording-") for w in catalog.by_locale.values())


def test_a_locale_file_missing_a_message_or_a_placeholder_is_refused(tmp_path):
    english = (WORDING_DIR / "en.yaml").read_text()
    (tmp_path / "en.yaml").write_text(english)
    broken = english.replace("locale: en", "locale: de").replace("languages: [en]", "languages: [de]")
    (tmp_path / "de.yaml").write_text(broken.replace("{candidates}", "{kandidaten}"))
    load_catalog.cache_clear()
    try:
        with pytest.raises(WordingError, match="clarify.which_clinic"):
            load_catalog(tmp_path)
    finally:
        load_catalog.cache_clear()


def _result() -> m.AskResult:
    ident = m.PassageIdentity("p1", "t", "doc", "v1", 0, 10, "d" * 64, "Arrival", "preparation_instructions")
    hit = m.Hit(m.Passage(ident, "Arrive early.", "Arrival", "Doc"), "S1", 1.0, 1, 0.5, 1, 0.03, 1)
    # A validator citation without a link: the answer shows it as the validator bound it.
    citation = m.Citation("S1", "p1", "doc", "v1", 0, 10, "d" * 64, "Arrival", "preparation_instructions", "", "")
    claim = m.Claim("c1", "Arrive early.", ("S1",), m.ClaimType.ARRIVAL_RULE)
    validation = m.ClaimValidation("c1", support=m.Support.SUPPORTED, citations=(citation,))
    part = m.PartResult(
        "p1", m.PartKind.ARRIVAL_PREPARATION, m.Intent.ARRIVAL_PREPARATION,
        claims=(m.AnsweredClaim("c1", claim.text, (citation,), m.Support.SUPPORTED, claim.claim_type),),
        retrieval=m.SearchResult((hit,), m.RetrievalSettings(backend="embedded", index_generation="g1")),
        claim_attempts=[m.ClaimAttempt(claim, validation, 1, True)], citations=(citation,),
    ).settle(m.Outcome.ANSWERED, "Arrive early.", m.NextAction.NONE)
    now = dt.datetime(2026, 12, 1, 9, tzinfo=dt.UTC)
    return m.AskResult("abc", m.Asker("t", "subj", ("patient",)), now, "When?", "When?", now, "en", "wording-en-x",
                       parts=[part], outcome=m.Outcome.ANSWERED, next_action=m.NextAction.NONE,
                       corpus=m.CorpusSnapshot("embedded", "g1", ("v1",)))


def test_one_assembly_builds_answer_and_record_from_the_same_part():
    built = assembler.assemble(_result())
    answer, record = built.response.parts[0], built.record.parts[0]
    assert (answer.outcome, answer.answer_text, answer.next_action) == \
        (record.outcome, record.answer_text, record.next_action) == \
        (c_pb.PART_OUTCOME_ANSWERED, "Arrive early.", c_pb.NEXT_ACTION_NONE)
    assert answer.claims[0].citations[0].link == "", "links are the validator's, never recomputed"
    assert record.retrieval.retrieved[0].passage.text == "", "the record keeps passage identities only"
    assert record.retrieval.retrieved[0].passage.identity.content_sha256 == "d" * 64
    assert built.record.wording_version == "wording-en-x" and built.record.wording_locale == "en"
    assert list(built.record.corpus.version_ids) == ["v1"]


def test_an_appointment_and_a_proposal_reach_the_answer_and_the_record_alike():
    """The APPOINTMENT part's appointments and the CHANGE_PROPOSAL part's proposal survive the
    codec both ways and appear in the answer, the record and the answer's proposal IDs."""
    result = _result()
    when = dt.datetime(2026, 12, 3, 12, tzinfo=dt.UTC)
    appointment = m.Appointment("appt-1", "pat-1", m.AppointmentStatus.BOOKED, 3, "slot-a", "loc-1", "Loc One",
                                "Clinic", "UTC", "dr-1", "Dr. One", "cardiology", "follow_up", when,
                                when + dt.timedelta(minutes=30), when, when)
    citation = result.parts[0].citations[0]
    proposal = m.Proposal(
        "prop-1", m.ChangeKind.RESCHEDULE, m.ProposalStatus.PENDING, "pat-1", appointment,
        (m.Slot("slot-b", 2, "loc-1", start_time=when, status=m.SlotStatus.FREE),),
        (m.PolicyConsequence(m.ConsequenceKind.FEE, "A fee applies.", (citation,), m.Support.SUPPORTED, "why", "p1"),),
        False, "", when, when, None, "ref", "", "abc", "", "", "", "", "rules-1", ("v1",), 1)
    assert codec.proposal_from_pb(codec.proposal_pb(proposal)) == proposal
    assert codec.appointment_from_pb(codec.appointment_pb(appointment)) == appointment
    result.parts.append(m.PartResult("p2", m.PartKind.APPOINTMENT, appointments=(appointment,)))
    result.parts.append(m.PartResult("p3", m.PartKind.CHANGE_PROPOSAL, proposal=proposal).settle(
        m.Outcome.ANSWERED, "Confirm?", m.NextAction.CONFIRM_CHANGE))
    built = assembler.assemble(result)
    assert list(built.response.proposal_ids) == ["prop-1"]
    for parts in (built.response.parts, built.record.parts):
        assert parts[1].appointments[0].version == 3 and parts[2].proposal.proposal_id == "prop-1"
        assert parts[2].proposal.consequences[0].citations[0].version_id == "v1"
