"""Answer units ranked by meaning (services/generation/semantic.py): the failure classes word
overlap has on text nobody here wrote. The passages are a clinic written for these tests (not the
sample corpus, not the eval); each question is phrased with words its answer does not use."""

from __future__ import annotations

import pytest

from services.generation.core import Feedback, GenerationRequest, OfferedPassage
from services.generation.extractive import ExtractiveBackend
from services.generation.semantic import EmbeddedUnitSimilarity

TITLE = "Visiting the Wrenfield Practice (synthetic)"


def passage(label: str, section: str, text: str, source_class: str = "handbook") -> OfferedPassage:
    return OfferedPassage(label, f"p-{label}", text, source_class, f"{TITLE} > {section}", TITLE)


PASSAGES = (
    passage("S1", "Before you come", "Please report to reception ten minutes before your booked time."),
    passage("S2", "What to carry", "Have your health card and a list of the medicines you take with you."),
    passage("S3", "Samples", "Hand in the morning urine sample in the sterile pot we give you, within two hours."),
    passage("S4", "Young patients", "Patients under 16 must be accompanied by a parent or legal guardian."),
    passage("S5", "Language help", "Interpreters can be arranged at no cost if you tell us when you book."),
    passage("S6", "Letters", "If you have a referral letter, give it to the receptionist."),
    passage("S7", "Opening hours", "Wrenfield Practice: Monday to Friday, 8:00 to 17:00."),
)


@pytest.fixture(scope="module")
def backend() -> ExtractiveBackend:
    similarity = EmbeddedUnitSimilarity()
    similarity.warm_up()
    return ExtractiveBackend(similarity=similarity)


def claims(backend: ExtractiveBackend, question: str, intent: str = "OTHER") -> list[str]:
    generated = backend.generate(GenerationRequest(question, intent, PASSAGES))
    return [c.text for c in generated.claims]


@pytest.mark.parametrize("question,answer", [
    # No key term of the question is in its answer. (Paraphrases the model scores below 0.5 still
    # abstain: "What should I have on me when I turn up?" -> "What to carry: ..." scores 0.40.)
    ("Do you offer translators?", "Interpreters"),
    ("Do you provide a translator?", "Interpreters"),
    # Sharing a key term ("interpret") still answers when the meaning is weakly close (0.19).
    ("Is there anyone who can interpret for my mother?", "Interpreters"),
])
def test_a_paraphrase_is_answered_by_meaning(backend, question, answer):
    shown = claims(backend, question)
    assert shown and answer in shown[0], shown


def test_a_shared_everyday_word_does_not_add_an_unrelated_claim(backend):
    # "give" is in the urine-sample sentence too; it is no answer to where a referral goes.
    shown = claims(backend, "Who do I give my referral to?")
    assert shown and "referral letter" in shown[0]
    assert not any("urine" in text for text in shown), shown


def test_a_clinic_name_alone_does_not_make_a_unit_an_answer(backend):
    # The opening-hours unit names the clinic the question names; it says nothing about parking.
    assert claims(backend, "Is parking free at Wrenfield Practice?") == []


BRANCH = passage("S8", "Our Elmstead branch", "Our Elmstead branch is on the first floor of the Elmstead shopping arcade.")


@pytest.mark.parametrize("question,place", [
    ("can my husband and my sister both come in with me at the elmstead branch?", "elmstead branch"),
    ("any wheelchair access at elmstead?", "elmstead"),
])
def test_a_resolved_place_name_written_any_way_is_no_topic(backend, question, place):
    """The caller resolved the clinic ("the elmstead branch", lowercase, no place noun the name
    pattern knows) and hands it over as a place name: a unit that only names that place does not
    answer what is asked about it. Without the place name, the shared name makes it the answer."""
    offered = (*PASSAGES, BRANCH)
    told = backend.generate(GenerationRequest(question, "OTHER", offered, place_names=(place,)))
    assert not any("arcade" in c.text for c in told.claims), [c.text for c in told.claims]
    untold = backend.generate(GenerationRequest(question, "OTHER", offered))
    assert any("arcade" in c.text for c in untold.claims), "the case no longer shows the failure it guards"


