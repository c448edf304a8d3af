"""Generate over real gRPC (in-process server on port 0): the extractive default, the context
budget, regeneration with feedback, the hostile-instruction passage, the fault-injecting test
backend, and input validation."""

from __future__ import annotations

import re

import grpc
import pytest
from citetrace.common.v1 import common_pb2
from citetrace.generation.v1 import generation_service_pb2 as pb
from citetrace.generation.v1 import generation_service_pb2_grpc as pb_grpc
from citetrace.kit.clients import error_info
from citetrace.kit.telemetry import add_span_processor, setup_tracing
from citetrace.kit.testing import serving
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from services.generation.bootstrap import build_spec
from services.generation.settings import Settings

from .fixtures import TEXTS, labelled

ARRIVAL = common_pb2.INTENT_ARRIVAL_PREPARATION
CANCEL = common_pb2.INTENT_CANCELLATION_RESCHEDULING
PROVIDER = common_pb2.INTENT_PROVIDER_INFORMATION


@pytest.fixture
def generate(auth, metadata_for):
    """generate(request, **settings) -> GenerateResponse from a fresh in-process server."""
    runners = []

    def call(request: pb.GenerateRequest, **overrides) -> pb.GenerateResponse:
        spec = build_spec(Settings(port=0, metrics_port=-1, **overrides))
        ctx = serving(spec, auth)
        runner = ctx.__enter__()
        runners.append(ctx)
        with grpc.insecure_channel(runner.address) as channel:
            return pb_grpc.GenerationServiceStub(channel).Generate(
                request, timeout=10, metadata=metadata_for("acme-health")
            )

    yield call
    for ctx in runners:
        ctx.__exit__(None, None, None)


