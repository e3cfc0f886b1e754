#!/usr/bin/env bash
# The host tests (tests/netns.py) put servers in network namespaces of their own: they need
# iproute2's `ip` and root. Install Debian's iproute2 if we can, else say what to install.
set -euo pipefail

if command -v ip >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "squall: installing iproute2 (Debian's package) for the host tests' network namespaces"
  log=$(mktemp)
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
         apt-get install -y -qq --no-install-recommends iproute2; } >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "squall: installing iproute2 with apt-get failed (output above)" >&2
    exit 1
  fi
  rm -f "$log"
  exit 0
fi
echo "squall: the host tests need iproute2's ip (and root to make network namespaces); install" \
  "it (for example sudo apt-get install iproute2) and run the tests as root" >&2
exit 1