class FixedSimilarity:
    """A similarity with the meaning scores given (the ranking rule under test, not the model)."""

    version = "fixed-for-test"

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores

    def warm_up(self) -> None:
        """Nothing to load."""

    def similarities(self, question: str, texts: list[str]) -> list[float]:
        return [next(v for k, v in self.scores.items() if k in text) for text in texts]


def test_the_named_places_own_passage_leads_among_units_about_as_close():
    """A passage that names the place the question was resolved to, by any of its names (the caller
    wrote an alias, "kingsbury"; the passage says "Elmstead"), is that place's own, and its rule
    applies there: among units about as close to the question, its unit leads over the tenant-wide one."""
    tenant_wide = passage("S1", "Parking", "Patients can park free of charge in the car park.")
    own = OfferedPassage("S2", "p-own", "Use the pay-and-display on Mill Lane to park, as there is no car park here.",
                         "handbook", "Our Elmstead branch > Getting here", "Visiting our Elmstead branch")
    backend = ExtractiveBackend(similarity=FixedSimilarity({"free of charge": 0.60, "Mill Lane": 0.55}))
    question = "where can i park at kingsbury?"
    told = backend.generate(GenerationRequest(question, "OTHER", (tenant_wide, own),
                                              place_names=("kingsbury", "Elmstead Branch", "Kingsbury")))
    assert told.claims and told.claims[0].evidence_labels == ["S2"], [c.text for c in told.claims]
    untold = backend.generate(GenerationRequest(question, "OTHER", (tenant_wide, own)))
    assert untold.claims and untold.claims[0].evidence_labels == ["S1"], "the case no longer shows the failure it guards"


def test_an_unrelated_question_is_not_answered(backend):
    assert claims(backend, "Can I bring my dog to the appointment?") == []


@pytest.mark.parametrize("backend_kind", ["meaning", "words"])
def test_a_shared_kind_word_is_no_answer_about_the_topic(backend, backend_kind):
    """A question routed to no intent keeps the words that only say what kind of question it is
    (bring, fee): a unit sharing one of them and none of the question's topic answers nothing."""
    carry = passage("S9", "What to bring", "Bring your health card and a list of your medicines.")
    fee = passage("S10", "Fees", "A fee of 40 EUR applies when you cancel less than 24 hours ahead.")
    chosen = backend if backend_kind == "meaning" else ExtractiveBackend()
    for question in ("Can I bring my cat?", "Is there a fee for parking?"):
        assert chosen.generate(GenerationRequest(question, "OTHER", (carry, fee))).claims == [], question
    # A topic word covered still answers: the kind word is not what blocks it.
    shown = chosen.generate(GenerationRequest("Do I bring my health card?", "OTHER", (carry, fee))).claims
    assert shown and shown[0].evidence_labels == ["S9"]


def test_the_similarity_model_and_settings_are_named(backend):
    generated = backend.generate(GenerationRequest("Do you offer translators?", "OTHER", PASSAGES))
    assert generated.prompt_version == "extractive-v2-semantic"
    assert generated.settings["similarity_model"].startswith("all-MiniLM-L6-v2")
    assert float(generated.settings["semantic_lead"]) == 0.5


def test_words_alone_without_a_similarity(backend):
    """Off (CITETRACE_GENERATION_SEMANTIC_SELECTION=false), a paraphrase sharing no key term abstains
    as in extractive-v1: the difference is the similarity's."""
    words_only = ExtractiveBackend()
    assert words_only.generate(GenerationRequest("Do you offer translators?", "OTHER", PASSAGES)).claims == []


def test_tell_me_about_a_provider_shows_only_that_providers_profile(backend):
    """With the name set aside, "Tell me about Dr." is as close to every profile: the claims after
    the lead come from the lead's own profile, never from another provider's."""
    profiles = (
        OfferedPassage("S1", "p-1", "Cardiologist at the Wrenfield Practice. Sees adults with heart rhythm problems.",
                       "provider_profile", "Providers > Dr. Ida Marsh (synthetic)", "Providers"),
        OfferedPassage("S2", "p-2", "Family doctor at the Wrenfield Practice. Accepts new patients of all ages.",
                       "provider_profile", "Providers > Dr. Tom Reyes (synthetic)", "Providers"),
    )
    generated = backend.generate(GenerationRequest("Tell me about Dr. Ida Marsh.", "PROVIDER_INFORMATION", profiles))
    assert generated.claims and all(c.evidence_labels == ["S1"] for c in generated.claims), generated.claims