def _collapsed(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _in_some_passage(claim_text: str, keys) -> bool:
    return any(claim_text in _collapsed(TEXTS[k]) for k in keys)


def test_extractive_answers_from_the_right_passage_with_qualifier(generate):
    keys = ("arrival", "cancellation")
    reply = generate(pb.GenerateRequest(question="When should I arrive for my MRI?", intent=ARRIVAL,
                                        passages=labelled(*keys)))
    assert reply.claims, "the arrival question must be answered"
    first = reply.claims[0]
    assert first.claim_id == "c1"
    assert "MRI patients must arrive 30 minutes early" in first.text
    assert "However, patients who completed the questionnaire online" in first.text  # qualifier kept
    assert list(first.evidence_labels) == ["S1"]
    assert first.claim_type == common_pb2.CLAIM_TYPE_ARRIVAL_RULE
    assert [c.claim_id for c in reply.claims] == [f"c{i}" for i in range(1, len(reply.claims) + 1)]
    for claim in reply.claims:
        assert _in_some_passage(claim.text, keys), "extractive text must be source wording"
        assert "http" not in claim.text and "www." not in claim.text
        assert "cancel" not in claim.text.lower()
    assert reply.generator.backend == "extractive"
    assert reply.generator.model_id and reply.generator.prompt_version == "extractive-v2-semantic"
    assert reply.generator.settings["max_passages"] == "6"
    assert list(reply.labels_offered) == ["S1", "S2"]
    assert reply.passages_offered == 2
    assert reply.chars_offered == len(TEXTS["arrival"]) + len(TEXTS["cancellation"])
    assert reply.passages_used == 1 and reply.chars_used == len(TEXTS["arrival"])


def test_extractive_is_not_just_the_first_passage(generate):
    reply = generate(pb.GenerateRequest(question="Is there a fee if I cancel the day before?", intent=CANCEL,
                                        passages=labelled("arrival", "cancellation", "profile")))
    assert reply.claims
    assert all(list(c.evidence_labels) == ["S2"] for c in reply.claims)
    assert any("$25" in c.text and "except when the clinic cancels" in c.text for c in reply.claims)
    assert {c.claim_type for c in reply.claims} == {common_pb2.CLAIM_TYPE_CANCELLATION_TERM}


def test_extractive_is_deterministic(generate):
    request = pb.GenerateRequest(question="When should I arrive?", intent=ARRIVAL,
                                 passages=labelled("arrival", "walkin"))
    assert generate(request) == generate(request)


def test_identical_sentence_in_two_passages_cites_both(generate):
    passages = labelled("walkin", "walkin")
    passages[1].passage.identity.passage_id = "another-" + passages[1].passage.identity.passage_id
    reply = generate(pb.GenerateRequest(question="Can I walk in?", passages=passages))
    assert reply.claims and list(reply.claims[0].evidence_labels) == ["S1", "S2"]


def test_hostile_instruction_passage_does_not_change_behaviour(generate):
    question = "Can I just walk in without an appointment?"
    clean = generate(pb.GenerateRequest(question=question, passages=labelled("walkin")))
    hostile_first = generate(pb.GenerateRequest(question=question, passages=labelled("hostile", "walkin")))
    assert clean.claims
    assert [c.text for c in hostile_first.claims] == [c.text for c in clean.claims]
    assert all(list(c.evidence_labels) == ["S2"] for c in hostile_first.claims)
    for claim in hostile_first.claims:
        assert "ignore" not in claim.text.lower()
        assert "welcome" not in claim.text.lower()
    # Alone, the hostile passage yields no answer at all rather than its instruction.
    alone = generate(pb.GenerateRequest(question="Are walk-ins welcome?", passages=labelled("hostile")))
    assert all("walk-ins are welcome" not in c.text for c in alone.claims)


def test_no_overlap_means_no_claims(generate):
    reply = generate(pb.GenerateRequest(question="Do you validate parking for bicycles on Sundays?",
                                        intent=common_pb2.INTENT_OTHER, passages=labelled("profile")))
    assert list(reply.claims) == []
    assert reply.passages_used == 0


def test_budget_setting_and_request_budget_apply_in_rank_order(generate):
    keys = ("arrival", "cancellation", "walkin", "profile")
    by_setting = generate(pb.GenerateRequest(question="cancel fee", intent=CANCEL, passages=labelled(*keys)),
                          max_passages=2)
    assert list(by_setting.labels_offered) == ["S1", "S2"] and by_setting.passages_offered == 2
    by_request = generate(pb.GenerateRequest(question="walk in booking", passages=labelled(*keys),
                                             budget=pb.ContextBudget(max_passages=1)))
    assert list(by_request.labels_offered) == ["S1"]
    assert all(set(c.evidence_labels) <= {"S1"} for c in by_request.claims)
    # A request may tighten, never widen the configured budget.
    widened = generate(pb.GenerateRequest(question="walk in", passages=labelled(*keys),
                                          budget=pb.ContextBudget(max_passages=50)), max_passages=3)
    assert widened.passages_offered == 3
    # Characters: the prefix that fits, then stop.
    limit = len(TEXTS["arrival"]) + 10
    by_chars = generate(pb.GenerateRequest(question="walk in", passages=labelled(*keys),
                                           budget=pb.ContextBudget(max_chars=limit)))
    assert list(by_chars.labels_offered) == ["S1"] and by_chars.chars_offered == len(TEXTS["arrival"])
    assert by_chars.generator.settings["max_chars"] == str(limit)


def test_regeneration_drops_rejected_claims(generate):
    # A question every arrival sentence answers (no key term beyond the intent's own words), so that
    # claims remain after the first one is rejected.
    request = pb.GenerateRequest(question="When should I arrive?", intent=ARRIVAL,
                                 passages=labelled("arrival", "cancellation"))
    first = generate(request)
    rejected = first.claims[0]
    request.attempt = 2
    request.feedback.append(pb.ClaimFeedback(claim_id=rejected.claim_id,
                                             support=common_pb2.SUPPORT_VERDICT_UNSUPPORTED,
                                             reasons=[common_pb2.FAILURE_REASON_UNSUPPORTED_CLAIM]))
    second = generate(request)
    assert second.claims
    assert rejected.text not in [c.text for c in second.claims]
    assert rejected.claim_id not in [c.claim_id for c in second.claims]
    # the other claims keep their IDs: feedback names the same sentences on every attempt
    kept = {c.claim_id: c.text for c in first.claims[1:]}
    for claim in second.claims:
        if claim.claim_id in kept:
            assert kept[claim.claim_id] == claim.text


def test_regeneration_drops_passage_with_structural_failure(generate):
    request = pb.GenerateRequest(question="cancel or reschedule fee", intent=CANCEL,
                                 passages=labelled("cancellation", "arrival"))
    first = generate(request)
    s1_claims = [c for c in first.claims if "S1" in c.evidence_labels]
    assert s1_claims
    request.attempt = 2
    request.feedback.append(pb.ClaimFeedback(claim_id=s1_claims[0].claim_id,
                                             reasons=[common_pb2.FAILURE_REASON_STALE_VERSION]))
    second = generate(request)
    assert all("S1" not in c.evidence_labels for c in second.claims)


@pytest.mark.parametrize("fault", ["invent_label", "unsupported_addition", "drop_labels"])
def test_fault_backend_injects_on_first_attempt_only(generate, fault):
    request = pb.GenerateRequest(question="When should I arrive for my MRI?", intent=ARRIVAL,
                                 passages=labelled("arrival"), attempt=1)
    # Selection by words alone offers two claims here (the fault needs a second one to act on).
    clean = generate(request, semantic_selection=False)
    faulty = generate(request, backend="test", test_fault=fault, semantic_selection=False)
    assert faulty.generator.backend == "test" and faulty.generator.settings["test_fault"] == fault
    assert len(faulty.claims) == len(clean.claims) >= 2
    if fault == "invent_label":
        assert "S99" in faulty.claims[0].evidence_labels
    elif fault == "unsupported_addition":
        assert faulty.claims[-1].text.endswith("and an assessment.")
        assert [c.text for c in faulty.claims[:-1]] == [c.text for c in clean.claims[:-1]]
    else:
        assert list(faulty.claims[0].evidence_labels) == []
    request.attempt = 2
    assert list(generate(request, backend="test", test_fault=fault, semantic_selection=False).claims) == list(clean.claims)


def test_generate_span_carries_no_text(generate):
    exporter = InMemorySpanExporter()
    setup_tracing("citetrace-test")
    add_span_processor(SimpleSpanProcessor(exporter))
    generate(pb.GenerateRequest(question="When should I arrive for my MRI?", intent=ARRIVAL,
                                passages=labelled("arrival")))
    spans = [s for s in exporter.get_finished_spans() if s.name == "generation.generate"]
    assert spans
    attrs = dict(spans[-1].attributes)
    assert attrs["citetrace.backend"] == "extractive" and attrs["citetrace.passages_offered"] == 1
    assert not any("MRI" in str(v) for v in attrs.values())


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda r: r.passages[1].__setattr__("label", "S1"), "DUPLICATE_LABEL"),
        (lambda r: r.passages[0].__setattr__("label", "P1"), "INVALID_LABEL"),
        (lambda r: r.__setattr__("question", "x" * 5000), "QUESTION_TOO_LONG"),
        (lambda r: r.budget.__setattr__("max_chars", -1), "INVALID_BUDGET"),
        (lambda r: r.place_names.extend(["  "]), "INVALID_PLACE_NAME"),
        (lambda r: r.place_names.extend(["x" * 2001]), "INVALID_PLACE_NAME"),
        (lambda r: r.place_names.extend([f"Clinic {i}" for i in range(101)]), "TOO_MANY_PLACE_NAMES"),
        (lambda r: r.other_place_names.extend(["  "]), "INVALID_PLACE_NAME"),
        (lambda r: r.other_place_names.extend([f"Clinic {i}" for i in range(101)]), "TOO_MANY_PLACE_NAMES"),
    ],
)
def test_bad_input_is_invalid_argument(generate, mutate, reason):
    request = pb.GenerateRequest(question="When?", passages=labelled("arrival", "walkin"))
    mutate(request)
    with pytest.raises(grpc.RpcError) as caught:
        generate(request)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error_info(caught.value).reason == reason


