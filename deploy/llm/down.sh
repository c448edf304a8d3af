#!/usr/bin/env bash
# Stops the model server that deploy/llm/up.sh started (by its pid file).
set -euo pipefail
STATE="${LLM_STATE:-.citetrace/llm}"
if [ -f "$STATE/server.pid" ]; then
  pid=$(cat "$STATE/server.pid")
  kill "$pid" 2>/dev/null && echo "llm-down: stopped $pid" || echo "llm-down: $pid was not running"
  rm -f "$STATE/server.pid"
else
  echo "llm-down: nothing started"
fi
