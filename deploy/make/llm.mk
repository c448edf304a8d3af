# A real local model (issue 15 point 4): llama-cpp-python's OpenAI-compatible server with
# SmolLM2-135M-Instruct, for the slow end-to-end test tests/e2e/test_real_model.py (generation backend
# `openai`, validator support `remote`, both against that server). `make test` installs it first.
# llm-deps: install (the first build takes about 7 minutes on 2 cores; the wheel is cached in
#   bench/cache/wheels-<flavour>). llm-up / llm-down: a server on LLM_PORT (default 8093) for trying it by hand.
.PHONY: llm-deps llm-up llm-down bench-real-model

llm-deps: setup
	@PY=$(PY) deploy/llm/install.sh >/dev/null && echo "llm-deps: llama-cpp-python server and SmolLM2 present"

llm-up: setup
	@PY=$(PY) deploy/llm/up.sh

llm-down:
	@deploy/llm/down.sh

test: llm-deps

# The real-model e2e run on its own; it writes bench/results/real-model.json.
bench-real-model: setup llm-deps
	CITETRACE_REAL_MODEL_REPORT=bench/results/real-model.json $(VENV)/bin/pytest -q -s tests/e2e/test_real_model.py
