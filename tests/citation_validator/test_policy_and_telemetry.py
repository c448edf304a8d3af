"""The source policy and support weights are data files, validated at start-up with errors naming the
file and key; the spans of a validation nest as DESIGN §7 says and carry no text."""

from __future__ import annotations

import json

import pytest
from citetrace.kit.settings import SettingsError
from citetrace.kit.telemetry import add_span_processor, setup_tracing
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from services.citation_validator.bootstrap import build_spec
from services.citation_validator.policy import SourcePolicy, SourcePolicyError
from services.citation_validator.settings import HERE, Settings
from services.citation_validator.support.embedded import DEFAULT_WEIGHTS, Weights, WeightsError

from .conftest import claim


def test_shipped_policy_loads_and_says_profiles_cannot_set_cancellation_terms():
    policy = SourcePolicy.load(HERE / "source_policy.yaml")
    assert policy.version == "source-policy-2026.11.1"
    assert not policy.permits("CANCELLATION_TERM", "provider_profile")
    assert policy.permits("CANCELLATION_TERM", "cancellation_policy")
    assert policy.permits("PROVIDER_DESCRIPTION", "provider_profile")
    assert policy.claim_type("") == "GENERAL_POLICY"


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("claim_types: {ARRIVAL_RULE: [scheduling_policy]}\n", "'version'"),
        ("version: v1\nclaim_types: {ARRIVAL_RUL: [scheduling_policy]}\n", "claim_types.ARRIVAL_RUL"),
        ("version: v1\nclaim_types: {ARRIVAL_RULE: [blog_post]}\n", "blog_post"),
        ("version: v1\nclaim_types: {ARRIVAL_RULE: [scheduling_policy]}\nextra: 1\n", "extra"),
        ("version: v1\nclaim_types: [\n", "not valid YAML"),
    ],
)
def test_bad_policy_files_are_rejected_naming_file_and_key(tmp_path, body, needle):
    path = tmp_path / "policy.yaml"
    path.write_text(body)
    with pytest.raises(SourcePolicyError) as caught:
        SourcePolicy.load(path)
    assert str(path) in str(caught.value) and needle in str(caught.value)


def test_bad_policy_file_fails_the_service_start(tmp_path):
    path = tmp_path / "policy.yaml"
    path.write_text("version: v1\nclaim_types: {NOT_A_TYPE: []}\n")
    with pytest.raises(SourcePolicyError):
        build_spec(Settings(port=0, metrics_port=-1, source_policy_file=path))


def test_weights_file_is_validated(tmp_path):
    assert Weights.load(DEFAULT_WEIGHTS).version.startswith("support-embedded-")
    data = json.loads(DEFAULT_WEIGHTS.read_text(encoding="utf-8"))
    bad = tmp_path / "w.json"
    bad.write_text(json.dumps({**data, "features": data["features"][:-1]}))
    with pytest.raises(WeightsError, match="retrain"):
        Weights.load(bad)
    bad.write_text(json.dumps({**data, "thresholds": {"supported": 0.2, "unsupported": 0.5}}))
    with pytest.raises(WeightsError, match="unsupported <= supported"):
        Weights.load(bad)
    bad.write_text("{not json")
    with pytest.raises(WeightsError, match=str(bad)):
        Weights.load(bad)
    with pytest.raises(SettingsError, match="support_remote_base_url"):
        Settings(port=0, metrics_port=-1, support_model="remote")


def test_validate_span_has_reload_and_support_children_without_text(validate, world):
    exporter = InMemorySpanExporter()
    setup_tracing("citetrace-test")
    add_span_processor(SimpleSpanProcessor(exporter))
    validate([claim("c1", "Please arrive 15 minutes before your appointment time.", "S1")],
             world.offered("val-arrival"))
    spans = exporter.get_finished_spans()
    parent = next(s for s in spans if s.name == "validator.validate")
    children = {s.name: s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id}
    assert {"validator.reload", "validator.support"} <= set(children)
    assert parent.attributes["citetrace.passed"] is True
    assert children["validator.reload"].attributes["citetrace.passages"] == 1
    assert children["validator.support"].attributes["citetrace.supported"] == 1
    for span in (parent, *children.values()):
        assert not any("arrive" in str(v) for v in span.attributes.values())