def test_a_question_of_intent_words_only_gets_no_claim_from_another_passage(backend):
    """"How long before my appointment should I arrive?" has no key terms: the arrival sentence
    leads, and a fasting instruction of another passage that merely mentions "before" does not follow."""
    passages = (PASSAGES[0], passage("S8", "Blood tests", "Do not eat for 12 hours before a cholesterol test."))
    generated = backend.generate(GenerationRequest("How long before my appointment should I arrive?",
                                                   "ARRIVAL_PREPARATION", passages))
    assert [c.evidence_labels for c in generated.claims] == [["S1"]], generated.claims


def test_a_question_in_norwegian_is_ranked_through_its_english_gloss(backend):
    """The model reads English only: on nb-NO text as written it found "Er det parkering ved
    klinikken?" close to a fee exception and an app instruction (so a Norwegian question was ranked by
    words alone, extractive-v1). Read through the English gloss (citetrace.gloss), question and
    passages are English the model reads: ranked by meaning, and still nothing answers parking."""
    passages = (
        passage("S1", "Avbestilling", "Ved akutt sykdom belastes ikke gebyr dersom du gir beskjed før timen.",
                "cancellation_policy"),
        passage("S2", "Flytte timen", "Du kan flytte timen din i appen inntil 24 timer før avtalt tid.",
                "cancellation_policy"),
    )
    generated = backend.generate(GenerationRequest("Er det parkering ved klinikken?", "OTHER", passages))
    assert generated.claims == [] and generated.prompt_version == "extractive-v2-semantic"
    moved = backend.generate(GenerationRequest("Kan jeg flytte timen i appen?", "CANCELLATION_RESCHEDULING", passages))
    assert [c.evidence_labels for c in moved.claims][:1] == [["S2"]]


CHECKLIST = passage("S11", "Items to bring along", "\n".join([
    "- Your photo identification card",
    "- Every medicine you take, in its box",
    "- Reading glasses, if you need them",
    "- Any hospital letters about your visit",
]))
SCAN = passage("S12", "Before your scan", "\n".join([
    "- Take off earrings, watches and hair clips",
    "- Wear clothes without metal zips",
]))


@pytest.mark.parametrize("backend_kind", ["meaning", "words"])
def test_a_list_its_heading_names_is_given_whole_in_its_order(backend, backend_kind):
    """A question about what a list's section heading names ("which items should I bring?" under
    "Items to bring along") asks for the list: every item, in the document's order, and not the
    three nearest the question's words (which left the photo ID out)."""
    chosen = backend if backend_kind == "meaning" else ExtractiveBackend()
    shown = [c.text for c in chosen.generate(
        GenerationRequest("which items should I bring?", "OTHER", (*PASSAGES, CHECKLIST, SCAN))).claims]
    assert shown == [
        "Your photo identification card", "Every medicine you take, in its box", "Reading glasses, if you need them",
        "Any hospital letters about your visit"], shown


ASKING = passage("S13", "What to bring", "\n".join([
    "- A passport or another photo identification",
    "- A list of the medicines you take, with their doses",
    "- Your glasses or hearing aids, if you use them",
    "- Letters from a hospital about your visit",
]), "arrival_preparation")
CANCELLING = passage("S14", "Cancelling", "\n".join([
    "- Give us at least 24 hours' notice if you can't come.",
    "- To cancel, call 604-555-0142, reply C to your reminder text, or use the patient portal.",
    "- Cancelling with less than 24 hours' notice means a late-cancellation fee (see the fee schedule).",
    "",
    "Illness is the exception. If you wake up with pink eye, a fever or a stomach bug, call us before your "
    "appointment time and we will rebook you with no late-cancellation fee.",
]), "cancellation_policy")


