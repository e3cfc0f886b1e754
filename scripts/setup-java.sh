#!/usr/bin/env bash
# Spark needs Java 17 or newer: use it if present, install Debian's JRE if we can, else say so.
set -euo pipefail

java_major() {
  java -version 2>&1 | awk -F'"' '/version/ {split($2, v, "."); print (v[1] == "1" ? v[2] : v[1]); exit}'
}

if command -v java >/dev/null 2>&1 && [ "$(java_major)" -ge 17 ] 2>/dev/null; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "squall: installing Java 17 (openjdk-17-jre-headless) for Spark"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
  exit 0
fi
echo "squall: Spark needs Java 17 or newer and none was found; install a JDK/JRE 17+ (for example Debian's openjdk-17-jre-headless) and run again" >&2
exit 1
