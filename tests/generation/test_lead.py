"""The lead claim's learned veto (services/generation/lead.py): its weights file is checked when
loaded, its version and threshold are named in the generator's settings, and it only ever removes a
lead the rule admits (never adds one)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from citetrace.embeddings import Embedder

from services.generation.core import Feedback, GenerationRequest, OfferedPassage
from services.generation.extractive import ExtractiveBackend
from services.generation.lead import DEFAULT_WEIGHTS, FEATURES, LeadGate, LeadWeights
from services.generation.semantic import EmbeddedUnitSimilarity

from .test_semantic_selection import PASSAGES

UNSEEN = Path(__file__).resolve().parents[1] / "e2e" / "unseen"


def shipped() -> dict:
    return json.loads(DEFAULT_WEIGHTS.read_text(encoding="utf-8"))


def test_the_shipped_weights_load_with_a_stated_operating_point():
    weights = LeadWeights()
    assert weights.version.startswith("lead-")
    assert 0.0 < weights.threshold < 1.0
    assert "out-of-fold" in shipped()["operating_point"]
    # the confident operating point is stricter, and stated
    assert weights.threshold <= weights.confident_threshold < 1.0
    assert "precision" in shipped()["confident_operating_point"]


@pytest.mark.parametrize("change,message", [
    (lambda d: d.update(features=[*FEATURES[:-1], "other"]), "retrain"),
    (lambda d: d.update(coef=d["coef"][:-1]), "vector lengths"),
    (lambda d: d.update(threshold=1.5), "threshold"),
    (lambda d: d.pop("confident_threshold"), "confident_threshold"),
    (lambda d: d.update(confident_threshold=d["threshold"] - 0.01), "confident_threshold"),
    (lambda d: d.update(confident_threshold=1.2), "confident_threshold"),
    (lambda d: d.pop("intercept"), "intercept"),
    (lambda d: d.pop("embedding_model"), "embedding_model"),
])
def test_bad_weights_are_refused_with_what_is_wrong(tmp_path, change, message):
    data = shipped()
    change(data)
    path = tmp_path / "lead.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        LeadWeights(path)


@pytest.fixture(scope="module")
def backends() -> tuple[ExtractiveBackend, ExtractiveBackend]:
    embedder = Embedder(kernels="integer")
    similarity = EmbeddedUnitSimilarity(embedder)
    similarity.warm_up()
    gated = ExtractiveBackend(similarity=similarity, lead_gate=LeadGate(embedder))
    gated.warm_up()
    return ExtractiveBackend(similarity=similarity), gated


def test_the_settings_name_the_veto(backends):
    _, gated = backends
    settings = gated.settings()
    assert settings["lead_model"] == LeadWeights().version
    assert float(settings["lead_threshold"]) == LeadWeights().threshold
    assert float(settings["lead_confident_threshold"]) == LeadWeights().confident_threshold


def test_weights_trained_on_another_embedder_refuse_to_start(tmp_path):
    data = shipped()
    data["embedding_model"] = "some-other-model@0000:256:float"
    path = tmp_path / "lead.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match="retrain"):
        LeadGate(Embedder(kernels="integer"), LeadWeights(path)).warm_up()


def test_without_meaning_there_is_no_veto():
    assert ExtractiveBackend(lead_gate=LeadGate(Embedder(kernels="integer"))).lead_gate is None


@pytest.mark.parametrize("question", [
    "Do you offer translators?", "Who do I give my referral to?", "Can my dog wait at reception?",
    "When do I need to be at the desk?", "Can a child come alone?", "Is the practice open at the weekend?",
])
def test_the_veto_chooses_among_the_rules_candidates_and_never_adds_one(backends, question):
    """The veto changes which admitted unit leads (or that none does); it never makes a unit that is
    no candidate an answer."""
    plain, gated = backends
    request = GenerationRequest(question, "OTHER", PASSAGES)
    candidates = {c.text for _, c in plain.candidates(request)}
    shown = [c.text for c in gated.generate(request).claims]
    assert set(shown) <= candidates
    if shown:
        lead = next(c for _, c in gated.candidates(request) if c.text == shown[0])
        assert gated._answers(lead, True, vacuous_ok=True)


def sections(tenant: str) -> tuple[OfferedPassage, ...]:
    """Every section of an independent probe tenant's documents, offered as one search would."""
    out: list[OfferedPassage] = []
    for path in sorted((UNSEEN / tenant).glob("*.md")):
        body = path.read_text(encoding="utf-8").split("---", 2)[2]
        title = re.search(r"^# (.+)$", body, re.M).group(1)
        for section in re.split(r"^## ", body, flags=re.M)[1:]:
            heading, _, text = section.partition("\n")
            out.append(OfferedPassage(f"S{len(out) + 1}", f"p{len(out)}", " ".join(text.split()), "handbook",
                                      f"{title} > {heading.strip()}", title))
    return tuple(out)