@pytest.mark.parametrize("question", ["what should i bring to my appointment?", "what do i need to bring with me?"])
def test_a_list_under_a_heading_that_asks_what_the_question_asks_is_given_whole(backend, question):
    """"What to bring" asks what the question asks, in words that only say what kind of question it is
    ("bring": no key term): the list is the answer, the photo ID first, not the items nearest in meaning."""
    shown = [c.text for c in backend.generate(
        GenerationRequest(question, "ARRIVAL_PREPARATION", (*PASSAGES, ASKING))).claims]
    assert shown[:1] == ["A passport or another photo identification"] and len(shown) == 4, shown


def test_a_list_under_a_topic_heading_is_not_the_whole_answer(backend):
    """"Cancelling" names the topic, it asks nothing: its list is not all there is to say about a
    late cancellation when ill, so the answer is not cut off after the list."""
    shown = [c.text for c in backend.generate(GenerationRequest(
        "woke up with my eye all goopy and crusted shut, got an appt at 2 today. if i cancel now do i get hit with the fee?", "CANCELLATION_RESCHEDULING",
        (*PASSAGES, CANCELLING))).claims]
    assert any("fever" in text for text in shown), shown


def test_a_question_about_one_item_is_not_given_the_whole_list(backend):
    """The heading names nothing asked ("Before your scan" for earrings): the item answers alone."""
    shown = [c.text for c in backend.generate(
        GenerationRequest("do I have to take my earrings out?", "OTHER", (*PASSAGES, CHECKLIST, SCAN))).claims]
    assert shown and "earrings" in shown[0], shown
    assert not any("zips" in text for text in shown), shown


def test_a_place_name_written_whole_is_no_topic_even_in_its_generic_words(backend):
    """"Street" in "the Elm Street clinic" is part of the name the caller resolved: a sentence that
    names Elm Street shares no topic with how early to come. Left in as a key term, it covered the
    question."""
    offered = (
        passage("S1", "Where we are", "At the Elm Street clinic the consulting rooms are on the second floor."),
        passage("S2", "Coming in", "Please come 10 minutes early, before your appointment time."),
    )
    told = backend.generate(GenerationRequest("How early should I get to the Elm Street clinic?", "ARRIVAL_PREPARATION",
                                              offered, place_names=("Elm Street", "Ashgrove Elm Street Clinic")))
    shown = [c.text for c in told.claims]
    assert shown and "10 minutes" in shown[0], shown
    assert not any("second floor" in text for text in shown), shown


BOKMAL_TITLE = "Lyngstad legesenter (synthetic)"
BOKMAL = tuple(OfferedPassage(label, f"p-{label}", text, source_class, f"{BOKMAL_TITLE} > {section}", BOKMAL_TITLE)
               for label, section, text, source_class in (
    ("S1", "Kan jeg flytte timen i stedet?",
     "Ja. Så lenge det er mer enn 24 timer igjen, kan du flytte timen selv på Helsenorge.", "cancellation_policy"),
    ("S2", "Når du kommer", "Møt opp 10 minutter før timen, slik at resepsjonen rekker å registrere deg.",
     "scheduling_policy"),
    ("S3", "Hva koster det hvis jeg ikke møter?",
     "Ikke-møtt-gebyret er 350 kr for en legetime og 300 kr for en fysioterapitime.", "cancellation_policy"),
    ("S4", "Fastende blodprøve", "Ikke spis eller drikk noe annet enn vann etter kl. 22 kvelden før.",
     "preparation_instructions"),
))


@pytest.mark.parametrize("question,intent,answer", [
    # "glemmer timen" (forget the appointment) shares no stem with "ikke-møtt-gebyret": read through
    # the English gloss, the question and the fee sentence meet (words alone, nothing led).
    ("hva koster det hvis jeg glemmer timen hos legen?", "CANCELLATION_RESCHEDULING", "350 kr"),
    ("hvor tidlig skal jeg møte opp til legetimen?", "ARRIVAL_PREPARATION", "10 minutter"),
    # "kl." ends no sentence: the rule is shown whole, not "22 kvelden før."
    ("fra når må jeg slutte å spise før blodprøven?", "ARRIVAL_PREPARATION", "Ikke spis eller drikk"),
])
def test_a_bokmal_question_and_passages_are_matched_through_the_english_gloss(backend, question, intent, answer):
    generated = backend.generate(GenerationRequest(question, intent, BOKMAL))
    assert generated.claims and answer in generated.claims[0].text, [c.text for c in generated.claims]
    # the claims keep the passages' own words
    assert all(any(c.text in p.text for p in BOKMAL) for c in generated.claims)


