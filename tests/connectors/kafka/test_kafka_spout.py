"""KafkaSpout driven by hand against a real broker, on simulated time: retries and their
backoff, commits that wait for a failed record, dead letters, the commit and refresh periods."""

import time

import pytest

from squall.connectors.kafka import KafkaSpout, KafkaSpoutConfig, RetryExponentialBackoff
from squall.connectors.kafka.offsets import TopicPartition
from squall.connectors.kafka.owners import Owner, decode, owners_group, tag_of
from squall.connectors.reliable import DEAD_LETTER_STREAM, GivenUpError
from squall.runtime import clock
from tests.connectors.kafka.topology import committed, spout_config


class Context:
    def __init__(self, task=1, tasks=(1,), component="in"):
        self.task_id, self._tasks, self.component_id = task, list(tasks), component
        self.topology_name = "t"
        self.gauges = {}

    def get_this_task_index(self):
        return self._tasks.index(self.task_id)

    def get_this_component_tasks(self):
        return list(self._tasks)

    def register_gauge(self, name, fn):
        assert name not in self.gauges
        self.gauges[name] = fn


class Collector:
    def __init__(self):
        self.emitted, self.errors = [], []

    def emit(self, values, stream="default", msg_id=None):
        self.emitted.append((stream, values, msg_id))
        return []

    def report_error(self, error):
        self.errors.append(error)



def pump(spout, sim, until, step=0.01, limit=3000, timeout=20.0):
    """Call next_tuple until ``until()``: simulated time moves by ``step`` per call for the first
    ``limit`` calls (so a test knows how far it went at most), the broker gets real time."""
    deadline = time.monotonic() + timeout
    calls = 0
    while time.monotonic() < deadline:
        spout.next_tuple()
        if until():
            return True
        if calls < limit:
            sim.advance(step)
            calls += 1
        time.sleep(0.002)
    return until()


def produced(broker, values, partitions=1):
    """Topic "in" with ``partitions`` partitions, holding ``values`` spread round robin."""
    broker.create_topic("in", partitions)
    broker.produce("in", values, partition_of=(lambda i: i % partitions) if partitions > 1 else None)


def commits_reach(spout, sim, broker, offset, **kwargs):
    """``pump`` until the group's committed offset of partition 0 is ``offset``."""
    return pump(spout, sim, lambda: committed(broker)[0] == offset, **kwargs)


@pytest.fixture
def sim():
    with clock.simulation() as c:
        yield c


def opened(broker, sim, collector=None, **kwargs):
    spout = KafkaSpout(spout_config(broker.bootstrap, **kwargs))
    collector = collector or Collector()
    spout.open({"topology.message.timeout.secs": 30}, Context(), collector)
    return spout, collector


def test_a_failed_record_is_retried_after_its_backoff_and_holds_the_commit(kafka_broker, sim):
    produced(kafka_broker, [f"r{i}".encode() for i in range(5)])
    retry = RetryExponentialBackoff(initial_delay_ms=10_000, delay_period_ms=20_000, max_retries=None,
                                    max_delay_ms=60_000)
    spout, out = opened(kafka_broker, sim, retry=retry, offset_commit_period_ms=100)
    try:
        assert pump(spout, sim, lambda: len(out.emitted) == 5)
        ids = [m for _, _, m in out.emitted]
        assert ids == [("in", 0, i) for i in range(5)]
        for m in ids:
            if m != ("in", 0, 2):
                spout.ack(m)
        t0 = sim.monotonic()
        spout.fail(("in", 0, 2))
        out.emitted.clear()
        # the commit goes up to the failed record and waits there
        assert commits_reach(spout, sim, kafka_broker, 2, step=0.05, limit=150)
        assert out.emitted == []
        sim.advance(t0 + 9.9 - sim.monotonic())
        for _ in range(20):
            spout.next_tuple()
        assert out.emitted == []  # the first retry waits initial_delay_ms
        sim.advance(0.1)
        spout.next_tuple()
        assert out.emitted == [("default", ["in", 0, 2, None, b"r2"], ("in", 0, 2))]
        spout.fail(("in", 0, 2))  # second failure: delay_period_ms * 2**1 = 40 s
        out.emitted.clear()
        sim.advance(39.9)
        for _ in range(20):
            spout.next_tuple()
        assert out.emitted == []
        assert committed(kafka_broker)[0] == 2
        sim.advance(0.1)
        spout.next_tuple()
        assert [m for _, _, m in out.emitted] == [("in", 0, 2)]
        spout.ack(("in", 0, 2))
        assert commits_reach(spout, sim, kafka_broker, 5, step=0.05, limit=200)
        def owner():
            return decode(committed(kafka_broker, group=owners_group("g"))[0])

        assert pump(spout, sim, lambda: owner() is not None, step=0)
        assert owner() == Owner(tag_of("t", "in"), 1, False)
    finally:
        spout.close()
    assert decode(committed(kafka_broker, group=owners_group("g"))[0]).released


