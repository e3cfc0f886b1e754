#!/usr/bin/env bash
# The Redis state tests start a real redis-server: use the one on PATH, install Debian's
# package if we can (root with apt-get), else say what to install.
set -euo pipefail

if command -v redis-server >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "squall: installing redis-server (Debian's redis-server package) for the Redis state tests"
  log=$(mktemp)
  # Quiet unless it fails. The tests start their own servers on free ports; the package's
  # service is not needed (and is not started where there is no init system).
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
         apt-get install -y -qq --no-install-recommends redis-server; } >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "squall: installing redis-server with apt-get failed (output above)" >&2
    exit 1
  fi
  rm -f "$log"
  if command -v redis-server >/dev/null 2>&1; then
    exit 0
  fi
  echo "squall: Debian's redis-server package is installed but redis-server is not on PATH" >&2
  exit 1
fi
echo "squall: the Redis state tests need redis-server on PATH and none was found; install Redis" \
  "(for example Debian's redis-server package: sudo apt-get install redis-server) and run again" >&2
exit 1