HOLMVIK = tuple(OfferedPassage(label, f"p-{label}", text, "scheduling_policy", f"Holmvik > {section}", "Holmvik")
                for label, section, text in (
    ("S1", "Oppmøte", "Møt opp 20 minutter før timen. Resepsjonen i helsehuset er felles for alle tjenestene."),
    ("S2", "Avbestilling og ikke-møtt-gebyr", "Timer på Holmvik må avbestilles senest 48 timer før, slik at vi "
                                              "rekker å gi timen til noen på ventelisten. Ikke-møtt-gebyret for en "
                                              "legetime er 450 kr."),
    ("S3", "Betaling", "Vi har ikke betalingsterminal på Holmvik, så du kan ikke betale med kort her. Alle får "
                       "faktura i posten, og her slipper du fakturagebyret."),
))


@pytest.mark.parametrize("question,intent,answer", [
    # "hvor lenge" is "how long", not "where long"; "møt opp" is "arrive": the notice period, which
    # also says "48 timer før", is no answer to when to be there
    ("skal til legen paa holmvik paa mandag, hvor lenge foer timen maa jeg vaere der?", "ARRIVAL_PREPARATION",
     "20 minutter"),
    ("glemte helt timen min i holmvik helsehus i går, flaut. hva blir gebyret?", "CANCELLATION_RESCHEDULING",
     "450 kr"),
])
def test_bokmal_set_phrases_are_read_as_their_english(backend, question, intent, answer):
    generated = backend.generate(GenerationRequest(question, intent, HOLMVIK, place_names=("Holmvik helsehus",)))
    assert generated.claims and answer in generated.claims[0].text, [c.text for c in generated.claims]


PARKING = (
    passage("S1", "Parking", "The Orchard site does not have its own car park. Pay-and-display parking is on Kell Road, "
            "up to two hours. The Mill Lane car park is a minute's walk away, and reception stamps your ticket for "
            "three free hours.\n\nOur toilets are on the ground floor and have a baby changing table."),
    passage("S2", "Getting here", "Bus routes 4 and 11 stop outside the main entrance."),
)


def test_a_lead_that_says_what_is_not_there_is_followed_by_the_rest_of_its_paragraph(backend):
    """The paragraph answers as a whole: the lead alone says only what there is not; the sentences
    after it, in the document's order, say where to park. Its next paragraph is another subject."""
    shown = [c.text for c in backend.generate(GenerationRequest(
        "is there a car park at orchard or where do people park", "OTHER", PARKING)).claims]
    assert shown[:3] == ["The Orchard site does not have its own car park.",
                         "Pay-and-display parking is on Kell Road, up to two hours.",
                         "The Mill Lane car park is a minute's walk away, and reception stamps your ticket for "
                         "three free hours."], shown
    assert not any("toilets" in text for text in shown), shown


def test_a_sentence_far_from_the_question_ends_the_run_of_its_paragraph(backend):
    """The sentence after the lead reads as another subject (nothing of the question in it): the run
    stops there, and the sentence after it is not reached by skipping."""
    passages = (passage("S1", "Interpreters", "Interpreters can be arranged at no cost if you tell us when you "
                        "book. Our reception desk closes at noon on Fridays. Sign language interpreters need a "
                        "week's notice."),)
    shown = [c.text for c in backend.generate(GenerationRequest(
        "can you get an interpreter for my dad", "OTHER", passages)).claims]
    assert shown and "Interpreters can be arranged" in shown[0], shown
    assert not any("reception desk" in text for text in shown), shown


