#!/usr/bin/env bash
# Starts llama-cpp-python's OpenAI-compatible server with SmolLM2-135M-Instruct in the background
# (idempotent: a server already answering /v1/models on the port is left as it is).
# LLM_PORT (default 8093), LLM_STATE (default .citetrace/llm: pid file and log).
set -euo pipefail
PY="${PY:-.venv/bin/python}"
PORT="${LLM_PORT:-8093}"
STATE="${LLM_STATE:-.citetrace/llm}"
url="http://127.0.0.1:$PORT/v1/models"
if curl -fsS -m 2 "$url" >/dev/null 2>&1; then
  echo "llm-up: serving at http://127.0.0.1:$PORT/v1"
  exit 0
fi
model=$(deploy/llm/install.sh | tail -1)
mkdir -p "$STATE"
nohup "$PY" -m llama_cpp.server --model "$model" --model_alias smollm2-135m-instruct --host 127.0.0.1 \
  --port "$PORT" --n_threads "${LLM_THREADS:-2}" --n_ctx "${LLM_CTX:-4096}" >"$STATE/server.log" 2>&1 &
echo $! >"$STATE/server.pid"
for _ in $(seq 1 120); do
  if curl -fsS -m 2 "$url" >/dev/null 2>&1; then
    echo "llm-up: serving at http://127.0.0.1:$PORT/v1 (pid $(cat "$STATE/server.pid"), model $model)"
    exit 0
  fi
  kill -0 "$(cat "$STATE/server.pid")" 2>/dev/null || { echo "llm-up: server exited; see $STATE/server.log" >&2; tail -20 "$STATE/server.log" >&2; exit 1; }
  sleep 1
done
echo "llm-up: no answer on $url after 120 s; see $STATE/server.log" >&2
exit 1
