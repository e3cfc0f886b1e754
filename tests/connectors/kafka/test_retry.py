"""storm-kafka-client's KafkaSpoutRetryExponentialBackoffTest, ported (simulated time)."""

import pytest

from squall.connectors.kafka.partitioner import Timer
from squall.connectors.kafka.retry import RetryExponentialBackoff
from squall.runtime import clock

TP1 = ("topic", 0)
TP2 = ("other-topic", 0)


@pytest.fixture
def sim():
    with clock.simulation() as c:
        yield c


def no_wait():
    return RetryExponentialBackoff(0, 0, 1, 0)


def one_second_wait():
    return RetryExponentialBackoff(1000, 0, 1, 1000)


def test_can_schedule_retry(sim):
    r = no_wait()
    msg = ("topic", 0, 0)
    assert r.schedule(msg, 1)
    assert r.is_scheduled(msg) and r.is_ready(msg)
    assert r.ready_message_count() == 1
    assert r.earliest_retriable_offsets() == {TP1: 0}


def test_can_reschedule_retry(sim):
    r = one_second_wait()
    msg = ("topic", 0, 0)
    r.schedule(msg, 1)
    sim.advance(0.5)
    assert r.schedule(msg, 1)  # rescheduling an already scheduled id
    sim.advance(0.5)
    assert not r.is_ready(msg) and r.is_scheduled(msg)
    assert r.earliest_retriable_offsets() == {} and r.ready_message_count() == 0
    sim.advance(0.5)
    assert r.is_ready(msg) and r.is_scheduled(msg)
    assert r.earliest_retriable_offsets() == {TP1: 0} and r.ready_message_count() == 1
    assert r.pop_ready() == msg and r.pop_ready() is None  # one schedule per id


def test_cannot_contain_multiple_schedules_for_id(sim):
    r = one_second_wait()
    msg = ("topic", 0, 0)
    r.schedule(msg, 1)
    sim.advance(0.5)
    r.schedule(msg, 1)
    r.remove(msg)
    assert not r.is_scheduled(msg)
    sim.advance(0.5)
    assert not r.is_ready(msg)
    sim.advance(1)
    assert r.pop_ready() is None


def test_can_remove_retry(sim):
    r = no_wait()
    msg = ("topic", 0, 0)
    r.schedule(msg, 1)
    assert r.remove(msg)
    assert not r.is_scheduled(msg) and not r.is_ready(msg)
    assert r.earliest_retriable_offsets() == {} and r.ready_message_count() == 0


def test_can_handle_multiple_topics(sim):
    r = one_second_wait()
    m1, m2 = ("topic", 0, 0), ("other-topic", 0, 0)
    assert r.schedule(m1, 1)
    sim.advance(0.5)
    assert r.schedule(m2, 1)
    assert r.is_scheduled(m1) and r.is_scheduled(m2)
    assert not r.is_ready(m1) and not r.is_ready(m2)
    sim.advance(0.5)
    assert r.is_ready(m1) and not r.is_ready(m2)
    assert r.earliest_retriable_offsets() == {TP1: 0}
    sim.advance(0.5)
    assert r.is_ready(m2)
    assert r.earliest_retriable_offsets() == {TP1: 0, TP2: 0}
    r.retain_all({TP2})
    assert not r.is_scheduled(m1) and r.is_scheduled(m2)
    assert r.earliest_retriable_offsets() == {TP2: 0}


def test_can_handle_multiple_messages_on_partition(sim):
    r = one_second_wait()
    early, late = ("topic", 0, 0), ("topic", 0, 1)
    r.schedule(early, 1)
    sim.advance(0.5)
    r.schedule(late, 1)
    sim.advance(0.5)
    assert r.is_ready(early) and not r.is_ready(late)
    assert r.earliest_retriable_offsets() == {TP1: 0}
    sim.advance(0.5)
    assert r.is_ready(early) and r.is_ready(late)
    assert r.earliest_retriable_offsets() == {TP1: 0}
    r.remove(early)
    assert r.earliest_retriable_offsets() == {TP1: 1}


def test_max_retries(sim):
    r = RetryExponentialBackoff(0, 0, 3, 0)
    msg = ("topic", 0, 0)
    assert r.schedule(msg, 3)  # three retries besides the first try
    assert r.is_scheduled(msg)
    r.remove(msg)
    assert not r.schedule(msg, 4)
    assert not r.is_scheduled(msg)


def test_max_delay(sim):
    r = RetryExponentialBackoff(500_000, 0, 1, 2000)
    msg = ("topic", 0, 0)
    r.schedule(msg, 1)
    sim.advance(2)
    assert r.is_ready(msg)


def test_exponential_backoff(sim):
    r = RetryExponentialBackoff(0, 4000, None, 10**12)
    msg = ("topic", 0, 0)
    fails = 2  # the first failure is the initial delay
    for expected in (8, 16, 32):  # 4 * 2**(fails-1)
        r.schedule(msg, fails)
        sim.advance(expected - 1)
        assert not r.is_ready(msg), expected
        sim.advance(1)
        assert r.is_ready(msg), expected
        fails += 1
        r.remove(msg)


def test_timer_expires_after_its_delay_then_every_period(sim):
    t = Timer(500, 2000)
    assert not t.is_expired_reset_on_true()
    sim.advance(0.5)
    assert t.is_expired_reset_on_true()
    assert not t.is_expired_reset_on_true()
    sim.advance(1.999)
    assert not t.is_expired_reset_on_true()
    sim.advance(0.001)
    assert t.is_expired_reset_on_true()


def test_settings_are_checked():
    with pytest.raises(ValueError, match="max_retries"):
        RetryExponentialBackoff(max_retries=-1)
    with pytest.raises(ValueError, match="delay_period_ms"):
        RetryExponentialBackoff(delay_period_ms="2")
