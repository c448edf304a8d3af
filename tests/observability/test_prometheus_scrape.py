"""A real Prometheus (Debian package) scrapes the local stack with the shipped scrape config
(deploy/prometheus/prometheus.yml; only the ports are shifted to the test stack's), loads the
shipped rules and alerts, and its HTTP API answers for the stage latency and citation-failure
series and for the recording rules the dashboards read."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request

import grpc
import pytest
import yaml
from citetrace.kit.stack import SERVICES, WEB_APPS
from citetrace.orchestrator.v1 import orchestrator_service_pb2 as orch_pb2
from citetrace.orchestrator.v1 import orchestrator_service_pb2_grpc as orch_grpc
from citetrace.retrieval.v1 import retrieval_service_pb2 as ret_pb2
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as ret_grpc

from apps.cli.common import dev_token
from observability.conftest import DEPLOY

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PromAPI:
    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"

    def get(self, path: str, **params: str) -> dict:
        url = f"{self.base}{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
        with urllib.request.urlopen(url, timeout=5) as reply:  # noqa: S310 - loopback only
            return json.loads(reply.read())

    def query(self, promql: str) -> list[dict]:
        body = self.get("/api/v1/query", query=promql)
        assert body["status"] == "success", body
        return body["data"]["result"]

    def wait(self, promql: str, predicate=bool, timeout: float = 60.0) -> list[dict]:
        deadline = time.monotonic() + timeout
        while True:
            result = self.query(promql)
            if predicate(result) or time.monotonic() > deadline:
                return result
            time.sleep(1.0)


def test_config_variant_changes_only_the_ports(traced_stack, tmp_path):
    stack, _ = traced_stack
    shipped = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    variant = shifted_config(shipped, stack.offset)
    assert variant["rule_files"] == shipped["rule_files"]
    assert [c["job_name"] for c in variant["scrape_configs"]] == ["citetrace"]
    shipped_targets = [t for sc in shipped["scrape_configs"][0]["static_configs"] for t in sc["targets"]]
    assert sorted(int(t.rsplit(":", 1)[1]) for t in shipped_targets) == sorted(
        i.metrics_port for i in (*SERVICES, *WEB_APPS))


def shifted_config(config: dict, offset: int) -> dict:
    config = json.loads(json.dumps(config))
    for scrape in config["scrape_configs"]:
        for static in scrape["static_configs"]:
            static["targets"] = [f"{t.rsplit(':', 1)[0]}:{int(t.rsplit(':', 1)[1]) + offset}" for t in static["targets"]]
    return config


@pytest.fixture(scope="module")
def prometheus(traced_stack, prometheus_bin, tmp_path_factory):
    stack, _ = traced_stack
    workdir = tmp_path_factory.mktemp("prometheus")
    shipped = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    (workdir / "prometheus.yml").write_text(yaml.safe_dump(shifted_config(shipped, stack.offset)))
    for rules in shipped["rule_files"]:
        shutil.copy(DEPLOY / "prometheus" / rules, workdir / rules)
    port = free_port()
    log = open(workdir / "prometheus.log", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [prometheus_bin, f"--config.file={workdir / 'prometheus.yml'}", f"--storage.tsdb.path={workdir / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}", "--web.enable-lifecycle"],
        stdout=log, stderr=subprocess.STDOUT)
    api = PromAPI(port)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{api.base}/-/ready", timeout=2) as reply:  # noqa: S310
                if reply.status == 200:
                    break
        except OSError:
            time.sleep(0.5)
    else:
        process.terminate()
        pytest.fail(f"prometheus did not become ready: {(workdir / 'prometheus.log').read_text()[-2000:]}")
    try:
        yield stack, api
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def send_traffic(stack) -> None:
    token = dev_token(stack.data_dir, "acme-health", ["patient"])
    metadata = [("authorization", f"Bearer {token}")]
    with stack.channel("orchestrator") as ch:
        try:
            orch_grpc.OrchestratorServiceStub(ch).Ask(
                orch_pb2.AskRequest(question="When should I arrive for my appointment?", location_id="acme-northside"),
                metadata=metadata, timeout=60)
            return
        except grpc.RpcError as err:
            if err.code() != grpc.StatusCode.UNIMPLEMENTED:
                raise
    with stack.channel("retrieval") as ch:  # before the orchestrator lands
        ret_grpc.RetrievalServiceStub(ch).Search(
            ret_pb2.SearchRequest(query="arrive before appointment", k=5), metadata=metadata, timeout=30)


def test_prometheus_scrapes_every_service_with_the_shipped_config(prometheus):
    stack, api = prometheus
    scraped = (*SERVICES, *WEB_APPS)
    up = api.wait('up{job="citetrace"} == 1', lambda r: len(r) == len(scraped))
    assert sorted(r["metric"]["component"] for r in up) == sorted(i.name for i in scraped)
    info = api.query("citetrace_build_info")
    assert {r["metric"]["service"] for r in info} == {i.name for i in scraped}


def test_prometheus_has_stage_latency_and_citation_failure_series(prometheus):
    stack, api = prometheus
    api.wait('up{job="citetrace"} == 1', lambda r: len(r) == len(SERVICES) + len(WEB_APPS))
    # The stage series exist from start-up (zero), so the request below shows up as a rate.
    assert api.wait('citetrace_stage_duration_seconds_count{service="retrieval", stage="retrieval.search"}')
    time.sleep(6)  # one more scrape before the traffic
    send_traffic(stack)
    # The next scrapes see the request: a non-zero rate of retrieval.search observations.
    rate = api.wait('sum(rate(citetrace_stage_duration_seconds_count{stage="retrieval.search"}[1m])) > 0')
    assert rate and float(rate[0]["value"][1]) > 0
    buckets = api.query('citetrace_stage_duration_seconds_bucket{service="retrieval", stage="retrieval.search"}')
    bounds = {r["metric"]["le"] for r in buckets}
    assert {"0.001", "0.01", "0.1", "1.0", "10.0", "+Inf"} <= bounds
    quantile = api.query('histogram_quantile(0.95, sum by (le) (rate(citetrace_stage_duration_seconds_bucket'
                         '{stage="retrieval.search"}[1m])))')
    assert 0 < float(quantile[0]["value"][1]) <= 10
    failures = api.query('citetrace_citation_failures_total{component="citation_validator"}')
    reasons = {r["metric"]["reason"] for r in failures}
    assert {"CITATION_GAP", "SPAN_DIGEST_MISMATCH", "SCOPE_VIOLATION", "STALE_VERSION"} <= reasons


def test_prometheus_loads_and_evaluates_the_shipped_rules_and_alerts(prometheus):
    _, api = prometheus
    groups = api.get("/api/v1/rules")["data"]["groups"]
    names = {g["name"] for g in groups}
    assert {"citetrace-latency", "citetrace-quality", "citetrace-stage-budgets", "citetrace-alerts"} <= names
    alerts = {r["name"]: r for g in groups for r in g["rules"] if r["type"] == "alerting"}
    assert "CitetraceServiceDown" in alerts
    for rule in (r for g in groups for r in g["rules"]):
        assert rule["health"] in ("ok", "unknown"), (rule["name"], rule.get("lastError"))
    budgets = api.wait("citetrace:stage_latency_budget_seconds", lambda r: len(r) >= 13, timeout=90)
    assert {r["metric"]["stage"] for r in budgets} >= {"retrieval.search", "orchestrator.ask", "trace.record"}
    firing = api.query('ALERTS{alertname="CitetraceServiceDown", alertstate="firing"}')
    assert firing == []
