"""storm-kafka-client's RoundRobinManualPartitionerTest, ported, and the first-poll strategies."""

import pytest

from squall.connectors.kafka import FirstPollOffsetStrategy as S
from squall.connectors.kafka.offsets import TopicPartition
from squall.connectors.kafka.partitioner import partitions_for_task
from squall.connectors.kafka.start import start_offset


def tps(*ps, topic="topic"):
    return {TopicPartition(topic, p) for p in ps}


def test_round_robin_partitioning():
    every = [TopicPartition("topic", i) for i in range(11)]
    assert partitions_for_task(every, 0, 3) == tps(0, 3, 6, 9)
    assert partitions_for_task(every, 1, 3) == tps(1, 4, 7, 10)
    assert partitions_for_task(every, 2, 3) == tps(2, 5, 8)


def test_partitions_are_sorted_by_topic_then_partition_whatever_order_they_come_in():
    every = [TopicPartition("b", 1), TopicPartition("a", 0), TopicPartition("b", 0)]
    assert partitions_for_task(every, 0, 2) == {TopicPartition("a", 0), TopicPartition("b", 1)}
    assert partitions_for_task(every, 1, 2) == {TopicPartition("b", 0)}


def test_partitions_appended_to_a_topic_keep_their_task():
    before = [TopicPartition("t", i) for i in range(3)]
    after = [TopicPartition("t", i) for i in range(5)]
    for task in (0, 1):
        assert partitions_for_task(before, task, 2) <= partitions_for_task(after, task, 2)


def test_a_task_index_outside_the_component_is_refused():
    with pytest.raises(ValueError):
        partitions_for_task([], 2, 2)


@pytest.mark.parametrize("strategy, committed, ours, expected", [
    (S.EARLIEST, None, False, 10), (S.LATEST, None, False, 90),
    (S.UNCOMMITTED_EARLIEST, None, False, 10), (S.UNCOMMITTED_LATEST, None, False, 90),
    (S.EARLIEST, 50, False, 10), (S.LATEST, 50, False, 90),           # another deployment's commit
    (S.UNCOMMITTED_EARLIEST, 50, False, 50), (S.UNCOMMITTED_LATEST, 50, False, 50),
    (S.EARLIEST, 50, True, 50), (S.LATEST, 50, True, 50),             # this topology's own commit
])
def test_first_poll_offset_strategy(strategy, committed, ours, expected):
    assert start_offset(strategy, committed, ours, 10, 90) == expected