def test_a_sentence_that_does_not_answer_the_question_is_not_an_answer(generate):
    # Seed 000: ranking first is no reason to be cited. The arrival passage is about the clinic, not
    # about dogs: every sentence is true and citable, none answers the question -> no claims.
    reply = generate(pb.GenerateRequest(question="Can I bring my dog to the clinic?", intent=ARRIVAL,
                                        passages=labelled("arrival")))
    assert list(reply.claims) == []
    assert reply.generator.settings["relevance_threshold"]
    # The same passages answer a question they cover.
    reply = generate(pb.GenerateRequest(question="What should I bring to check in?", intent=ARRIVAL,
                                        passages=labelled("arrival")))
    assert any("photo ID" in c.text for c in reply.claims)


@pytest.mark.parametrize("question", [
    # A statement beside the question says why the patient asks, not what (issue 14 point 6).
    "My knee surgery was two years ago and my physiotherapist referred me - how early should I be there?",
    "I had a bad fall last winter; when do I need to arrive?",
    # Arrival asked with other verbs, and duration question words.
    "How long before my appointment should I show up?",
    "How soon before the visit do I have to turn up?",
])
def test_context_clauses_and_arrival_paraphrases_do_not_block_the_answer(generate, question):
    reply = generate(pb.GenerateRequest(question=question, intent=ARRIVAL, passages=labelled("arrival")))
    assert any("arrive" in c.text and "minutes" in c.text for c in reply.claims), list(reply.claims)


