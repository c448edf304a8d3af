#!/usr/bin/env bash
# Installs kustomize (pinned) from the Go module proxy into .venv/bin (idempotent).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
version="v5.5.0"
bin="$repo/.venv/bin/kustomize"
stamp="$repo/.venv/.kustomize-${version}"
if [ -x "$bin" ] && [ -f "$stamp" ]; then
  exit 0
fi
command -v go >/dev/null || { echo "install-kustomize: go is required" >&2; exit 1; }
mkdir -p "$repo/.venv/bin"
GOBIN="$repo/.venv/bin" GOFLAGS=-mod=mod go install "sigs.k8s.io/kustomize/kustomize/v5@${version}"
touch "$stamp"
echo "install-kustomize: kustomize ${version} in $bin"