def test_an_asking_clause_that_names_nothing_is_read_with_its_statement(backend):
    """"Will you still see me?" names nothing; the statement before it says what it asks (Corrib q30):
    read alone, the late rule was far from it in meaning (0.13) and nothing could lead."""
    late = passage("S15", "Timekeeping", "Give us a ring and we'll do our best to fit you in. If you arrive more "
                   "than 15 minutes late, we may have to offer you another appointment so that the people booked "
                   "after you aren't kept waiting.")
    shown = [c.text for c in backend.generate(GenerationRequest(
        "I'm stuck in traffic and will be about 12 minutes late. Will you still see me?", "ARRIVAL_PREPARATION",
        (*PASSAGES, late))).claims]
    assert any("15 minutes late" in text for text in shown), shown


INTERPRETING = (
    passage("S1", "Interpreters", "We provide professional interpreters free of charge, in person or by phone, for "
            "any language. Please ask when you book, at least two working days before the appointment, so that we "
            "have time to arrange one."),
    passage("S2", "Arriving", "Please arrive 10 minutes before your appointment time and check in at reception."),
    passage("S3", "Cancelling", "If you can't make your appointment, please let us know at least 24 hours "
            "beforehand."),
)


@pytest.mark.parametrize("question", [
    # an interpreter in a patient's words (citetrace.lay), with how far ahead to ask (six probes by
    # independent authors asked this way; every one abstained)
    "My father is profoundly deaf and only signs. Could someone come and sign for him at his check-up, and by "
    "when do I need to sort that out?",
    "my wife only speaks dari. can you get someone to translate for her?? and how far ahead do i have to ask",
    # a provider named as whom the appointment is with is the occasion, not what is asked about
    "My grandfather is deaf. Can you get someone to sign for him at his appointment with Dr Halvorsen, and how "
    "far ahead do I have to ask?",
])
def test_an_interpreter_asked_for_in_lay_words_is_answered_with_its_notice(backend, question):
    claims = backend.generate(GenerationRequest(question, "OTHER", INTERPRETING)).claims
    shown = [c.text for c in claims]
    assert claims and all(c.evidence_labels == ["S1"] for c in claims), shown
    assert any("two working days" in text for text in shown), shown
    assert not any("24 hours" in text or "10 minutes" in text for text in shown), shown


def test_an_amount_asked_is_still_never_answered_by_a_paragraph_that_does_not_state_it(backend):
    """The amount may come from the lead's own paragraph, not from nowhere: "We provide interpreters"
    alone does not say how far ahead."""
    alone = (passage("S1", "Interpreters", "We provide professional interpreters free of charge, in person or by "
                     "phone, for any language.\n\nOur reception is on the ground floor."),)
    generated = backend.generate(GenerationRequest(
        "can you get an interpreter for my mum, and how far ahead do I have to ask?", "OTHER", alone))
    assert generated.claims == []


def test_a_provider_asked_about_is_still_required_in_the_evidence(backend):
    """Signal 2 stands for a provider the question asks about, and for one named both ways."""
    for question in ("Does Dr Halvorsen arrange interpreters?",
                     "For my appointment with Dr Halvorsen: does Dr Halvorsen arrange interpreters?"):
        assert backend.generate(GenerationRequest(question, "OTHER", INTERPRETING)).claims == [], question


def test_the_lay_reading_is_named_in_the_settings(backend):
    assert backend.settings()["lay_reading"].startswith("lay-en-")


ARRIVING = passage("S1", "Arriving", "Please arrive 10 minutes before your appointment time and check in at reception.")
NOTICE = passage("S2", "Interpreters", "Please ask when you book, at least two working days before the appointment, "
                 "so that we have time to arrange one.")
ALSO_ARRIVING = passage("S3", "Checking in", "Arrive ten minutes before your appointment so that you can check in.",
                        "scheduling_policy")


def _withheld(backend, question: str, passages) -> tuple[list[str], list[str]]:
    """The claims of a first attempt, and of a second after the validator withheld its lead."""
    first = backend.generate(GenerationRequest(question, "ARRIVAL_PREPARATION", passages))
    lead = first.claims[0]
    feedback = (Feedback(lead.claim_id, ("AUTHORITY_MISMATCH",), "UNSUPPORTED"),)
    second = backend.generate(GenerationRequest(question, "ARRIVAL_PREPARATION", passages, feedback, attempt=2))
    return [c.text for c in first.claims], [c.text for c in second.claims]


