#!/usr/bin/env bash
# Installs Prometheus and promtool from Debian's packages (idempotent) without leaving a
# Debian-started prometheus service running (its port 9090 would clash with the tests' own).
set -euo pipefail

if command -v prometheus >/dev/null && command -v promtool >/dev/null; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "install-prometheus: need root (apt-get install -y prometheus)" >&2
  exit 1
fi

# Keep apt from starting the daemon: a temporary policy-rc.d unless one already exists.
created_policy=0
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
  chmod +x /usr/sbin/policy-rc.d
  created_policy=1
fi
cleanup() { if [ "$created_policy" = 1 ]; then rm -f /usr/sbin/policy-rc.d; fi; }
trap cleanup EXIT

export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -q --no-install-recommends prometheus >/dev/null 2>&1; then
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends prometheus >/dev/null
fi

# If a service manager started it anyway, stop and disable it.
if command -v systemctl >/dev/null && systemctl is-active --quiet prometheus 2>/dev/null; then
  systemctl stop prometheus || true
  systemctl disable prometheus || true
fi
if [ -f /run/prometheus/prometheus.pid ]; then
  kill "$(cat /run/prometheus/prometheus.pid)" 2>/dev/null || true
fi
if command -v update-rc.d >/dev/null; then
  update-rc.d prometheus disable >/dev/null 2>&1 || true
fi

prometheus --version 2>&1 | head -1
promtool --version 2>&1 | head -1
