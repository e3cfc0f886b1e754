#!/usr/bin/env bash
# The web UI's end-to-end tests drive a real headless Chromium over the DevTools protocol:
# use the one on PATH, install Debian's chromium and chromium-driver packages if we can
# (root with apt-get), else say what to install. No browser is ever downloaded by the tests.
set -euo pipefail

have() { command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; }

if have; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "squall: installing chromium and chromium-driver (Debian's packages) for the web UI tests"
  log=$(mktemp)
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
         apt-get install -y -qq --no-install-recommends chromium chromium-driver; } >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "squall: installing chromium with apt-get failed (output above)" >&2
    exit 1
  fi
  rm -f "$log"
  if have; then
    exit 0
  fi
  echo "squall: Debian's chromium packages are installed but chromium or chromedriver is not on PATH" >&2
  exit 1
fi
echo "squall: the web UI tests need chromium and chromedriver on PATH and none was found; install" \
  "them (for example Debian's chromium and chromium-driver packages:" \
  "sudo apt-get install chromium chromium-driver) and run again" >&2
exit 1
