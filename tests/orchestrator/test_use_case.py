"""The Ask use case on plain values, built by the bootstrap with in-memory ports (the gRPC path is
tests/orchestrator/test_ask_inprocess.py): the gate runs once, generation gets every hit and cuts
the budget itself, wording follows the locale and the record names the wording."""

from __future__ import annotations

import datetime as dt

from citetrace.common.v1 import common_pb2 as c_pb
from citetrace.kit.auth import Principal

from services.orchestrator.bootstrap import Downstream, build_core
from services.orchestrator.core import model as m
from services.orchestrator.core.clinics import LocationInfo
from services.orchestrator.core.parts import AskRequest
from services.orchestrator.settings import Settings

AS_OF = dt.datetime(2026, 11, 30, 13, 0, tzinfo=dt.UTC)
PATIENT = Principal("acme-health", "subj", ("patient",))


class Scheduler:
    def list_locations(self, page_token, timeout):
        return [LocationInfo("acme-harbor", "Harbor Imaging Center", "", "Europe/Oslo", ("imaging",))], ""

    def find_slots(self, query, timeout):
        start = query.start_time + dt.timedelta(hours=2)
        return m.SlotResult((m.Slot("s1", 1, query.location_id, time_zone="Europe/Oslo", specialty=query.specialty,
                                    start_time=start, status=m.SlotStatus.FREE),), AS_OF)


def _hit(n: int) -> m.Hit:
    ident = m.PassageIdentity(f"p{n}", "acme-health", "acme-mri", "v1", n * 10, n * 10 + 9, "d" * 64, "Arrival",
                              "preparation_instructions")
    return m.Hit(m.Passage(ident, f"Arrive {n} minutes early.", "Arrival", "MRI"), f"S{n}", fused_rank=n)


class Retrieval:
    def __init__(self) -> None:
        self.queries = []

    def search(self, query, timeout):
        self.queries.append(query)
        return m.SearchResult(tuple(_hit(n) for n in range(1, 9)), m.RetrievalSettings(backend="embedded"))

    def versions_of(self, passage_ids, timeout):
        return [m.VersionInfo("v1", m.VersionStatus.APPROVED)]


class Generation:
    def __init__(self) -> None:
        self.requests = []

    def generate(self, request, timeout):
        self.requests.append(request)
        kept = request.passages[: request.max_passages]
        return m.GenerationResult((m.Claim("c1", "Arrive 1 minutes early.", ("S1",), m.ClaimType.ARRIVAL_RULE),),
                                  m.GeneratorInfo("extractive"), len(kept), 0, labels_offered=tuple(p.label for p in kept))


class Validator:
    def validate(self, request, timeout):
        first = request.offered[0].passage.identity
        citation = m.Citation("S1", first.passage_id, first.document_id, first.version_id, first.start, first.end,
                              first.content_sha256, link="/documents/acme-mri/versions/v1#chars=10-19", title="MRI")
        return m.ValidationResult((m.ClaimValidation("c1", support=m.Support.SUPPORTED, citations=(citation,)),),
                                  passed=True, source_policy_version="sp-1")


class Sink:
    def __init__(self) -> None:
        self.records = []

    def submit(self, record):
        self.records.append(record)
        return True


def _core(**settings):
    ports = Downstream(Scheduler(), Retrieval(), Generation(), Validator())
    sink = Sink()
    return build_core(Settings(port=0, metrics_port=-1, **settings), ports, sink), ports, sink


def test_a_policy_part_offers_every_hit_and_generation_cuts_the_budget(monkeypatch):
    calls = []
    core, ports, sink = _core(context_max_passages=3)
    gate = core.routing.gate
    real_decide = gate.decide
    monkeypatch.setattr(gate, "decide", lambda clauses: calls.append(clauses) or real_decide(clauses))
    answer = core.ask(AskRequest(PATIENT, "When should I arrive for my MRI?", AS_OF))
    assert len(calls) == 1, "the scope gate runs once per Ask"
    (request,) = ports.generation.requests
    assert [p.label for p in request.passages] == [f"S{n}" for n in range(1, 9)]
    assert (request.max_passages, request.max_chars) == (3, 6000)
    part = answer.response.parts[0]
    assert part.outcome == c_pb.PART_OUTCOME_ANSWERED
    assert part.claims[0].citations[0].link == "/documents/acme-mri/versions/v1#chars=10-19"
    (record,) = sink.records
    assert record is answer.record and answer.trace_delivered
    assert record.parts[0].generation.passages_offered == 3
    assert all(not h.passage.text for h in record.parts[0].retrieval.retrieved)
    assert record.wording_locale == "en" and record.wording_version.startswith("wording-en-")


def test_the_locale_picks_the_wording_and_the_record_names_it():
    core, _, sink = _core()
    answer = core.ask(AskRequest(PATIENT, "Can I book an MRI tomorrow?", AS_OF, locale="nb-NO"))
    (part,) = answer.response.parts
    assert part.outcome == c_pb.PART_OUTCOME_ANSWERED
    assert part.answer_text.startswith("Ledige timer i bildediagnostikk ved Harbor Imaging Center tir. 1. des. 2026")
    # Two hours after local midnight; checked at 13:00 UTC = 14:00 in Oslo.
    assert "(sjekket i timebestillingssystemet kl. 14:00 CET): kl. 02:00." in part.answer_text
    assert sink.records[0].wording_locale == "nb-NO"
    emergency = core.ask(AskRequest(PATIENT, "Jeg har brystsmerter", AS_OF, locale="nb"))
    assert emergency.response.parts[0].answer_text.startswith("Dette kan være en medisinsk nødsituasjon")


def test_a_refused_question_leaves_a_record_and_names_the_field():
    import pytest
    from citetrace.kit.errors import InvalidArgument

    core, _, sink = _core()
    with pytest.raises(InvalidArgument) as caught:
        core.ask(AskRequest(PATIENT, "   ", AS_OF))
    assert caught.value.reason == "EMPTY_QUESTION"
    # No OpenTelemetry span here, so no trace ID: nothing to key a record by (a served Ask has one).
    assert sink.records == [] or "EMPTY_QUESTION" in sink.records[0].parts[0].error