@pytest.mark.parametrize("question", [
    # Neither the asking clause nor the whole question is covered -> no claims.
    "My husband is driving me - can I bring my dog?",
    "I was told to arrive 15 minutes before. Is there a creche for my toddler?",
])
def test_a_context_clause_does_not_answer_for_the_asking_clause(generate, question):
    reply = generate(pb.GenerateRequest(question=question, intent=ARRIVAL, passages=labelled("arrival")))
    assert list(reply.claims) == []


def test_a_named_provider_or_place_absent_from_the_passages_gets_no_claims(generate):
    reply = generate(pb.GenerateRequest(question="Which languages does Dr. Quinn Nobody speak?", intent=PROVIDER,
                                        passages=labelled("profile")))
    assert list(reply.claims) == []
    reply = generate(pb.GenerateRequest(question="Where do I check in at Cedar Main Street Clinic?",
                                        intent=ARRIVAL, passages=labelled("arrival")))
    assert list(reply.claims) == []
    reply = generate(pb.GenerateRequest(question="Which languages does Dr. Lindqvist speak?", intent=PROVIDER,
                                        passages=labelled("profile")))
    assert any("Norwegian" in c.text for c in reply.claims)


def test_the_reason_given_for_a_rule_does_not_decide_its_claim_type():
    from services.generation.core import infer_claim_type

    rule = ("Rescheduling an MRI or CT scan needs a coordinator review before the new time is confirmed, "
            "because contrast and preparation are planned for the booked slot.")
    # The reason names the booked slot (scheduling cues); the rule is a rescheduling term.
    assert infer_claim_type(rule, "cancellation_policy", "CANCELLATION_RESCHEDULING") == "RESCHEDULING_TERM"
    assert infer_claim_type(rule.split(", because")[0] + ".", "cancellation_policy", "AVAILABILITY") == \
        "RESCHEDULING_TERM"
    # Without a reason clause the whole sentence counts, as before.
    assert infer_claim_type("Walk-in slots open at 8:00 on weekdays.", "scheduling_policy",
                            "AVAILABILITY") == "SCHEDULING_RULE"


@pytest.mark.parametrize("source_class,expected", [("handbook", "GENERAL_POLICY"),
                                                   ("scheduling_policy", "SCHEDULING_RULE")])
