"""Generates the Grafana dashboards in deploy/grafana/dashboards/ from code (no Grafana needed).

    python deploy/grafana/generate.py          # rewrite the JSON files
    python deploy/grafana/generate.py --check  # exit 1 if a file differs from what the code makes

Every panel's PromQL is checked with promtool by tests/observability/test_dashboards.py."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "dashboards"
DS = {"type": "prometheus", "uid": "${datasource}"}
RI = "$__rate_interval"
SEL = 'service=~"$service"'


def target(expr: str, legend: str = "", ref: str = "A") -> dict:
    return {"datasource": DS, "expr": expr, "legendFormat": legend, "refId": ref, "range": True}


class Board:
    def __init__(self) -> None:
        self.panels: list[dict] = []
        self._y = 0
        self._x = 0
        self._row_h = 0

    def row(self, title: str) -> None:
        self._newline()
        self.panels.append({"type": "row", "title": title, "collapsed": False, "panels": [],
                            "gridPos": {"h": 1, "w": 24, "x": 0, "y": self._y}, "id": len(self.panels) + 1})
        self._y += 1

    def _newline(self) -> None:
        if self._x:
            self._y += self._row_h
            self._x = 0
            self._row_h = 0

    def panel(self, kind: str, title: str, targets: list[dict], *, unit: str = "short", w: int = 12, h: int = 8,
              description: str = "", **extra: object) -> None:
        if self._x + w > 24:
            self._newline()
        for i, t in enumerate(targets):
            t["refId"] = chr(ord("A") + i)
        panel = {
            "id": len(self.panels) + 1,
            "type": kind,
            "title": title,
            "description": description,
            "datasource": DS,
            "gridPos": {"h": h, "w": w, "x": self._x, "y": self._y},
            "targets": targets,
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
            "options": {"legend": {"displayMode": "table", "placement": "bottom", "calcs": ["lastNotNull", "max"]}}
            if kind == "timeseries" else {"reduceOptions": {"calcs": ["lastNotNull"]}},
        }
        panel.update(extra)
        self.panels.append(panel)
        self._x += w
        self._row_h = max(self._row_h, h)


def variables() -> dict:
    return {"list": [
        {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus",
         "current": {}, "hide": 0},
        {"name": "service", "type": "query", "label": "service", "datasource": DS,
         "query": {"query": "label_values(citetrace_stage_duration_seconds_bucket, service)", "refId": "service"},
         "definition": "label_values(citetrace_stage_duration_seconds_bucket, service)",
         "includeAll": True, "multi": True, "allValue": ".*", "refresh": 2, "current": {}, "hide": 0},
        {"name": "stage", "type": "query", "label": "stage", "datasource": DS,
         "query": {"query": f"label_values(citetrace_stage_duration_seconds_bucket{{{SEL}}}, stage)",
                   "refId": "stage"},
         "definition": f"label_values(citetrace_stage_duration_seconds_bucket{{{SEL}}}, stage)",
         "includeAll": True, "multi": True, "allValue": ".*", "refresh": 2, "current": {}, "hide": 0},
    ]}


def dashboard(uid: str, title: str, description: str, board: Board) -> dict:
    return {
        "uid": uid,
        "title": title,
        "description": description,
        "tags": ["citetrace"],
        "timezone": "utc",
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "graphTooltip": 1,
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "templating": variables(),
        "annotations": {"list": []},
        "panels": board.panels,
    }


def overview() -> dict:
    b = Board()
    stage_sel = f'{SEL}, stage=~"$stage"'
    b.row("Services")
    b.panel("stat", "Services up", [target('sum by (component) (up{job="citetrace"})', "{{component}}")],
            w=12, h=4, description="1 = scraped; 0 = down (alert CitetraceServiceDown).")
    b.panel("table", "Build", [target("max by (service, version) (citetrace_build_info)", "{{service}} {{version}}")],
            w=12, h=4, description="The version each service reports (citetrace_build_info).")

    b.row("Per-stage latency (DESIGN.md §7 stages)")
    for q in ("0.50", "0.95", "0.99"):
        name = {"0.50": "p50", "0.95": "p95", "0.99": "p99"}[q]
        b.panel("timeseries", f"Stage latency {name}", [target(
            f"histogram_quantile({q}, sum by (service, stage, le) "
            f"(rate(citetrace_stage_duration_seconds_bucket{{{stage_sel}}}[{RI}])))",
            "{{service}} {{stage}}")], unit="s", w=8,
            description=f"{name} wall time per stage from citetrace_stage_duration_seconds (buckets 1 ms..10 s).")
    b.panel("timeseries", "Stage p95 vs budget", [
        target("citetrace:stage_duration_seconds:p95_5m", "{{stage}} p95"),
        target("citetrace:stage_latency_budget_seconds", "{{stage}} budget"),
    ], unit="s", w=12, description="Recording rules from deploy/prometheus/rules.yml (alert CitetraceStageP95OverBudget).")
    b.panel("timeseries", "Stage throughput", [target(
        f"sum by (service, stage) (rate(citetrace_stage_duration_seconds_count{{{stage_sel}}}[{RI}]))",
        "{{service}} {{stage}}")], unit="ops", w=12)

    b.row("Answers")
    b.panel("timeseries", "Answer parts by outcome", [target(
        f"sum by (outcome) (rate(citetrace_answers_total[{RI}]))", "{{outcome}}")], unit="ops", w=12,
        description="citetrace_answers_total: one per answer part, by outcome (DESIGN.md §3).")
    b.panel("timeseries", "Abstention rate", [
        target(f'sum(rate(citetrace_answers_total{{outcome="ABSTAINED_NO_EVIDENCE"}}[{RI}])) '
               f"/ sum(rate(citetrace_answers_total[{RI}]))", "abstained"),
        target("citetrace:abstention_ratio:rate1d", "1-day baseline"),
    ], unit="percentunit", w=12, description="Share of answer parts that abstained (alert CitetraceAbstentionRateJump).")
    b.panel("timeseries", "Passages offered to the generator", [
        target(f"histogram_quantile(0.5, sum by (le) (rate(citetrace_passages_offered_bucket[{RI}])))", "p50"),
        target(f"histogram_quantile(0.95, sum by (le) (rate(citetrace_passages_offered_bucket[{RI}])))", "p95"),
    ], w=12)
    b.panel("timeseries", "Retrieval empty rate", [target(
        f"sum(rate(citetrace_retrieval_empty_total[{RI}])) "
        f'/ sum(rate(citetrace_stage_duration_seconds_count{{stage="retrieval.search"}}[{RI}]))', "empty")],
        unit="percentunit", w=12, description="Searches with no eligible passage per search.")

    b.row("Citations and evidence integrity")
    b.panel("timeseries", "Citation failures by reason", [target(
        f"sum by (reason) (rate(citetrace_citation_failures_total[{RI}]))", "{{reason}}")], unit="ops", w=12,
        description="Named reasons of DESIGN.md §5.")
    b.panel("timeseries", "Citation failures per validation", [target(
        f"sum(rate(citetrace_citation_failures_total[{RI}])) "
        f'/ sum(rate(citetrace_stage_duration_seconds_count{{stage="validator.validate"}}[{RI}]))', "ratio")],
        unit="percentunit", w=12, description="Alert CitetraceCitationFailureRatioHigh above 5%.")
    b.panel("timeseries", "Digest failures", [target(
        "sum by (service, kind) (increase(citetrace_digest_failures_total[1h]))", "{{service}} {{kind}}")],
        w=8, description="Any value above 0 pages (CitetraceDigestFailure).")
    b.panel("timeseries", "Scope violations blocked", [target(
        "sum by (service) (increase(citetrace_scope_violations_blocked_total[1h]))", "{{service}}")], w=8)
    b.panel("timeseries", "Trace outbox pending", [target(
        "max by (service) (citetrace_trace_outbox_pending)", "{{service}}")], w=8)

    b.row("Slot freshness")
    b.panel("timeseries", "Slot data age at read", [
        target(f"histogram_quantile(0.5, sum by (le) (rate(citetrace_slot_read_age_seconds_bucket[{RI}])))", "p50"),
        target(f"histogram_quantile(0.95, sum by (le) (rate(citetrace_slot_read_age_seconds_bucket[{RI}])))", "p95"),
    ], unit="s", w=12, description="Request time minus the slot source's as_of (citetrace_slot_read_age_seconds).")
    b.panel("timeseries", "Slot reads", [target(
        f"sum(rate(citetrace_slot_read_age_seconds_count[{RI}]))", "reads")], unit="ops", w=12)

    b.row("gRPC")
    b.panel("timeseries", "RPC rate by code", [target(
        f"sum by (service, method, code) (rate(citetrace_grpc_server_handled_total{{{SEL}}}[{RI}]))",
        "{{service}} {{method}} {{code}}")], unit="ops", w=8)
    b.panel("timeseries", "RPC error ratio", [target(
        f'sum by (service) (rate(citetrace_grpc_server_handled_total{{{SEL}, code!="OK"}}[{RI}])) '
        f"/ sum by (service) (rate(citetrace_grpc_server_handled_total{{{SEL}}}[{RI}]))", "{{service}}")],
        unit="percentunit", w=8)
    b.panel("timeseries", "RPC handling p95", [target(
        f"histogram_quantile(0.95, sum by (service, method, le) "
        f"(rate(citetrace_grpc_server_handling_seconds_bucket{{{SEL}}}[{RI}])))", "{{service}} {{method}}")],
        unit="s", w=8)
    return dashboard("citetrace-overview", "citetrace overview",
                     "Per-stage latency, answer outcomes, citation failures, evidence integrity, slot freshness.", b)


DASHBOARDS = {"citetrace-overview.json": overview}


def render() -> dict[str, str]:
    return {name: json.dumps(make(), indent=2, sort_keys=True) + "\n" for name, make in DASHBOARDS.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    stale = []
    for name, text in render().items():
        path = OUT / name
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path))
        else:
            OUT.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if stale:
        print("stale (run python deploy/grafana/generate.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