def test_after_the_retry_limit_the_record_goes_to_dead_letter_and_counts_once_its_letter_is_acked(
        kafka_broker, sim):
    produced(kafka_broker, [b"a", b"poison", b"c"])
    spout, out = opened(kafka_broker, sim, retry=RetryExponentialBackoff(0, 0, 2, 0))
    try:
        assert pump(spout, sim, lambda: len(out.emitted) == 3)
        spout.ack(("in", 0, 0))
        spout.ack(("in", 0, 2))
        for attempt in range(3):
            spout.fail(("in", 0, 1))
            if attempt < 2:
                assert pump(spout, sim, lambda n=attempt: len(out.emitted) == 4 + n)
        stream, letter, letter_id = out.emitted[-1]
        assert stream == DEAD_LETTER_STREAM
        assert letter[0] == ["in", 0, 1] and letter[1] == ["in", 0, 1, None, b"poison"]
        assert letter[2] == "failed" and letter[6] == 3
        assert [type(e) for e in out.errors] == [GivenUpError]
        assert "'in'" in str(out.errors[0]) and "offset 1" in str(out.errors[0])
        assert commits_reach(spout, sim, kafka_broker, 1, step=0.2, limit=100)
        sim.advance(1)
        for _ in range(50):
            spout.next_tuple()
        assert committed(kafka_broker)[0] == 1  # the letter is not acked yet
        spout.fail(letter_id)  # a failed letter is emitted again, never given up
        assert pump(spout, sim, lambda: out.emitted[-1][0] == DEAD_LETTER_STREAM and len(out.emitted) == 7)
        spout.ack(out.emitted[-1][2])
        assert commits_reach(spout, sim, kafka_broker, 3, step=0.2, limit=200)
    finally:
        spout.close()


def test_polling_pauses_at_max_uncommitted_offsets(kafka_broker, sim):
    produced(kafka_broker, [f"r{i}".encode() for i in range(10)])
    spout, out = opened(kafka_broker, sim, max_uncommitted_offsets=4, offset_commit_period_ms=100)
    try:
        assert pump(spout, sim, lambda: len(out.emitted) == 4)
        for _ in range(100):
            spout.next_tuple()
            time.sleep(0.002)
        assert len(out.emitted) == 4  # 4 emitted, none acked: the partition waits
        spout.ack(("in", 0, 0))
        spout.ack(("in", 0, 1))
        # committed at the next commit period, then two more come
        assert pump(spout, sim, lambda: len(out.emitted) == 6, step=0.05)
        assert commits_reach(spout, sim, kafka_broker, 2, step=0.05, limit=100)
        assert len(out.emitted) == 6
    finally:
        spout.close()


