"""storm-kafka-client's OffsetManagerTest, ported."""

import pytest

from squall.connectors.kafka.offsets import OffsetManager, TopicPartition

TP = TopicPartition("testTopic", 0)
INITIAL = 0


@pytest.fixture
def manager():
    return OffsetManager(TP, INITIAL)


def emit_and_ack(manager, offset):
    manager.add_to_emit_msgs(offset)
    manager.add_to_ack_msgs(offset)


def test_skip_missing_offsets_with_gap_in_middle_of_acked(manager):
    for o in (0, 1, 2, 5, 6):  # 3, 4 compacted away
        manager.add_to_emit_msgs(o)
    for o in (0, 1, 2, 6):
        manager.add_to_ack_msgs(o)
    assert manager.find_next_commit_offset() == 3  # 5 is still pending
    manager.add_to_ack_msgs(5)
    assert manager.find_next_commit_offset() == 7  # the gap was never emitted


def test_skip_missing_offsets_with_gap_before_acked(manager):
    manager.add_to_emit_msgs(5)
    manager.add_to_emit_msgs(6)
    manager.add_to_ack_msgs(6)
    assert manager.find_next_commit_offset() is None
    manager.add_to_ack_msgs(5)
    assert manager.find_next_commit_offset() == 7


def test_no_acks(manager):
    assert manager.find_next_commit_offset() is None


def test_one_ack(manager):
    emit_and_ack(manager, 0)
    assert manager.find_next_commit_offset() == 1  # one past the processed offset


def test_multiple_out_of_order_acks(manager):
    emit_and_ack(manager, 1)
    emit_and_ack(manager, 0)
    assert manager.find_next_commit_offset() == 2


def test_acked_offset_gap(manager):
    emit_and_ack(manager, 2)
    manager.add_to_emit_msgs(1)
    emit_and_ack(manager, 0)
    assert manager.find_next_commit_offset() == 1


def test_acked_but_not_emitted_offset_gap(manager):
    emit_and_ack(manager, 2)
    emit_and_ack(manager, 0)
    assert manager.find_next_commit_offset() == 3


def test_unacked_offset_gap(manager):
    manager.add_to_emit_msgs(1)
    emit_and_ack(manager, 0)
    assert manager.find_next_commit_offset() == 1


def test_too_low_offset_acked_has_no_effect():
    high = OffsetManager(TP, 10)
    assert high.find_next_commit_offset() is None


def test_commit(manager):
    for o in (0, 1, 2):
        emit_and_ack(manager, o)
    assert manager.commit(2) == 2
    assert not manager.contains(0) and not manager.contains_emitted(0)
    assert not manager.contains(1) and not manager.contains_emitted(1)
    assert manager.contains(2) and manager.contains_emitted(2)
    assert manager.committed_offset == 2


def test_nth_uncommitted_offset_after_committed_offset(manager):
    for o in (1, 2, 5, 30):
        manager.add_to_emit_msgs(o)
    assert manager.nth_uncommitted_offset_after_committed_offset(3) == 5
    assert manager.nth_uncommitted_offset_after_committed_offset(4) == 30
    with pytest.raises(IndexError):
        manager.nth_uncommitted_offset_after_committed_offset(5)


def test_committed_flag_set_on_commit(manager):
    assert not manager.committed
    manager.commit(0)
    assert manager.committed


def test_a_failed_offset_holds_the_commit_until_its_retry_is_acked(manager):
    for o in range(5):
        manager.add_to_emit_msgs(o)
    for o in (0, 1, 3, 4):
        manager.add_to_ack_msgs(o)
    assert manager.find_next_commit_offset() == 2
    manager.commit(2)
    assert manager.num_uncommitted_offsets() == 3
    assert manager.find_next_commit_offset() is None  # 2 is being retried
    manager.add_to_ack_msgs(2)
    assert manager.find_next_commit_offset() == 5
