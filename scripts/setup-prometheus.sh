#!/usr/bin/env bash
# The Prometheus tests start a real prometheus server that scrapes Nimbus's /metrics and
# evaluates histogram_quantile(): use the one on PATH, install Debian's package if we can
# (root with apt-get), else say what to install.
set -euo pipefail

if command -v prometheus >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "squall: installing prometheus (Debian's prometheus package) for the Prometheus tests"
  log=$(mktemp)
  # Quiet unless it fails. The tests start their own server on a free loopback port; the
  # package's service is not needed (and is not started where there is no init system).
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
         apt-get install -y -qq --no-install-recommends prometheus; } >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "squall: installing prometheus with apt-get failed (output above)" >&2
    exit 1
  fi
  rm -f "$log"
  if command -v prometheus >/dev/null 2>&1; then
    exit 0
  fi
  echo "squall: Debian's prometheus package is installed but prometheus is not on PATH" >&2
  exit 1
fi
echo "squall: the Prometheus tests need prometheus on PATH and none was found; install it" \
  "(for example Debian's prometheus package: sudo apt-get install prometheus) and run again" >&2
exit 1