def test_a_record_translator_that_raises_is_an_error_naming_the_component_and_nothing_is_lost(
        kafka_broker, sim):
    produced(kafka_broker, [b"ok", b"bad", b"ok2"])
    calls = {"bad": 0}

    def translate(record):
        if record.value() == b"bad":
            calls["bad"] += 1
            if calls["bad"] < 3:
                raise ValueError("cannot parse")
        return [record.value()]

    spout, out = opened(kafka_broker, sim, record_translator=translate, record_fields=("value",),
                        retry=RetryExponentialBackoff(100, 100, None, 1000))
    try:
        assert pump(spout, sim, lambda: len(out.emitted) == 3, step=0.05)
        assert sorted(v[0] for _, v, _ in out.emitted) == [b"bad", b"ok", b"ok2"]
        messages = [str(e) for e in out.errors]
        assert len(messages) == 2
        assert all("KafkaSpout 'in'" in m and "record translator raised" in m and "offset 1" in m
                   and "cannot parse" in m for m in messages)
    finally:
        spout.close()


def test_gauges_give_offsets_and_lag_per_partition(kafka_broker, sim):
    produced(kafka_broker, [f"r{i}".encode() for i in range(10)], partitions=2)
    ctx, out = Context(), Collector()
    spout = KafkaSpout(spout_config(kafka_broker.bootstrap, metrics_time_bucket_size_in_secs=1))
    spout.open({}, ctx, out)
    try:
        assert pump(spout, sim, lambda: len(out.emitted) == 10)
        for _, _, m in out.emitted:
            if m[1] == 0:
                spout.ack(m)
        assert pump(spout, sim, lambda: spout.offsets(TopicPartition("in", 0))["latest_committed"] == 5,
                    step=0.05)
        sim.advance(1)
        assert pump(spout, sim, lambda: spout.watermarks.get(TopicPartition("in", 1)) == (0, 5), step=0.05)
        assert ctx.gauges["kafkaOffset/totalSpoutLag"]() == 5
        assert ctx.gauges["kafkaOffset/in/partition_0/lag"]() == 0
        assert ctx.gauges["kafkaOffset/in/partition_1/lag"]() == 5
        assert ctx.gauges["kafkaOffset/in/partition_1/latest_emitted"]() == 4
        assert ctx.gauges["kafkaOffset/in/partition_1/latest_committed"]() == 0
        assert ctx.gauges["kafkaOffset/in/partition_1/earliest"]() == 0
        assert ctx.gauges["kafkaOffset/in/partition_1/latest"]() == 5
        assert ctx.gauges["kafkaOffset/brokerReachable"]() == 1
    finally:
        spout.close()


def test_at_most_once_commits_what_it_polled_before_emitting_and_tracks_nothing(kafka_broker, sim):
    from squall.connectors.kafka import ProcessingGuarantee

    produced(kafka_broker, [f"r{i}".encode() for i in range(5)])
    spout, out = opened(kafka_broker, sim, processing_guarantee=ProcessingGuarantee.AT_MOST_ONCE)
    try:
        assert pump(spout, sim, lambda: len(out.emitted) >= 1)
        # a tuple is out only once its whole poll is committed (sync), so past every emitted offset
        assert committed(kafka_broker)[0] > out.emitted[-1][1][2]
        assert pump(spout, sim, lambda: len(out.emitted) == 5)
        assert committed(kafka_broker)[0] == 5
        assert {m for _, _, m in out.emitted} == {None}
        spout.fail(("in", 0, 0))  # nothing is retried
        sim.advance(60)
        for _ in range(50):
            spout.next_tuple()
        assert len(out.emitted) == 5
    finally:
        spout.close()


def test_no_guarantee_commits_the_fetched_offsets_every_commit_period(kafka_broker, sim):
    from squall.connectors.kafka import ProcessingGuarantee

    produced(kafka_broker, [f"r{i}".encode() for i in range(5)])
    spout, out = opened(kafka_broker, sim, processing_guarantee=ProcessingGuarantee.NO_GUARANTEE,
                        offset_commit_period_ms=5000, tuple_tracking=True)
    try:
        assert pump(spout, sim, lambda: len(out.emitted) == 5, step=0.001)
        assert [m for _, _, m in out.emitted] == [("in", 0, i) for i in range(5)]  # tuple_tracking
        assert committed(kafka_broker)[0] < 0  # nothing committed before the period
        sim.advance(5)
        assert commits_reach(spout, sim, kafka_broker, 5, step=0.05, limit=100)
    finally:
        spout.close()