def test_where_to_park_is_no_arrival_rule(source_class, expected):
    """A sentence about a place (a car park, a door) takes its document's class: typed ARRIVAL_RULE,
    a clinic handbook's own parking sentence was withheld as an authority mismatch, and "is parking
    free at <clinic>?" abstained although the clinic's page answers it. A sentence about arriving
    is still an arrival rule."""
    from services.generation.core import infer_claim_type

    assert infer_claim_type("Parking in the multi-storey car park is free for the first hour.", source_class,
                            "OTHER") == expected
    assert infer_claim_type("Disabled bays are next to the north entrance.", source_class, "OTHER") == expected
    assert infer_claim_type("Please arrive early, as parking is limited.", source_class, "OTHER") == "ARRIVAL_RULE"


def test_waiting_is_no_scheduling_rule():
    """Waiting is part of every kind of visit: a preparation instruction's own step stays one."""
    from services.generation.core import infer_claim_type

    step = "After the injection, stay in the waiting area for 15 minutes before you go home."
    assert infer_claim_type(step, "preparation_instructions", "ARRIVAL_PREPARATION") == "PREPARATION_RULE"
    assert infer_claim_type("Walk-in slots open at 8:00 on weekdays.", "handbook", "OTHER") == "SCHEDULING_RULE"


def test_booking_and_notice_words_do_not_type_a_policys_own_sentences_as_scheduling_rules():
    """Sentences written for this test (not from the sample corpus) that mention a booking or hours
    of notice state their document's kind of rule, which its class may establish; typed
    SCHEDULING_RULE (a type a cancellation policy or preparation instructions may not establish) they
    were withheld as an authority mismatch."""
    from services.generation.core import infer_claim_type

    for sentence in ("If you miss three bookings in a year without telling us, we may ask for a deposit.",
                     "Let us know at least 48 hours before your booking if you cannot attend.",
                     "A second move of the same booking costs $15."):
        assert infer_claim_type(sentence, "cancellation_policy", "CANCELLATION_RESCHEDULING") in \
            {"CANCELLATION_TERM", "RESCHEDULING_TERM"}, sentence
    assert infer_claim_type("Please book your blood draw at least one working day ahead.",
                            "preparation_instructions", "ARRIVAL_PREPARATION") == "PREPARATION_RULE"
    # A provider profile's booking sentence is still its own description, and the scheduling cues
    # that are about scheduling still decide.
    assert infer_claim_type("Dr. Rowan takes bookings for new patients on Mondays.", "provider_profile",
                            "PROVIDER_INFORMATION") == "PROVIDER_DESCRIPTION"
    assert infer_claim_type("Same-day slots open at 7:30 each weekday.", "cancellation_policy",
                            "AVAILABILITY") == "SCHEDULING_RULE"


def test_a_section_whose_heading_names_what_is_asked_answers_in_words_of_its_own(generate):
    """'Do you take walk-ins?' and a section headed 'Walk-ins' whose sentences share no word with the
    question (written for this test): the section answers. A section about something else does not,
    and neither does a heading that names only part of what is asked."""
    text = "We do not see patients without a booking. Same-day urgent appointments are released at 7:30 by phone."

    def section(heading: str) -> list[common_pb2.LabelledPassage]:
        item = labelled("walkin")[0]
        item.passage.text = text
        item.passage.heading_context = f"Visiting the practice > {heading}"
        return [item]

    reply = generate(pb.GenerateRequest(question="Do you take walk-ins?", intent=common_pb2.INTENT_OTHER,
                                        passages=section("Walk-ins")))
    assert [c.text for c in reply.claims][:1] == ["We do not see patients without a booking."]
    reply = generate(pb.GenerateRequest(question="Do you take walk-ins?", intent=common_pb2.INTENT_OTHER,
                                        passages=section("Parking")))
    assert list(reply.claims) == []
    reply = generate(pb.GenerateRequest(question="Do you take walk-ins with a guide dog?",
                                        intent=common_pb2.INTENT_OTHER, passages=section("Walk-ins")))
    assert list(reply.claims) == []


def _one_passage(key: str, text: str, heading: str) -> list[common_pb2.LabelledPassage]:
    item = labelled(key)[0]
    item.passage.text = text
    item.passage.heading_context = heading
    return [item]


