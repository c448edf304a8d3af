"""The Grafana dashboards are what deploy/grafana/generate.py makes, every panel's PromQL parses
(promtool check rules), and every metric a panel reads is one the services export or a rule records."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import yaml
from citetrace.kit import metrics
from prometheus_client import REGISTRY

from observability.conftest import DEPLOY, ROOT

GRAFANA = DEPLOY / "grafana"
# Grafana's variables, replaced by what Grafana would substitute.
SUBSTITUTIONS = {"$__rate_interval": "1m", "$__interval": "30s", "$__range": "1h",
                 "$service": ".*", "$stage": ".*"}


def panel_queries() -> list[tuple[str, str, str]]:
    queries = []
    for path in sorted((GRAFANA / "dashboards").glob("*.json")):
        board = json.loads(path.read_text())
        for panel in board["panels"]:
            for target in panel.get("targets", []):
                queries.append((path.name, panel["title"], target["expr"]))
    return queries


def concrete(expr: str) -> str:
    for variable, value in SUBSTITUTIONS.items():
        expr = expr.replace(variable, value)
    assert "$" not in expr, f"unknown Grafana variable in {expr}"
    return expr


def test_dashboards_are_generated_from_code():
    result = subprocess.run([sys.executable, str(GRAFANA / "generate.py"), "--check"],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr


def test_dashboard_covers_the_issue_panels():
    titles = {title for _, title, _ in panel_queries()}
    assert {"Stage latency p50", "Stage latency p95", "Stage latency p99", "Answer parts by outcome",
            "Abstention rate", "Citation failures by reason", "Retrieval empty rate", "Digest failures",
            "Slot data age at read"} <= titles


def test_every_panel_query_passes_promtool(promtool, tmp_path):
    queries = panel_queries()
    assert len(queries) >= 20
    rules = {"groups": [{"name": "dashboard-panels", "rules": [
        {"record": f"panel:query_{i}:check", "expr": concrete(expr)} for i, (_, _, expr) in enumerate(queries)
    ]}]}
    path = tmp_path / "panels.yml"
    path.write_text(yaml.safe_dump(rules))
    result = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(queries)} rules found" in result.stdout


def test_promtool_rejects_a_broken_query(promtool, tmp_path):
    path = tmp_path / "bad.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "g", "rules": [
        {"record": "x:y:z", "expr": "sum by (le (rate(citetrace_stage_duration_seconds_bucket[1m]))"}]}]}))
    result = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0


def test_every_metric_in_panels_and_rules_is_exported_or_recorded():
    exported = set()
    for collector_metric in REGISTRY.collect():
        for sample in collector_metric.samples:
            exported.add(sample.name)
    # Label-less families have samples already; labelled ones may not, so add their names too.
    for value in vars(metrics).values():
        name = getattr(value, "_name", None)
        kind = getattr(value, "_type", None)
        if name and kind:
            exported.add(name)
            exported.update({f"{name}_total", f"{name}_bucket", f"{name}_count", f"{name}_sum"})
    rules = yaml.safe_load((DEPLOY / "prometheus" / "rules.yml").read_text())
    recorded = {rule["record"] for group in rules["groups"] for rule in group["rules"]}
    texts = [expr for _, _, expr in panel_queries()]
    alerts = yaml.safe_load((DEPLOY / "prometheus" / "alerts.yml").read_text())
    texts += [rule["expr"] for group in rules["groups"] + alerts["groups"] for rule in group["rules"]]
    used = {name for text in texts for name in re.findall(r"citetrace[_:][a-z0-9_:]+", text)}
    unknown = sorted(name for name in used if name not in exported and name not in recorded)
    assert not unknown, f"queried but neither exported nor recorded: {unknown}"
