#!/usr/bin/env bash
# The multilang tests run a Node.js bolt: use the node on PATH, install Debian's nodejs
# package if we can (root with apt-get), else say what to install.
set -euo pipefail

if command -v node >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "squall: installing node (Debian's nodejs package) for the multilang tests"
  log=$(mktemp)
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
         apt-get install -y -qq --no-install-recommends nodejs; } >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "squall: installing nodejs with apt-get failed (output above)" >&2
    exit 1
  fi
  rm -f "$log"
  if command -v node >/dev/null 2>&1; then
    exit 0
  fi
  echo "squall: Debian's nodejs package is installed but node is not on PATH" >&2
  exit 1
fi
echo "squall: the multilang tests need node on PATH and none was found; install Node.js" \
  "(for example Debian's nodejs package: sudo apt-get install nodejs) and run again" >&2
exit 1