@pytest.mark.parametrize("question,amount", [
    ("How much notice do you want if I can't come?", "48 hours"),
    ("How far in advance do I need to cancel?", "48 hours"),
    ("What's the fee if I don't turn up?", "$35"),
])
def test_a_question_that_asks_for_an_amount_is_led_by_a_sentence_that_states_one(generate, question, amount):
    """Sentences written for this test: the one nearest the question in words and meaning refers to
    the amount ("the same notice", "that charge") without stating it. The answer's lead states the
    amount the question asks for (a duration for how long or how much notice, a price for a fee)."""
    text = ("Changing an appointment to a different day is treated as a cancellation, so the same notice "
            "and the same charge apply. Please tell us at least 48 hours before your appointment if you "
            "cannot come. If you give us less notice or do not come at all, we charge $35.")
    reply = generate(pb.GenerateRequest(question=question, intent=CANCEL,
                                        passages=_one_passage("cancellation", text, "Fees > Cancelling")))
    assert reply.claims, question
    assert amount in reply.claims[0].text, [c.text for c in reply.claims]


@pytest.mark.parametrize("question", [
    "What would it cost me to see the physio for the first time?",
    "How much is the ferry to the island clinic?",
    "How long do I have to wait for my results?",
])
def test_a_question_that_asks_for_an_amount_no_sentence_states_gets_no_answer(generate, question):
    """Sentences written for this test talk around the asked amount (what to wear, how the ferry runs,
    who calls back) without stating it: no lead, so the part abstains instead of answering another
    question."""
    text = ("Wear loose, comfortable clothing to your first physiotherapy session. The island clinic is "
            "reached by the ferry from the harbour, and the physiotherapist visits on Thursdays. "
            "The nurse calls you back when your results are in.")
    reply = generate(pb.GenerateRequest(question=question, intent=common_pb2.INTENT_OTHER,
                                        passages=_one_passage("cancellation", text, "Your visit")))
    assert list(reply.claims) == [], [c.text for c in reply.claims]


def test_a_question_without_an_amount_keeps_its_ranking(generate):
    """'How do I cancel?' asks for a way, not an amount: the amount preference stays out of it."""
    text = ("You can cancel in the app, by phone or by replying C to your reminder text. "
            "Please tell us at least 48 hours before your appointment.")
    reply = generate(pb.GenerateRequest(question="How do I cancel my appointment?", intent=CANCEL,
                                        passages=_one_passage("cancellation", text, "Fees > Cancelling")))
    assert reply.claims and "app" in reply.claims[0].text


def test_a_tie_of_cues_the_intent_does_not_break_takes_the_documents_class():
    """Juniper's fee page: "Medical card ... holders are not charged this fee ... before further
    appointments are booked" ties a preparation cue ("medic") with a booking one; typed a preparation
    rule, a cancellation policy's sentence was withheld as an authority mismatch."""
    from services.generation.core import infer_claim_type

    sentence = ("Medical card holders are not charged this fee. If anyone misses three appointments, the "
                "practice manager may call them before further appointments are booked.")
    assert infer_claim_type(sentence, "cancellation_policy", "CANCELLATION_RESCHEDULING") == "CANCELLATION_TERM"


def test_the_purpose_given_for_a_rule_does_not_decide_its_claim_type():
    """'... so that we can offer the slot to someone else': the slot is the purpose, the rule is a
    notice period; typed SCHEDULING_RULE, a cancellation policy's own sentence was withheld as an
    authority mismatch."""
    from services.generation.core import infer_claim_type

    rule = ("If you cannot come, please let us know at least a day beforehand so that we can give the slot "
            "to another patient.")
    assert infer_claim_type(rule, "cancellation_policy", "CANCELLATION_RESCHEDULING") == "CANCELLATION_TERM"
    assert infer_claim_type(rule, "cancellation_policy", "OTHER") == "CANCELLATION_TERM"
    # A rule with a cue of its own keeps it, purpose or not.
    assert infer_claim_type("Book your slot online in order to skip the queue.", "cancellation_policy",
                            "OTHER") == "SCHEDULING_RULE"
