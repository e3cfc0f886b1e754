"""KafkaSpout as a seekable spout (exactly-once) against a real broker, on simulated time:
position (per-partition next offsets), seek back, seek after a restart (before the partitions
are taken), a partition taken after the position, commits after a seek, and offsets the
broker no longer has."""

import time

import pytest

from squall import SeekableSpout
from squall.connectors.kafka import KafkaSpout, KafkaSpoutConfig, RetryExponentialBackoff
from squall.connectors.kafka.handover import SeekOutOfRangeError, check_in_range
from squall.connectors.kafka.offsets import TopicPartition
from squall.runtime import clock
from tests.connectors.kafka.topology import committed, stepped_config
from tests.connectors.seeking import opened, pump, quiet, roundtrip, seek_back

EXACTLY_ONCE = {"topology.guarantee": "exactly_once"}


@pytest.fixture
def sim():
    with clock.simulation() as c:
        yield c


@pytest.fixture
def spouts():
    made = []
    yield made
    for s in made:
        s.close()


def kafka_spout(broker, spouts, **kwargs):
    s = KafkaSpout(stepped_config(broker.bootstrap, **kwargs))
    spouts.append(s)
    return s


def produced(broker, n, partitions=1):
    broker.create_topic("in", partitions)
    broker.produce("in", [f"r{i}".encode() for i in range(n)],
                   partition_of=(lambda i: i % partitions) if partitions > 1 else None)


def test_the_position_is_the_next_offset_to_emit_of_each_partition(kafka_broker, sim, spouts):
    produced(kafka_broker, 10, partitions=2)
    s = kafka_spout(kafka_broker, spouts)
    out = opened(s, EXACTLY_ONCE)
    assert isinstance(s, SeekableSpout)
    assert pump(s, out, 3, sim)
    emitted = [m for _, m in out.records()]
    expect = {p: 1 + max([o for _, q, o in emitted if q == p], default=-1) for p in (0, 1)}
    assert s.position() == [["in", 0, expect[0]], ["in", 1, expect[1]]]


@pytest.mark.parametrize("first", [0, 1, 4, 9, 10])
def test_after_a_seek_exactly_the_records_after_the_position_come_again_in_order(
        kafka_broker, sim, spouts, first):
    produced(kafka_broker, 10)
    s = kafka_spout(kafka_broker, spouts)
    out = opened(s, EXACTLY_ONCE)
    position, after = seek_back(s, out, sim, first, 10)
    # before the partition is taken the position lists nothing: a seek to it reads the
    # partition from where the task takes it
    assert position == ([["in", 0, first]] if first else [])
    start = len(out.emitted)
    assert pump(s, out, 10 + len(after), sim)
    assert out.records(start) == after
    assert [m for _, m in out.records(start)] == [("in", 0, o) for o in range(first, 10)]
    assert quiet(s, out, sim) == []
    assert out.letters() == []


def test_records_fetched_but_not_yet_emitted_are_after_the_position(kafka_broker, sim, spouts):
    produced(kafka_broker, 10)
    s = kafka_spout(kafka_broker, spouts)
    out = opened(s, EXACTLY_ONCE)
    assert pump(s, out, 1, sim)
    assert s.fetcher.buffer  # the rest of the fetch waits to be emitted
    assert s.position() == [["in", 0, 1]]


def test_each_partition_comes_again_from_its_own_offset(kafka_broker, sim, spouts):
    produced(kafka_broker, 20, partitions=2)
    s = kafka_spout(kafka_broker, spouts)
    out = opened(s, EXACTLY_ONCE)
    position, after = seek_back(s, out, sim, 7, 20)
    start = len(out.emitted)
    assert pump(s, out, 20 + 13, sim)
    again = [m for _, m in out.records(start)]
    for p in (0, 1):
        assert [m for m in again if m[1] == p] == [m for _, m in after if m[1] == p]
        assert [m[2] for m in again if m[1] == p] == list(range(dict(
            ((q, o) for _, q, o in position))[p], 10))


