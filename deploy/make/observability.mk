# Observability and deployment checks (issue 9). Tools come from Debian's packages and the Go
# module proxy through idempotent scripts, so a fresh machine (CI) gets them from `make`.
.PHONY: observability-tools check-deploy dashboards

observability-tools: setup
	@deploy/tools/install-prometheus.sh >/dev/null

# Regenerate the Grafana dashboards from deploy/grafana/generate.py.
dashboards: setup
	@$(PY) deploy/grafana/generate.py

# Every deploy artefact validated: promtool rules/alert unit tests, dashboards' PromQL, compose and
# Kubernetes manifests, env vars against the settings classes, a real Prometheus scraping the stack.
check-deploy: setup observability-tools
	$(VENV)/bin/pytest -q tests/observability
