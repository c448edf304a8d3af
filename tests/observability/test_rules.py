"""Prometheus rules and alerts ship valid, and every alert has a promtool unit test that fires it."""

from __future__ import annotations

import subprocess

import yaml

from observability.conftest import DEPLOY

PROM = DEPLOY / "prometheus"


def run(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=PROM)


def test_scrape_configs_and_rule_files_are_valid(promtool):
    for config in ("prometheus.yml", "prometheus.compose.yml"):
        result = run([promtool, "check", "config", config])
        assert result.returncode == 0, result.stdout + result.stderr
    result = run([promtool, "check", "rules", "rules.yml", "alerts.yml"])
    assert result.returncode == 0, result.stdout + result.stderr


def test_alert_unit_tests_pass(promtool):
    result = run([promtool, "test", "rules", "tests/alerts_test.yml"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_every_alert_has_a_firing_unit_test_and_a_runbook_annotation():
    alerts = [rule for group in yaml.safe_load((PROM / "alerts.yml").read_text())["groups"] for rule in group["rules"]]
    names = {rule["alert"] for rule in alerts}
    assert {"CitetraceServiceDown", "CitetraceCitationFailureRatioHigh", "CitetraceDigestFailure",
            "CitetraceAbstentionRateJump", "CitetraceStageP95OverBudget"} <= names
    tests = yaml.safe_load((PROM / "tests" / "alerts_test.yml").read_text())["tests"]
    fired = {case["alertname"] for t in tests for case in t.get("alert_rule_test", []) if case.get("exp_alerts")}
    assert names <= fired, f"alerts without a firing unit test: {sorted(names - fired)}"
    for rule in alerts:
        assert rule["labels"]["severity"] in ("page", "ticket"), rule["alert"]
        assert "First check" in rule["annotations"]["description"], rule["alert"]


def test_every_stage_of_design_section_7_has_a_latency_budget():
    from observability.stages import DESIGN_STAGES

    groups = yaml.safe_load((PROM / "rules.yml").read_text())["groups"]
    budgets = {rule["labels"]["stage"] for group in groups for rule in group["rules"]
               if rule.get("record") == "citetrace:stage_latency_budget_seconds"}
    assert set(DESIGN_STAGES) <= budgets, sorted(set(DESIGN_STAGES) - budgets)


def test_kubernetes_scrape_config_keeps_the_job_and_component_labels():
    """Debian's promtool is built without Kubernetes service discovery, so this one is checked
    structurally: same job and rule files as the checked configs, pods kept by annotation, and
    the `component` label the alerts and dashboards read."""
    import re

    config = yaml.safe_load((PROM / "prometheus.k8s.yml").read_text())
    local = yaml.safe_load((PROM / "prometheus.yml").read_text())
    assert config["rule_files"] == local["rule_files"]
    (job,) = config["scrape_configs"]
    assert job["job_name"] == local["scrape_configs"][0]["job_name"] == "citetrace"
    relabels = job["relabel_configs"]
    targets = {r.get("target_label") for r in relabels}
    assert {"component", "__address__", "__metrics_path__"} <= targets
    keep = [r for r in relabels if r.get("action") == "keep"]
    assert any("prometheus_io_scrape" in r["source_labels"][0] for r in keep)
    address = next(r for r in relabels if r.get("target_label") == "__address__")
    assert re.fullmatch(address["regex"], "10.0.0.7:50052;9152").expand(
        address["replacement"].replace("$", "\\")) == "10.0.0.7:9152"