def test_null_tuples_are_skipped_and_acked_or_emitted_with_emit_null_tuples(kafka_broker, sim):
    produced(kafka_broker, [b"keep", b"drop", b"keep2"])

    def translate(record):
        return None if record.value() == b"drop" else [record.value()]

    spout, out = opened(kafka_broker, sim, record_translator=translate, record_fields=("value",))
    try:
        assert pump(spout, sim, lambda: len(out.emitted) == 2)
        assert [m for _, _, m in out.emitted] == [("in", 0, 0), ("in", 0, 2)]
        spout.ack(("in", 0, 0))
        spout.ack(("in", 0, 2))
        # the skipped record counts as acked: the commit passes it
        assert commits_reach(spout, sim, kafka_broker, 3, step=0.05, limit=200)
    finally:
        spout.close()
    spout, out = opened(kafka_broker, sim, record_translator=translate, record_fields=("value",),
                        emit_null_tuples=True, group_id="other")
    try:
        assert pump(spout, sim, lambda: len(out.emitted) == 3)
        assert out.emitted[1] == ("default", [], ("in", 0, 1))
    finally:
        spout.close()


def test_a_translator_may_pick_the_stream(kafka_broker, sim):
    produced(kafka_broker, [b"a", b"b"])

    class ByValue:
        def __call__(self, record):
            return ("as" if record.value() == b"a" else "bs", [record.value()])

        def declare(self, declarer):
            declarer.declare(("value",), stream="as")
            declarer.declare(("value",), stream="bs")

    spout, out = opened(kafka_broker, sim, record_translator=ByValue())
    try:
        assert pump(spout, sim, lambda: len(out.emitted) == 2)
        assert [(s, v) for s, v, _ in out.emitted] == [("as", [b"a"]), ("bs", [b"b"])]
    finally:
        spout.close()


def test_a_restart_resumes_at_the_committed_offset_and_earliest_does_too_for_this_topology(kafka_broker, sim):
    from squall.connectors.kafka import FirstPollOffsetStrategy

    produced(kafka_broker, [f"r{i}".encode() for i in range(6)])
    spout, out = opened(kafka_broker, sim)
    try:
        assert pump(spout, sim, lambda: len(out.emitted) == 6)
        for i in range(3):
            spout.ack(("in", 0, i))
        assert commits_reach(spout, sim, kafka_broker, 3, step=0.05, limit=200)
    finally:
        spout.close()
    for strategy, first in ((FirstPollOffsetStrategy.UNCOMMITTED_EARLIEST, 3),
                            (FirstPollOffsetStrategy.EARLIEST, 3),  # committed by this topology
                            (FirstPollOffsetStrategy.UNCOMMITTED_LATEST, 3)):
        spout, out = opened(kafka_broker, sim, first_poll_offset_strategy=strategy)
        try:
            assert pump(spout, sim, lambda out=out, first=first: len(out.emitted) == 6 - first)
            assert out.emitted[0][2] == ("in", 0, first), strategy
        finally:
            spout.close()
    spout, out = opened(kafka_broker, sim, first_poll_offset_strategy=FirstPollOffsetStrategy.LATEST,
                        group_id="fresh")
    try:
        for _ in range(100):
            spout.next_tuple()
            time.sleep(0.002)
        assert out.emitted == []  # a new group at LATEST starts at the end
    finally:
        spout.close()