def test_a_withheld_lead_is_not_replaced_by_an_answer_to_another_question(backend):
    """Kestrel: the arrival rule is in a handbook, which may not state one; the second attempt led with
    an interpreter's notice ("two working days before the appointment")."""
    first, second = _withheld(backend, "how early should I come for my appointment?", (ARRIVING, NOTICE))
    assert "10 minutes" in first[0], first
    assert second == [], second


def test_a_withheld_lead_is_replaced_by_a_claim_of_its_kind(backend):
    first, second = _withheld(backend, "how early should I come for my appointment?", (ARRIVING, NOTICE, ALSO_ARRIVING))
    assert second and "minutes before your appointment" in second[0] and second[0] != first[0], (first, second)


def test_a_claim_the_source_policy_refuses_alike_is_not_offered_again(backend):
    """Cedarbrook q07: the handbook's arrival rule was withheld, and the next attempt led with another
    handbook sentence whose paragraph's arrival rule (the amount it was chosen for) was withheld in turn.
    Whatever the same kind of claim from the same class of source says, the source policy refuses it."""
    same_class = passage("S3", "Checking in", "Arrive ten minutes before your appointment so that you can check in.")
    first, second = _withheld(backend, "how early should I come for my appointment?", (ARRIVING, NOTICE, same_class))
    assert "minutes before your appointment" in first[0] and len(first) == 2, first  # two handbook arrival rules
    assert second == [], second


def test_a_follower_withheld_for_authority_does_not_change_what_may_lead(backend):
    """Only the lead's kind binds the next lead: a follower withheld for authority (a "Why: ..." line
    of a cancellation page) leaves the lead as it was (seven probe answers had turned partial)."""
    question = "how early should I come for my appointment?"
    passages = (ARRIVING, NOTICE, ALSO_ARRIVING)
    request = GenerationRequest(question, "ARRIVAL_PREPARATION", passages)
    first = backend.generate(request).claims
    notice = next(claim_id for claim_id, c in backend.candidates(request) if "two working days" in c.text)
    feedback = (Feedback(notice, ("AUTHORITY_MISMATCH",), "UNSUPPORTED"),)  # another kind than the lead's
    second = backend.generate(GenerationRequest(question, "ARRIVAL_PREPARATION", passages, feedback, attempt=2)).claims
    assert second and second[0].text == first[0].text, (first, second)


CLINICS = passage("S1", "Our three clinics", "| Clinic | Address | Open |\n|---|---|---|\n"
                  "| Beaumont Street (downtown) | 220 Beaumont Street | Monday to Friday, 8:00 am to 6:00 pm |\n"
                  "| Orchard Plaza | 14 Harlow Road | Monday to Thursday, 8:00 am to 8:00 pm |\n"
                  "| Ferris Corners | 3 Mill Road | Tuesday and Friday, 9:00 am to 4:00 pm |")


def test_the_rows_of_other_clinics_do_not_answer_for_the_asked_one(backend):
    """Tamarack q01: a question about the Orchard Plaza clinic was answered with Beaumont Street's row."""
    places = ("Tamarack Orchard Plaza Clinic", "Orchard Plaza", "the plaza clinic")
    shown = [c.text for c in backend.generate(GenerationRequest(
        "when does the plaza clinic open, am or pm?", "OTHER", (CLINICS,), place_names=places)).claims]
    assert shown and all("Orchard Plaza" in text for text in shown), shown  # the other two rows had followed
    # with no clinic resolved, every row is a candidate
    anywhere = [c.text for c in backend.generate(GenerationRequest(
        "what time do you open on friday?", "OTHER", (CLINICS,))).claims]
    assert any("Beaumont" in text or "Ferris" in text for text in anywhere), anywhere


TWO_CLINICS_PARKING = passage("S1", "Is there parking?",
                  "Cedar Mill has a free patient lot behind the building, with the entrance off Pellow Lane; two of "
                  "its fourteen spaces are accessible. Quayside has no lot of its own. There is metered parking on "
                  "Brackett Street with a two-hour limit, and the municipal lot on Harbour Road is free after 6 pm.")
CEDAR_MILL = ("Wrenhaven Cedar Mill Clinic", "Cedar Mill", "Fernridge", "Fernridge clinic")
OTHERS = ("Wrenhaven Quayside Clinic", "Quayside", "Brackett Street")


