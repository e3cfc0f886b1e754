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
# A test that hangs with no thread able to run Python (a deadlock on the GIL) is out of
# pytest-timeout's reach: its signal handler never runs, and CI would wait for its own limit
# with nothing printed. Each run gets a limit far past its usual length (the Spark and Nimbus
# suites about 26 min, the rest 16, the plain-Python pass 9), then SIGABRT, on which pytest's
# faulthandler prints every thread's stack into the log.
LIMIT_HEAVY=${SQUALL_TEST_LIMIT_HEAVY:-45m}
LIMIT_REST=${SQUALL_TEST_LIMIT_REST:-35m}
LIMIT_SECOND=${SQUALL_TEST_LIMIT_SECOND:-25m}
bounded() {
    local limit=$1
    shift
    timeout --signal=ABRT --kill-after=30 "$limit" "$@"
    local rc=$?
    if [ "$rc" = 124 ]; then
        echo "squall: '$*' was still running after $limit and was stopped: a hang (the threads' stacks are above)"
    fi
    return "$rc"
}

echo "squall: ${HEAVY[*]} run here; the other tests, then the plain-Python pass, run beside them (log: $REST_LOG)"
(
    ignore=()
    for d in "${HEAVY[@]}"; do ignore+=("--ignore=$d"); done
    bounded "$LIMIT_REST" "$PY" -m pytest -p no:cacheprovider --junitxml="$LOGS/rest.xml" "${ignore[@]}"
    rest=$?
    bounded "$LIMIT_SECOND" "$MAKE_CMD" --no-print-directory test-second-python
    second=$?
    exit $(( rest != 0 || second != 0 ))
) >"$REST_LOG" 2>&1 &
rest_pid=$!

bounded "$LIMIT_HEAVY" "$PY" -m pytest --junitxml="$LOGS/heavy.xml" "${HEAVY[@]}"
heavy=$?
wait "$rest_pid"
rest=$?

echo
echo "squall: the other tests and the plain-Python pass ($REST_LOG):"
cat "$REST_LOG"
echo
echo "squall: ${HEAVY[*]}: $([ $heavy = 0 ] && echo passed || echo FAILED); the rest: $([ $rest = 0 ] && echo passed || echo FAILED)"
exit $(( heavy != 0 || rest != 0 ))
