#!/usr/bin/env bash
# `make test`: every test, in two streams at once. Most of the Spark and Nimbus suites' time is
# spent waiting (JVMs starting, topologies draining, timeouts of faults they inject), so on two
# cores a second stream of CPU-bound tests fits beside them. The Spark and Nimbus suites stay
# in one stream, in order: they hold the network-namespace hosts, the standalone Spark clusters
# and the fixed ports inside those namespaces. The other stream runs everything else, then the
# plain-Python pass; it writes to a log that is printed when both are done.
# Usage: scripts/run-tests.sh PYTHON MAKE [LOG_DIR]
set -uo pipefail
PY=$1
MAKE_CMD=$2
LOGS=${3:-.test-logs}
mkdir -p "$LOGS"
HEAVY=(tests/spark tests/nimbus)
REST_LOG="$LOGS/rest.log"

echo "squall: ${HEAVY[*]} run here; the other tests, then the plain-Python pass, run beside them (log: $REST_LOG)"
(
    ignore=()
    for d in "${HEAVY[@]}"; do ignore+=("--ignore=$d"); done
    "$PY" -m pytest -p no:cacheprovider --junitxml="$LOGS/rest.xml" "${ignore[@]}"
    rest=$?
    "$MAKE_CMD" --no-print-directory test-second-python
    second=$?
    exit $(( rest != 0 || second != 0 ))
) >"$REST_LOG" 2>&1 &
rest_pid=$!

"$PY" -m pytest --junitxml="$LOGS/heavy.xml" "${HEAVY[@]}"
heavy=$?
wait "$rest_pid"
rest=$?

echo
echo "squall: the other tests and the plain-Python pass ($REST_LOG):"
cat "$REST_LOG"
echo
echo "squall: ${HEAVY[*]}: $([ $heavy = 0 ] && echo passed || echo FAILED); the rest: $([ $rest = 0 ] && echo passed || echo FAILED)"
exit $(( heavy != 0 || rest != 0 ))