def test_records_before_the_position_count_as_done_and_are_committed(kafka_broker, sim, spouts):
    produced(kafka_broker, 10)
    s = kafka_spout(kafka_broker, spouts)
    out = opened(s, EXACTLY_ONCE)
    assert pump(s, out, 6, sim)
    position = s.position()
    assert pump(s, out, 10, sim)
    s.seek(position)  # a committed checkpoint's position: 0-5 are done, their acks not needed
    deadline = time.monotonic() + 20
    while committed(kafka_broker)[0] != 6 and time.monotonic() < deadline:
        s.next_tuple()
        sim.advance(0.05)
    assert committed(kafka_broker)[0] == 6
    start = len(out.emitted)
    assert pump(s, out, 14, sim)
    for _, m in out.records(start):
        s.ack(m)
    while committed(kafka_broker)[0] != 10 and time.monotonic() < deadline:
        s.next_tuple()
        sim.advance(0.05)
    assert committed(kafka_broker)[0] == 10


def test_seek_after_a_restart_reads_from_the_old_instances_position(kafka_broker, sim, spouts):
    produced(kafka_broker, 10)
    old = kafka_spout(kafka_broker, spouts)
    out = opened(old, EXACTLY_ONCE)
    assert pump(old, out, 7, sim)
    position = roundtrip(old.position())
    # the old task dies (its commits: none); a new instance of the task opens and seeks at
    # once, before it has taken its partition
    new = kafka_spout(kafka_broker, spouts)
    out2 = opened(new, EXACTLY_ONCE)
    new.seek(position)
    assert new.position() == [["in", 0, 7]]
    assert pump(new, out2, 3, sim)
    assert [m for _, m in out2.records()] == [("in", 0, o) for o in (7, 8, 9)]
    assert quiet(new, out2, sim) == []
    for _, m in out2.records():
        new.ack(m)
    deadline = time.monotonic() + 20  # the commit skips the offsets the old task emitted
    while committed(kafka_broker)[0] != 10 and time.monotonic() < deadline:
        new.next_tuple()
        sim.advance(0.05)
    assert committed(kafka_broker)[0] == 10


def test_a_partition_taken_after_the_position_is_read_again_from_where_it_was_taken(
        kafka_broker, sim, spouts):
    # (Tansu cannot add partitions: a topic matching the pattern appears instead)
    produced(kafka_broker, 3)
    s = KafkaSpout(KafkaSpoutConfig(kafka_broker.bootstrap, topic_pattern=r"in.*", group_id="g",
                                    partition_refresh_period_ms=500))
    spouts.append(s)
    out = opened(s, EXACTLY_ONCE)
    assert pump(s, out, 3, sim)
    position = s.position()
    kafka_broker.create_topic("in2", 1)
    kafka_broker.produce("in2", [b"a", b"b"])
    assert pump(s, out, 5, sim)  # the refresh finds in2-0; this task takes it
    s.seek(position)
    start = len(out.emitted)
    assert pump(s, out, 7, sim)
    assert [m for _, m in out.records(start)] == [("in2", 0, 0), ("in2", 0, 1)]
    assert quiet(s, out, sim) == []


def test_seek_to_offsets_a_topic_made_again_no_longer_has_is_refused_in_one_line(kafka_broker, sim, spouts):
    produced(kafka_broker, 10)
    old = KafkaSpout(stepped_config(kafka_broker.bootstrap))
    out = opened(old, EXACTLY_ONCE)
    assert pump(old, out, 8, sim)
    position = roundtrip(old.position())
    old.close()  # (a client living through its topic's deletion crashes librdkafka)
    kafka_broker.admin().delete_topics(["in"])["in"].result(timeout=10)
    produced(kafka_broker, 3)  # the topic again, with offsets 0-2 only
    new = kafka_spout(kafka_broker, spouts)
    out2 = opened(new, EXACTLY_ONCE)
    new.seek(position)  # before the partition is taken: checked when it is
    with pytest.raises(SeekOutOfRangeError) as e:
        pump(new, out2, 1, sim)
    message = str(e.value)
    assert "\n" not in message
    assert message == ("KafkaSpout 'src' (task 1): cannot seek in-0 to offset 8: the partition "
                       "ends at 3 (the topic was deleted and made again?)")
    assert out2.records() == []


