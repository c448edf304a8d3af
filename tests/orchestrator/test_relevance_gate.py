"""The relevance decision in a policy part (issue 15 point 2): when retrieval judged relevance (its
settings name the model), a part none of whose hits answers the question abstains with
ABSTAINED_NO_EVIDENCE and nothing is generated; the part's error names the best score, the threshold
and the model, and the hits keep their scores in the record. Only the relevant hits are offered.
Built by the bootstrap with in-memory ports (the real stack: tests/e2e, make eval)."""

from __future__ import annotations

import datetime as dt

import pytest
from citetrace.common.v1 import common_pb2 as c_pb
from citetrace.kit.auth import Principal

from services.orchestrator.bootstrap import Downstream, build_core
from services.orchestrator.core import model as m
from services.orchestrator.core.clinics import LocationInfo
from services.orchestrator.core.parts import AskRequest
from services.orchestrator.settings import Settings

AS_OF = dt.datetime(2026, 11, 30, 13, 0, tzinfo=dt.UTC)
PATIENT = Principal("acme-health", "subj", ("patient",))
MODEL = "relevance-test.1"


class Scheduler:
    def list_locations(self, page_token, timeout):
        return [LocationInfo("acme-harbor", "Harbor Imaging Center", "", "Europe/Oslo", ("imaging",))], ""

    def find_slots(self, query, timeout):
        return m.SlotResult((), AS_OF)


def _hit(n: int, relevance: float, threshold: float) -> m.Hit:
    ident = m.PassageIdentity(f"p{n}", "acme-health", "acme-arrival", "v1", n * 10, n * 10 + 9, "d" * 64, "Arrival",
                              "arrival_policy")
    return m.Hit(m.Passage(ident, f"Arrive {n} minutes early.", "Arrival", "Arrival"), f"S{n}", fused_rank=n,
                 relevance=relevance, relevant=relevance >= threshold)


class Retrieval:
    def __init__(self, scores: list[float], model: str = MODEL, threshold: float = 0.6,
                 best_threshold: float = 0.5) -> None:
        self.scores, self.model, self.threshold, self.best_threshold = scores, model, threshold, best_threshold

    def search(self, query, timeout):
        hits = tuple(_hit(n, s, self.threshold) for n, s in enumerate(self.scores, start=1))
        return m.SearchResult(hits, m.RetrievalSettings(
            backend="embedded", relevance_model=self.model, relevance_threshold=self.threshold if self.model else 0.0,
            relevance_best_threshold=self.best_threshold if self.model else 0.0))

    def versions_of(self, passage_ids, timeout):
        return [m.VersionInfo("v1", m.VersionStatus.APPROVED)]


class Generation:
    def __init__(self) -> None:
        self.requests = []

    def generate(self, request, timeout):
        self.requests.append(request)
        first = request.passages[0]
        return m.GenerationResult((m.Claim("c1", first.passage.text, (first.label,), m.ClaimType.ARRIVAL_RULE),),
                                  m.GeneratorInfo("extractive"), len(request.passages), 0,
                                  labels_offered=tuple(p.label for p in request.passages))


class Validator:
    def validate(self, request, timeout):
        first = request.offered[0]
        ident = first.passage.identity
        citation = m.Citation(first.label, ident.passage_id, ident.document_id, ident.version_id, ident.start,
                              ident.end, ident.content_sha256, link="/documents/acme-arrival/versions/v1", title="A")
        return m.ValidationResult((m.ClaimValidation("c1", support=m.Support.SUPPORTED, citations=(citation,)),),
                                  passed=True, source_policy_version="sp-1")


class Sink:
    def __init__(self) -> None:
        self.records = []

    def submit(self, record):
        self.records.append(record)
        return True


def _ask(retrieval: Retrieval, **settings):
    generation, sink = Generation(), Sink()
    core = build_core(Settings(port=0, metrics_port=-1, **settings),
                      Downstream(Scheduler(), retrieval, generation, Validator()), sink)
    answer = core.ask(AskRequest(PATIENT, "Can I bring my dog to my appointment?", AS_OF))
    return answer.response.parts[0], generation, sink.records[0].parts[0]


def test_no_relevant_hit_abstains_without_generating_and_the_record_says_why():
    part, generation, recorded = _ask(Retrieval([0.41, 0.22, 0.09]))
    assert part.outcome == c_pb.PART_OUTCOME_ABSTAINED_NO_EVIDENCE
    assert not part.claims
    assert generation.requests == [], "nothing is offered when no passage answers the question"
    assert recorded.error == f"relevance: no passage found answers the question (best p1 0.410 < 0.500; any other relevant at >= 0.600, {MODEL})"
    # The scores stay on the retrieved set of the record (the trace shows every hit's relevance).
    assert [(round(h.relevance, 3), h.relevant) for h in recorded.retrieval.retrieved] == [
        (0.41, False), (0.22, False), (0.09, False)]
    assert recorded.retrieval.settings.relevance_threshold == pytest.approx(0.6)
    assert recorded.retrieval.settings.relevance_best_threshold == pytest.approx(0.5)
    assert recorded.retrieval.settings.relevance_model == MODEL


def test_the_best_usable_hit_needs_only_the_lower_bar_and_no_other_hit_rides_on_it():
    part, generation, _ = _ask(Retrieval([0.3, 0.55, 0.52]))
    assert part.outcome == c_pb.PART_OUTCOME_ANSWERED
    assert [p.passage.identity.passage_id for p in generation.requests[0].passages] == ["p2"]


def test_only_the_relevant_hits_are_offered_in_rank_order():
    part, generation, recorded = _ask(Retrieval([0.3, 0.8, 0.1, 0.65]))
    assert part.outcome == c_pb.PART_OUTCOME_ANSWERED
    (request,) = generation.requests
    assert [p.passage.identity.passage_id for p in request.passages] == ["p2", "p4"]
    assert part.claims[0].text == "Arrive 2 minutes early."
    assert recorded.error == ""


def test_offer_all_keeps_every_hit_once_one_is_relevant():
    _, generation, _ = _ask(Retrieval([0.3, 0.8, 0.1]), relevance_offer="all")
    assert [p.passage.identity.passage_id for p in generation.requests[0].passages] == ["p1", "p2", "p3"]


@pytest.mark.parametrize("retrieval, settings", [
    (Retrieval([0.1, 0.2], model=""), {}),  # retrieval did not judge relevance: no gate
    (Retrieval([0.1, 0.2]), {"relevance_gate": "off"}),
])
def test_without_a_relevance_decision_every_hit_is_offered(retrieval, settings):
    part, generation, _ = _ask(retrieval, **settings)
    assert part.outcome == c_pb.PART_OUTCOME_ANSWERED
    assert [p.passage.identity.passage_id for p in generation.requests[0].passages] == ["p1", "p2"]


@pytest.mark.parametrize("field, value", [("relevance_gate", "maybe"), ("relevance_offer", "some")])
def test_a_bad_relevance_setting_is_refused_by_name(field, value):
    with pytest.raises(ValueError, match=field):
        Settings(port=0, metrics_port=-1, **{field: value})