def test_acked_offsets_are_committed_only_when_the_commit_period_comes(kafka_broker, sim):
    produced(kafka_broker, [b"a", b"b", b"c"])
    spout, out = opened(kafka_broker, sim, offset_commit_period_ms=5000)
    try:
        assert pump(spout, sim, lambda: len(out.emitted) == 3, step=0)
        for _, _, m in out.emitted:
            spout.ack(m)
        for _ in range(100):  # real time passes, simulated time does not
            spout.next_tuple()
            time.sleep(0.002)
        assert committed(kafka_broker)[0] < 0  # nothing committed yet
        sim.advance(0.5)  # Storm's TIMER_DELAY_MS before the first commit
        assert commits_reach(spout, sim, kafka_broker, 3, step=0, limit=500)
        kafka_broker.produce("in", [b"d", b"e"])
        assert pump(spout, sim, lambda: len(out.emitted) == 5, step=0)
        for _, _, m in out.emitted[3:]:
            spout.ack(m)
        sim.advance(4.9)
        for _ in range(100):
            spout.next_tuple()
            time.sleep(0.002)
        assert committed(kafka_broker)[0] == 3
        sim.advance(0.1)
        assert commits_reach(spout, sim, kafka_broker, 5, step=0, limit=500)
    finally:
        spout.close()


def test_new_partitions_are_taken_when_the_refresh_period_comes(kafka_broker, sim):
    kafka_broker.create_topic("r1", 1)
    kafka_broker.produce("r1", [b"a"])
    spout = KafkaSpout(KafkaSpoutConfig(kafka_broker.bootstrap, topic_pattern=r"r\d", group_id="g",
                                        partition_refresh_period_ms=2000))
    out = Collector()
    spout.open({}, Context(), out)
    try:
        sim.advance(0.5)  # the first refresh, after TIMER_DELAY_MS
        assert pump(spout, sim, lambda: len(out.emitted) == 1, step=0)
        kafka_broker.create_topic("r2", 1)
        kafka_broker.produce("r2", [b"b"])
        r2 = TopicPartition("r2", 0)
        for _ in range(300):  # real time passes, simulated time does not: no refresh
            spout.next_tuple()
            time.sleep(0.002)
        assert r2 not in spout.assigned and len(out.emitted) == 1
        sim.advance(1.9)
        for _ in range(100):
            spout.next_tuple()
            time.sleep(0.002)
        assert r2 not in spout.assigned and len(out.emitted) == 1
        sim.advance(0.1)
        assert pump(spout, sim, lambda: len(out.emitted) == 2, step=0)
        assert out.emitted[1][2] == ("r2", 0, 0)
    finally:
        spout.close()


def test_position_and_seek_read_a_partition_again_from_a_recorded_offset(kafka_broker, sim):
    produced(kafka_broker, [f"r{i}".encode() for i in range(10)], partitions=2)
    spout, out = opened(kafka_broker, sim)
    try:
        assert pump(spout, sim, lambda: len(out.emitted) == 10)
        assert sorted(spout.position()) == [["in", 0, 5], ["in", 1, 5]]
        for m in [("in", 0, 0), ("in", 0, 1), ("in", 1, 0)]:
            spout.ack(m)
        spout.fail(("in", 0, 3))
        # a position lists every partition the task reads (an unlisted one goes back to where
        # the task took it); partitions of other tasks are ignored
        spout.seek([["in", 0, 2], ["in", 1, 5], ["other", 0, 7]])
        out.emitted.clear()
        assert pump(spout, sim, lambda: len(out.emitted) == 3)
        assert [m for _, _, m in out.emitted] == [("in", 0, 2), ("in", 0, 3), ("in", 0, 4)]
        assert sorted(spout.position()) == [["in", 0, 5], ["in", 1, 5]]
        for _, _, m in out.emitted:
            spout.ack(m)
        # what was acked before the seek still counts: partition 0 commits through offset 4
        sim.advance(1)
        assert pump(spout, sim, lambda: committed(kafka_broker, partitions=2)[0] == 5,
                    step=0.05, limit=200)
    finally:
        spout.close()