def test_offsets_deleted_by_retention_are_refused_rather_than_skipped():
    # (Tansu has no DeleteRecords, so retention is not reproduced against the broker here)
    tp = TopicPartition("in", 0)
    check_in_range("KafkaSpout 'src' (task 1)", tp, 10, 10, 20)
    check_in_range("KafkaSpout 'src' (task 1)", tp, 20, 10, 20)
    with pytest.raises(SeekOutOfRangeError, match=r"^KafkaSpout 'src' \(task 1\): cannot seek in-0 to "
                                                  r"offset 9: the partition starts at 10 now "
                                                  r"\(offsets 9..9 were deleted\)$"):
        check_in_range("KafkaSpout 'src' (task 1)", tp, 9, 10, 20)


def test_the_kafka_bolt_says_it_does_not_follow_checkpoints():
    # exactly-once refuses a component with follows_checkpoints False (docs/connectors.md)
    from squall.connectors.kafka import KafkaBolt

    assert KafkaBolt.__dict__["follows_checkpoints"] is False


def test_a_partition_handed_over_goes_to_the_new_owner_at_the_position_the_old_one_sought(
        kafka_broker, sim, spouts):
    # two tasks of one spout; a topic sorting first moves t-b-0 from task 0 to task 1. A
    # rollback reaches task 0 while it still hands t-b-0 over: it goes back to the listed
    # offset, counts what came before as done and releases there, so task 1 starts there
    kafka_broker.create_topic("t-b", 1)
    kafka_broker.produce("t-b", [f"b{i}".encode() for i in range(6)])

    def task(index):
        s = KafkaSpout(KafkaSpoutConfig(kafka_broker.bootstrap, topic_pattern=r"t-.*", group_id="g",
                                        max_records_per_next_tuple=1,
                                        partition_refresh_period_ms=500, offset_commit_period_ms=200))
        spouts.append(s)
        # a handover limit (the message timeout) far past the test's simulated time: the new
        # owner must wait for the release, not give up on it and start at the group offset
        return s, opened(s, {**EXACTLY_ONCE, "topology.message.timeout.secs": 600}, index=index, tasks=2)

    old, out = task(0)
    assert pump(old, out, 3, sim)
    position = old.position()
    assert position == [["t-b", 0, 3]]
    assert pump(old, out, 6, sim)
    new, out2 = task(1)
    kafka_broker.create_topic("t-a", 1)
    deadline = time.monotonic() + 20
    while ("t-b", 0) not in old.handover.draining and time.monotonic() < deadline:
        old.next_tuple()
        new.next_tuple()
        sim.advance(0.05)
        time.sleep(0.001)  # the broker's answers come in real time
    assert ("t-b", 0) in old.handover.draining  # records 3-5 wait for acks that never come
    assert quiet(new, out2, sim, calls=20) == []
    assert old.position() == [["t-b", 0, 6]]
    old.seek(position)
    deadline = time.monotonic() + 20
    while len(out2.records()) < 3 and time.monotonic() < deadline:
        old.next_tuple()
        new.next_tuple()
        sim.advance(0.05)
        time.sleep(0.001)
    assert [m for _, m in out2.records()] == [("t-b", 0, 3), ("t-b", 0, 4), ("t-b", 0, 5)]
    assert committed(kafka_broker, topic="t-b")[0] >= 3


def test_a_refused_partition_keeps_its_sought_offset_and_the_others_of_the_answer_start_at_theirs(
        kafka_broker, sim, spouts):
    # a restarted task seeks to a position listing in-0 (valid) and in-1 (past its end: the
    # topic was made again). in-0 must start at its sought offset, in-1 must stay refused
    # (not taken at the group offset) and be refused again at the next refresh
    kafka_broker.create_topic("in", 2)
    kafka_broker.produce("in", [f"a{i}".encode() for i in range(6)], partition_of=lambda i: 0)
    kafka_broker.produce("in", [f"b{i}".encode() for i in range(4)], partition_of=lambda i: 1)
    s = kafka_spout(kafka_broker, spouts)
    out = opened(s, EXACTLY_ONCE)
    s.seek([["in", 0, 3], ["in", 1, 50]])
    refusals = []
    deadline = time.monotonic() + 20
    while len(refusals) < 2 and time.monotonic() < deadline:
        try:
            s.next_tuple()
        except SeekOutOfRangeError as e:
            refusals.append(str(e))
        sim.advance(0.05)
    assert refusals == ["KafkaSpout 'src' (task 1): cannot seek in-1 to offset 50: the partition "
                        "ends at 4 (the topic was deleted and made again?)"] * 2
    while len(out.records()) < 3 and time.monotonic() < deadline:
        try:
            s.next_tuple()
        except SeekOutOfRangeError:
            pass
        sim.advance(0.05)
    assert [m for _, m in out.records()] == [("in", 0, o) for o in (3, 4, 5)]
    assert ("in", 1) not in s.assigned
    assert s.position() == [["in", 0, 6], ["in", 1, 50]]  # still listed where the seek put it