def test_a_paragraph_about_several_clinics_answers_for_the_asked_one_with_its_own_sentences(backend):
    """Wrenhaven q07: "Quayside has no lot of its own. There is metered parking on Brackett Street" was
    shown for Cedar Mill (the sentence after another clinic's name speaks of that clinic)."""
    question = "is there somewhere to park at the fernridge clinic?"
    shown = [c.text for c in backend.generate(GenerationRequest(
        question, "ARRIVAL_PREPARATION", (TWO_CLINICS_PARKING,), place_names=CEDAR_MILL, other_place_names=OTHERS)).claims]
    assert shown and "Pellow Lane" in shown[0], shown
    assert not any("Quayside" in t or "metered" in t for t in shown), shown
    # Asked for Quayside, Cedar Mill's sentence is the other clinic's and the unnamed one after Quayside's is its
    quayside = [c.text for c in backend.generate(GenerationRequest(
        "where do I park at the Quayside clinic?", "ARRIVAL_PREPARATION", (TWO_CLINICS_PARKING,),
        place_names=OTHERS, other_place_names=CEDAR_MILL)).claims]
    assert quayside and not any("Pellow Lane" in t for t in quayside), quayside
    assert any("metered parking" in t for t in quayside), quayside


def test_a_paragraph_per_clinic_answers_for_the_asked_one(backend):
    """Tamarack q38: "**Ferris Corners.** Park for free ..." was shown for the downtown clinic, whose
    own paragraph of the same section says where to park."""
    getting_here = passage("S1", "Getting here", "**Beaumont Street.** There is no parking at the building. The "
                           "nearest public lot is the municipal lot on Dunmore Avenue, one block north, at $2.50 an "
                           "hour.\n\n**Ferris Corners.** Park for free in the community centre lot; the clinic door "
                           "is at the side of the building.")
    shown = [c.text for c in backend.generate(GenerationRequest(
        "where do I park when I go to the downtown office?", "ARRIVAL_PREPARATION", (getting_here,),
        place_names=("downtown", "Tamarack Beaumont Street Clinic", "Beaumont Street"),
        other_place_names=("Tamarack Ferris Corners Clinic", "Ferris Corners"))).claims]
    assert shown and not any("Ferris" in t or "community centre" in t for t in shown), shown


def test_a_paragraph_that_never_names_the_asked_clinic_stays_whole(backend):
    """"At Bayside ... Everywhere else ...": the unnamed sentence after another clinic's rule may be the
    rule for every other clinic, the asked one among them."""
    arriving = passage("S1", "Arriving", "At Bayside, please arrive 30 minutes early for the security check. "
                       "At every other clinic, please arrive 15 minutes before your appointment.")
    shown = [c.text for c in backend.generate(GenerationRequest(
        "how early should I arrive at Northgate?", "ARRIVAL_PREPARATION", (arriving,),
        place_names=("Northgate Clinic", "Northgate"), other_place_names=("Bayside Clinic", "Bayside"))).claims]
    assert any("15 minutes" in t for t in shown), shown


def test_another_clinics_name_counts_only_written_as_a_name():
    """A clinic called Main Street is not named by "the main entrance"."""
    from services.generation.relevance import writes_a_place_name

    assert writes_a_place_name("Quayside has no lot of its own.", ("Quayside",))
    assert writes_a_place_name("Parking on Brackett Street is metered.", ("Brackett Street",))
    assert not writes_a_place_name("Use the main entrance and take the lift.", ("Main Street Clinic", "Main"))
    assert not writes_a_place_name("Parking on brackett street is metered.", ("Brackett Street",))


def test_a_nicknames_one_names_no_place():
    """Morven's ward goes by "the hospital one": "One adult may come in with you" does not name it."""
    from services.generation.relevance import names_a_place

    ward = ("Morven Ward 9, Drumcaskie Royal Infirmary", "Ward 9", "the hospital one")
    assert not names_a_place("One adult may come in with you, and that includes the scan room.", ward)
    assert names_a_place("Children under 16 can't come into Ward 9 at all.", ward)
