"""The replay policy's pure core: backoff, retry limit, dead letters (no clock, no threads)."""

import pytest

from squall.connectors.replay import Letter, ReplayPolicy, backoff
from squall.runtime.failures import Failure


def test_backoff_starts_at_base_doubles_and_is_capped():
    assert [backoff(n, 0.1, 1.0) for n in range(1, 7)] == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.0, 1.0])
    assert backoff(10_000, 0.1, 30.0) == 30.0  # no overflow however many failures
    assert backoff(3, 0.0, 30.0) == 0.0


def test_a_failed_message_is_replayed_only_once_its_backoff_passed():
    p = ReplayPolicy(None, 1.0, 8.0)
    assert p.started("a", [1])
    assert p.failed("a", Failure("failed"), now=10.0) is None
    assert p.next_replay(10.99) is None
    assert p.next_replay(11.0) == ("a", [1])
    assert p.next_replay(11.0) is None  # once
    p.failed("a", Failure("timeout"), now=20.0)
    assert p.next_replay(21.5) is None  # second failure: 2 s
    assert p.next_replay(22.0) == ("a", [1])


def test_replays_come_out_oldest_due_first():
    p = ReplayPolicy(None, 1.0, 1.0)
    for m in "abc":
        p.started(m, [m])
    p.failed("b", Failure("failed"), 0.0)
    p.failed("a", Failure("failed"), 0.5)
    p.failed("c", Failure("failed"), 0.2)
    assert [p.next_replay(5.0)[0] for _ in range(3)] == ["b", "c", "a"]


def test_max_retries_n_gives_up_on_the_n_plus_first_failure_with_the_reason():
    p = ReplayPolicy(2, 0.0, 0.0)
    p.started(7, ["x"])
    for _ in range(2):
        assert p.failed(7, Failure("failed"), 0.0) is None
        assert p.next_replay(0.0) == (7, ["x"])
    letter = p.failed(7, Failure("error", "Traceback...\nValueError: bad", "split", 4), 0.0)
    assert letter == Letter(7, ["x"], "error", "Traceback...\nValueError: bad", "split", 4, 3)
    assert len(p) == 0 and p.next_replay(100.0) is None
    assert not p.done(7)  # given up: no longer in flight


def test_max_retries_zero_gives_up_at_the_first_failure_and_none_never():
    p = ReplayPolicy(0, 0.0, 0.0)
    p.started(1, [])
    assert p.failed(1, Failure("timeout"), 0.0).attempts == 1
    forever = ReplayPolicy(None, 0.0, 0.0)
    forever.started(1, [])
    for _ in range(1000):
        assert forever.failed(1, Failure("failed"), 0.0) is None
        assert forever.next_replay(0.0) == (1, [])


def test_ack_forgets_failures_and_unknown_or_repeated_verdicts_are_ignored():
    p = ReplayPolicy(1, 0.0, 0.0)
    p.started("m", [1])
    p.failed("m", Failure("failed"), 0.0)
    assert p.failed("m", Failure("failed"), 0.0) is None  # second verdict for one emit
    assert p.next_replay(0.0) == ("m", [1])
    assert p.done("m")
    assert not p.done("m")
    assert p.failed("m", Failure("failed"), 0.0) is None
    assert p.failed("nobody", Failure("failed"), 0.0) is None
    p.started("m", [2])  # the source hands it out again: a fresh count
    assert p.failed("m", Failure("failed"), 0.0) is None


def test_a_message_already_in_flight_is_not_started_twice():
    p = ReplayPolicy(None, 0.0, 0.0)
    assert p.started("m", [1])
    assert not p.started("m", [1])


# Ported from Storm's KafkaSpoutRetryExponentialBackoffTest (storm-kafka-client).

def test_storm_max_delay_caps_a_huge_initial_delay():
    # testMaxDelay: a 500 s initial delay with a 2 s cap is ready after 2 s
    p = ReplayPolicy(1, 500.0, 2.0)
    p.started(0, [])
    p.failed(0, Failure("failed"), now=0.0)
    assert p.next_replay(1.999) is None
    assert p.next_replay(2.0) == (0, [])


def test_storm_exponential_backoff_waits_each_doubling_exactly():
    # testExponentialBackoff: ready exactly when each doubled backoff expires, not a second before
    p = ReplayPolicy(None, 4.0, 1e9)
    p.started(0, [])
    now = 0.0
    for expected in (4, 8, 16, 32):
        p.failed(0, Failure("failed"), now)
        assert p.next_replay(now + expected - 1) is None
        assert p.next_replay(now + expected) == (0, [])
        now += expected


def test_storm_messages_on_one_partition_are_ready_in_the_order_they_fail():
    # testCanHandleMultipleMessagesOnPartition / testCanHandleMultipleTopics
    p = ReplayPolicy(None, 1.0, 1.0)
    p.started(0, [])
    p.started(1, [])
    p.failed(0, Failure("failed"), 0.0)
    p.failed(1, Failure("failed"), 0.5)
    assert p.next_replay(0.99) is None
    assert p.next_replay(1.0) == (0, [])
    assert p.next_replay(1.49) is None
    assert p.next_replay(1.5) == (1, [])


def test_storm_max_retries_allows_that_many_retries_besides_the_first_try():
    # testMaxRetries: maxRetries=3 schedules after 3 failures, refuses after the 4th
    p = ReplayPolicy(3, 0.0, 0.0)
    p.started(0, [])
    for _ in range(3):
        assert p.failed(0, Failure("failed"), 0.0) is None
        assert p.next_replay(0.0) == (0, [])
    assert p.failed(0, Failure("failed"), 0.0).attempts == 4


def test_storm_an_acked_message_is_no_longer_scheduled():
    # testCanRemoveRetry / testCannotContainMultipleSchedulesForId
    p = ReplayPolicy(None, 1.0, 1.0)
    p.started(0, [])
    p.failed(0, Failure("failed"), 0.0)
    assert p.waiting() == 1 and p.next_due() == 1.0
    assert p.done(0)
    assert p.waiting() == 0 and p.next_due() is None
    assert p.next_replay(10.0) is None


def test_clear_forgets_every_message_and_returns_what_was_in_flight():
    p = ReplayPolicy(None, 1.0, 10.0)
    p.started("a", [1])
    p.started("b", [2])
    p.failed("b", Failure("failed"), now=0.0)
    assert p.clear() == {"a": [1], "b": [2]}
    assert len(p) == 0 and p.waiting() == 0 and p.next_replay(100.0) is None
    assert not p.done("a")
    assert p.started("a", [1])  # emitted again after the seek: a new message