def test_a_seek_past_an_end_read_before_it_is_asked_again_not_refused(kafka_broker, sim, spouts):
    # a new task's question about its partition (committed offset, watermarks) is answered
    # while the old owner still reads on; the move's seek then lists an offset past that
    # answer's end. The end only grew: the task asks again and starts at the sought offset
    # (CI: a live Kafka rescale on Spark failed its checkpoint on "ends at 38" for offset 40)
    produced(kafka_broker, 4)
    s = kafka_spout(kafka_broker, spouts)
    out = opened(s, EXACTLY_ONCE)
    deadline = time.monotonic() + 20
    while not s.handover.waiting and time.monotonic() < deadline:
        s.next_tuple()
        sim.advance(0.05)
        time.sleep(0.001)
    assert ("in", 0) in s.handover.waiting
    while not any(kind == "committed" for kind, _, _ in s.monitor.results) and time.monotonic() < deadline:
        time.sleep(0.01)  # the answer waits for the task's next call: it says the end is 4
    (answer,) = [payload for kind, payload, _ in s.monitor.results if kind == "committed"]
    assert answer[("in", 0)][3] == 4
    kafka_broker.produce("in", [f"r{i}".encode() for i in range(4, 8)])
    s.seek([["in", 0, 6]])
    assert pump(s, out, 2, sim)  # raised SeekOutOfRangeError "ends at 4" before
    assert [m for _, m in out.records()] == [("in", 0, 6), ("in", 0, 7)]


def test_an_answer_reads_the_end_after_the_committed_offset_so_a_commit_between_is_below_it(
        kafka_broker, sim, spouts, monkeypatch):
    # another task commits 8 (records 4-7 produced and read) while this task's question is
    # answered: read before the commit, the end said 4 and the group offset 8 was refused
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as KTP

    from squall.connectors.kafka import monitor

    produced(kafka_broker, 4)
    s = kafka_spout(kafka_broker, spouts)
    read, moved = monitor.read_committed, []

    def read_committed(consumer, tps, timeout=monitor.CALL_TIMEOUT_S):
        if consumer is s.monitor._consumer and not moved:
            moved.append(True)
            kafka_broker.produce("in", [f"r{i}".encode() for i in range(4, 8)])
            other = Consumer({"bootstrap.servers": kafka_broker.bootstrap, "group.id": "g"})
            try:
                other.commit(offsets=[KTP("in", 0, 8)], asynchronous=False)
            finally:
                other.close()
        return read(consumer, tps, timeout)

    monkeypatch.setattr(monitor, "read_committed", read_committed)
    out = opened(s, EXACTLY_ONCE)
    kafka_broker.produce("in", [b"r8"])
    assert pump(s, out, 1, sim)  # raised SeekOutOfRangeError "ends at 4" for offset 8 before
    assert moved and [m for _, m in out.records()] == [("in", 0, 8)]


def test_a_group_offset_past_the_end_is_refused_in_exactly_once_and_reported_otherwise(
        kafka_broker, sim, spouts):
    # (Tansu has no DeleteRecords: an offset below the start cannot be made here; a group
    # offset past the end, as a topic made again leaves it, goes through the same check)
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as KTP

    produced(kafka_broker, 5)
    c = Consumer({"bootstrap.servers": kafka_broker.bootstrap, "group.id": "g"})
    c.commit(offsets=[KTP("in", 0, 40)], asynchronous=False)
    c.close()
    eo = kafka_spout(kafka_broker, spouts)
    out = opened(eo, EXACTLY_ONCE)
    with pytest.raises(SeekOutOfRangeError, match=r"cannot seek in-0 to offset 40: the partition ends at 5"):
        pump(eo, out, 1, sim)
    assert out.records() == [] and ("in", 0) not in eo.assigned
    assert eo.handover.offset_reset == "error"
    eo.close()
    spouts.remove(eo)
    alo = kafka_spout(kafka_broker, spouts)  # UNCOMMITTED_EARLIEST: auto.offset.reset earliest
    out2 = opened(alo, {})
    assert pump(alo, out2, 5, sim)
    assert [m for _, m in out2.records()] == [("in", 0, o) for o in range(5)]
    assert [str(e) for e in out2.errors] == [
        "KafkaSpout 'src' (task 1): in-0's committed offset 40 is out of range (0..5); "
        "auto.offset.reset 'earliest' starts it at 0"]


