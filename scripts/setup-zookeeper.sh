#!/usr/bin/env bash
# The Nimbus HA tests start a real ZooKeeper server: use an installed one (Debian's jar in
# /usr/share/java, or $ZOOKEEPER_HOME/lib), install Debian's package if we can (root with
# apt-get), else say what to install. The tests run it with java on 127.0.0.1 and a free
# port from a config of their own; the package's service is not needed.
set -euo pipefail

have_zookeeper() {
  [ -f /usr/share/java/zookeeper.jar ] && return 0
  [ -n "${ZOOKEEPER_HOME:-}" ] && compgen -G "$ZOOKEEPER_HOME/lib/zookeeper-3*.jar" >/dev/null && return 0
  return 1
}

if have_zookeeper; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "squall: installing zookeeper (Debian's zookeeper package) for the Nimbus HA tests"
  log=$(mktemp)
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
         apt-get install -y -qq --no-install-recommends zookeeper; } >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "squall: installing zookeeper with apt-get failed (output above)" >&2
    exit 1
  fi
  rm -f "$log"
  if have_zookeeper; then
    exit 0
  fi
  echo "squall: Debian's zookeeper package is installed but /usr/share/java/zookeeper.jar is missing" >&2
  exit 1
fi
echo "squall: the Nimbus HA tests need a ZooKeeper server and none was found; install ZooKeeper" \
  "(for example Debian's zookeeper package: sudo apt-get install zookeeper, or set ZOOKEEPER_HOME" \
  "to an unpacked Apache ZooKeeper) and run again" >&2
exit 1