def test_committed_offsets_and_owner_marks_are_committed_again_before_retention_expires_them(
        kafka_broker, sim):
    # the groups have no members (partitions are assigned by hand), so the broker expires
    # each offset offsets.retention.minutes after its last commit. Tansu does not expire
    # offsets; deleting the (empty) groups drops them the same way
    from tests.connectors.seeking import opened, pump

    kafka_broker.create_topic("in", 1)
    kafka_broker.produce("in", [f"r{i}".encode() for i in range(4)])
    s = KafkaSpout(spout_config(kafka_broker.bootstrap))
    out = opened(s)
    try:
        assert pump(s, out, 4, sim)
        for _, m in out.records():
            s.ack(m)
        deadline = time.monotonic() + 20
        while committed(kafka_broker)[0] != 4 and time.monotonic() < deadline:
            s.next_tuple()
            sim.advance(0.05)
        assert committed(kafka_broker)[0] == 4
        for group in ("g", owners_group("g")):
            kafka_broker.admin().delete_consumer_groups([group])[group].result(timeout=10)
        assert committed(kafka_broker)[0] < 0
        sim.advance(24 * 3600)  # the default offset_recommit_period_ms: one day
        while (committed(kafka_broker)[0] != 4 or committed(kafka_broker, group=owners_group("g"))[0] < 0) \
                and time.monotonic() < deadline + 20:
            s.next_tuple()
            sim.advance(0.05)
            time.sleep(0.01)
        assert committed(kafka_broker)[0] == 4
        owner = decode(committed(kafka_broker, group=owners_group("g"))[0])
        assert owner == Owner(tag_of("t", "src"), 1, False)
    finally:
        s.close()


def emits_per_call(spout, out, sim, total, timeout=20.0):
    """Call next_tuple until ``total`` records are out; how many each call that emitted emitted."""
    counts = []
    deadline = time.monotonic() + timeout
    while len(out.emitted) < total and time.monotonic() < deadline:
        before = len(out.emitted)
        spout.next_tuple()
        if len(out.emitted) > before:
            counts.append(len(out.emitted) - before)
        sim.advance(0.01)
        time.sleep(0.002)
    return counts


def test_one_next_tuple_emits_the_records_at_hand_up_to_max_records_per_next_tuple(kafka_broker, sim):
    produced(kafka_broker, [f"r{i}".encode() for i in range(10)])
    spout, out = opened(kafka_broker, sim)
    try:
        counts = emits_per_call(spout, out, sim, 10)
        assert sum(counts) == 10
        assert len(counts) < 10  # records fetched together leave in one call, not one per call
        assert [m for _, _, m in out.emitted] == [("in", 0, i) for i in range(10)]
    finally:
        spout.close()
    out2_broker_topic = [f"s{i}".encode() for i in range(10)]
    kafka_broker.create_topic("in2", 1)
    kafka_broker.produce("in2", out2_broker_topic)
    spout = KafkaSpout(spout_config(kafka_broker.bootstrap, topic="in2", max_records_per_next_tuple=3))
    out = Collector()
    spout.open({"topology.message.timeout.secs": 30}, Context(), out)
    try:
        counts = emits_per_call(spout, out, sim, 10)
        assert sum(counts) == 10 and max(counts) == 3
        assert [m for _, _, m in out.emitted] == [("in2", 0, i) for i in range(10)]
    finally:
        spout.close()


def test_a_batch_stops_at_max_uncommitted_offsets(kafka_broker, sim):
    produced(kafka_broker, [f"r{i}".encode() for i in range(10)])
    spout, out = opened(kafka_broker, sim, max_uncommitted_offsets=4, max_records_per_next_tuple=100)
    try:
        counts = emits_per_call(spout, out, sim, 4)
        for _ in range(50):
            spout.next_tuple()
            time.sleep(0.002)
        assert sum(counts) == 4 and len(out.emitted) == 4
    finally:
        spout.close()


def test_max_records_per_next_tuple_must_be_a_positive_integer():
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="max_records_per_next_tuple must be a positive integer"):
            KafkaSpoutConfig("127.0.0.1:9092", ["t"], max_records_per_next_tuple=bad)