def test_auto_offset_reset_is_error_under_exactly_once_earliest_for_earliest_strategies_and_overridable(
        kafka_broker):
    from squall.connectors.kafka.config import FirstPollOffsetStrategy as S
    from squall.connectors.kafka.spout import offset_reset

    def cfg(strategy):
        return KafkaSpoutConfig(kafka_broker.bootstrap, ["in"], first_poll_offset_strategy=strategy)

    assert offset_reset(cfg(S.UNCOMMITTED_EARLIEST), exactly_once=True) == "error"
    assert offset_reset(cfg(S.EARLIEST), exactly_once=False) == "earliest"
    assert offset_reset(cfg(S.UNCOMMITTED_EARLIEST), exactly_once=False) == "earliest"
    assert offset_reset(cfg(S.LATEST), exactly_once=False) == "latest"
    assert offset_reset(cfg(S.UNCOMMITTED_LATEST), exactly_once=False) == "latest"


@pytest.mark.parametrize("conf", [EXACTLY_ONCE, {}], ids=["exactly_once", "at_least_once"])
def test_a_drained_partition_is_released_when_its_acks_arrive_not_at_the_commit_timer(
        kafka_broker, sim, spouts, conf):
    # the default commit period (30 s) is longer than the new owner's wait (message timeout
    # 10 s + 2 refreshes): a release at the commit timer comes after the new owner gave up
    # and started at the group offset, reading again what the old one had acked
    kafka_broker.create_topic("t-b", 1)
    kafka_broker.produce("t-b", [f"b{i}".encode() for i in range(6)])
    conf = {**conf, "topology.message.timeout.secs": 10}

    def task(index):
        s = KafkaSpout(KafkaSpoutConfig(kafka_broker.bootstrap, topic_pattern=r"t-.*", group_id="g",
                                        max_records_per_next_tuple=1,
                                        partition_refresh_period_ms=500))
        spouts.append(s)
        return s, opened(s, conf, index=index, tasks=2)

    old, out = task(0)
    assert pump(old, out, 6, sim)
    new, out2 = task(1)
    kafka_broker.create_topic("t-a", 1)
    deadline = time.monotonic() + 20
    while ("t-b", 0) not in old.handover.draining and time.monotonic() < deadline:
        old.next_tuple()
        new.next_tuple()
        sim.advance(0.05)
        time.sleep(0.001)  # the broker's answers come in real time
    assert ("t-b", 0) in old.handover.draining
    for _, m in out.records():
        old.ack(m)  # the trees complete (at-least-once) or the checkpoint commits (exactly-once)
    start = clock.monotonic()
    while clock.monotonic() - start < 15 and time.monotonic() < deadline + 20:
        old.next_tuple()
        new.next_tuple()
        sim.advance(0.05)
        time.sleep(0.001)
    assert ("t-b", 0) in new.assigned
    assert new.book.started[("t-b", 0)] == 6
    assert [m for _, m in out2.records() if m[0] == "t-b"] == []