def test_a_lead_about_the_subject_but_not_the_question_is_vetoed(backends):
    """Who cancels is what is asked: the patient's late-cancellation waiver shares the subject
    (cancelling, a fee) and reads close (0.5 and more), but it answers nothing about the clinic
    cancelling. The rule admits it by meaning alone; the veto sees that "refund" and "doctor" are
    answered by no word of it, and the part abstains."""
    plain, gated = backends
    request = GenerationRequest("will i get a refund if the doctor cancels my appointment?", "OTHER",
                                sections("larchmont"))
    assert any("waive" in c.text for c in plain.generate(request).claims), "the case no longer shows the failure"
    assert gated.generate(request).claims == []


def _gate_with(tmp_path, threshold: float, confident: float) -> LeadGate:
    data = shipped()
    data.update(threshold=threshold, confident_threshold=confident)
    path = tmp_path / "lead.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return LeadGate(Embedder(kernels="integer"), LeadWeights(path))


def test_a_confident_only_request_leads_only_past_the_confident_operating_point(backends, tmp_path):
    """GenerateRequest.confident_only: the same question and passages answer at the usual point and
    show nothing when no lead reaches the confident one (here set out of reach)."""
    plain, _ = backends
    request = GenerationRequest("Do you have interpreters?", "OTHER", PASSAGES)
    usual = ExtractiveBackend(similarity=plain.similarity, lead_gate=_gate_with(tmp_path, 0.0, 0.0))
    assert usual.generate(request).claims, "the case no longer answers at all"
    assert usual.generate(dataclasses.replace(request, confident_only=True)).claims
    strict = ExtractiveBackend(similarity=plain.similarity, lead_gate=_gate_with(tmp_path, 0.0, 1.0))
    assert strict.generate(request).claims
    assert strict.generate(dataclasses.replace(request, confident_only=True)).claims == []


def test_without_meaning_a_confident_only_request_gets_no_claims():
    """The lead model is what is confident; a backend without one (no similarity) answers nothing
    that only a confident lead may answer."""
    bare = ExtractiveBackend()
    request = GenerationRequest("Do you have interpreters?", "OTHER", PASSAGES)
    assert bare.generate(request).claims
    assert bare.generate(dataclasses.replace(request, confident_only=True)).claims == []


def test_a_second_choice_after_a_withheld_lead_is_shown_only_when_confident(backends):
    """Tōtara q03: with the handbook's arrival rule withheld (AUTHORITY_MISMATCH), a scan page's bladder
    advice led "how early do I need to arrive?". The replacement is a second choice: it leads only at the
    veto's confident operating point. Here the lateness rule (of the withheld lead's kind, stating a
    duration) led at the usual one, an answer to another question."""
    plain, gated = backends

    def visiting(label: str, section: str, text: str, source_class: str) -> OfferedPassage:
        return OfferedPassage(label, f"p-{label}", text, source_class, f"Visiting us > {section}", "Visiting us")

    passages = (visiting("S1", "Arriving", "Please arrive 10 minutes before your appointment time and check in at "
                         "reception.", "handbook"),
                visiting("S2", "Running late", "If you arrive more than 15 minutes late we may need to rebook you.",
                         "scheduling_policy"))
    question = "How early do I need to arrive for my appointment?"
    first = gated.generate(GenerationRequest(question, "ARRIVAL_PREPARATION", passages)).claims
    assert first and "10 minutes" in first[0].text, first
    feedback = (Feedback(first[0].claim_id, ("AUTHORITY_MISMATCH",), "UNSUPPORTED"),)
    second = gated.generate(GenerationRequest(question, "ARRIVAL_PREPARATION", passages, feedback, attempt=2)).claims
    assert second == [], [c.text for c in second]
