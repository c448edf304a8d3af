#!/usr/bin/env bash
# Installs Debian's Chromium for the console's browser tests (idempotent). Playwright drives it via
# executable_path; `playwright install` (a browser download) is never used.
set -euo pipefail
chromium="${CITETRACE_CHROMIUM:-/usr/bin/chromium}"
if [ -x "$chromium" ]; then
  echo "browser-deps: chromium present ($("$chromium" --version 2>/dev/null | head -1))"
  exit 0
fi
if ! command -v apt-get >/dev/null; then
  echo "browser-deps: $chromium missing and no apt-get; install Chromium and set CITETRACE_CHROMIUM" >&2
  exit 1
fi
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
echo "browser-deps: installing chromium (apt)"
as_root apt-get update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq chromium >/dev/null
"$chromium" --version 2>/dev/null | head -1