def test_a_record_whose_emit_raised_holds_the_position_and_is_emitted_again(kafka_broker, sim, spouts):
    # exactly-once emits are untracked: no fail comes for an emit that raised (an oversized
    # tuple), so the spout retries it itself, and the position never passes it meanwhile
    produced(kafka_broker, 10)
    s = kafka_spout(kafka_broker, spouts, retry=RetryExponentialBackoff(initial_delay_ms=5000))
    out = opened(s, EXACTLY_ONCE)
    emit = out.emit
    refuse = {5}

    def emit_or_raise(values, stream="default", msg_id=None):
        if msg_id is not None and msg_id[2] in refuse:
            raise ValueError(f"tuple too large at offset {msg_id[2]}")
        return emit(values, stream, msg_id)

    out.emit = emit_or_raise
    raised = []
    for _ in range(200):  # 10 simulated seconds: the first retry raises too
        try:
            s.next_tuple()
        except ValueError as e:
            raised.append(str(e))
        sim.advance(0.05)
        time.sleep(0.002)
    assert set(raised) == {"tuple too large at offset 5"} and len(raised) >= 2, raised
    # the partition's later records wait behind it (sent first, they would commit in a
    # checkpoint whose position stays at 5, and come again after the next rollback)
    assert [m[2] for _, m in out.records()] == [0, 1, 2, 3, 4]
    assert s.position() == [["in", 0, 5]]
    refuse.clear()
    assert pump(s, out, 10, sim)  # the retry, after its backoff, then the rest in order
    assert [m[2] for _, m in out.records()] == list(range(10))
    assert s.position() == [["in", 0, 10]]


def test_a_task_that_died_handing_a_partition_over_releases_it_at_its_position_after_the_restart(
        kafka_broker, sim, spouts):
    # task 0 reads t-b-0 (records 0-5 emitted, the checkpoint at 3); a topic sorting first
    # moves t-b-0 to task 1 while task 0 drains it, then task 0 dies. Its restarted instance
    # seeks to the checkpoint: it must release t-b-0 at 3, where task 1 starts, rather than
    # leave task 1 to give up waiting and start at the group offset (nothing committed: 0)
    kafka_broker.create_topic("t-b", 1)
    kafka_broker.produce("t-b", [f"b{i}".encode() for i in range(6)])

    def task(index):
        s = KafkaSpout(KafkaSpoutConfig(kafka_broker.bootstrap, topic_pattern=r"t-.*", group_id="g",
                                        max_records_per_next_tuple=1,
                                        partition_refresh_period_ms=500))
        spouts.append(s)
        # a handover limit (the message timeout) far past the test's simulated time: the new
        # owner must wait for the release, not give up on it and start at the group offset
        return s, opened(s, {**EXACTLY_ONCE, "topology.message.timeout.secs": 600}, index=index, tasks=2)

    old, out = task(0)
    assert pump(old, out, 3, sim)
    position = roundtrip(old.position())
    assert position == [["t-b", 0, 3]]
    assert pump(old, out, 6, sim)
    new, out2 = task(1)
    kafka_broker.create_topic("t-a", 1)
    deadline = time.monotonic() + 20
    while ("t-b", 0) not in old.handover.draining and time.monotonic() < deadline:
        old.next_tuple()
        new.next_tuple()
        sim.advance(0.05)
        time.sleep(0.001)  # the broker's answers come in real time
    assert ("t-b", 0) in old.handover.draining
    # task 0 dies (no close: nothing released); its new instance seeks to the checkpoint
    restarted, out3 = task(0)
    restarted.seek(position)
    while len(out2.records()) < 3 and time.monotonic() < deadline + 30:
        restarted.next_tuple()
        new.next_tuple()
        sim.advance(0.05)
        time.sleep(0.005)
    assert [m for _, m in out2.records()][:3] == [("t-b", 0, 3), ("t-b", 0, 4), ("t-b", 0, 5)]
    assert [m for _, m in out3.records() if m[0] == "t-b"] == []


def test_committed_makes_the_group_offset_catch_up_with_the_position_with_nothing_new_acked(
        kafka_broker, sim, spouts):
    # issue 41 item 3c: the old task died between its PREPARE and COMMIT, so its records
    # below the committed position were never acked; the relaunched task is told the position
    produced(kafka_broker, 10)
    old = kafka_spout(kafka_broker, spouts)
    out = opened(old, EXACTLY_ONCE)
    assert pump(old, out, 7, sim)
    position = roundtrip(old.position())
    new = kafka_spout(kafka_broker, spouts)
    out2 = opened(new, EXACTLY_ONCE)
    new.committed(position)
    new.seek(position)
    deadline = time.monotonic() + 20
    # the group offset may catch up before the first fetch comes back: wait for both
    while ((committed(kafka_broker)[0] != 7 or len(out2.records()) < 3)
           and time.monotonic() < deadline):
        new.next_tuple()
        sim.advance(0.05)
    assert committed(kafka_broker)[0] == 7
    assert [m for _, m in out2.records()] == [("in", 0, o) for o in (7, 8, 9)]  # never acked
