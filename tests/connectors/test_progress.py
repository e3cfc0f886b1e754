"""The watermark over out-of-order acks (pure)."""

import pytest

from squall.connectors.progress import Watermark


def test_the_watermark_moves_only_over_a_done_prefix():
    w = Watermark(10)
    for start, end in [(10, 15), (15, 30), (30, 31)]:
        w.emitted(start, end)
    assert w.read == 31 and len(w) == 3
    assert not w.done(15)  # a gap below it
    assert w.position == 10
    assert w.done(10)
    assert w.position == 30 and len(w) == 1
    assert w.done(30) and w.position == 31 and len(w) == 0


def test_duplicate_and_stale_verdicts_change_nothing():
    w = Watermark()
    w.emitted(0, 5)
    assert w.done(0) and not w.done(0)
    assert w.position == 5


def test_records_must_follow_each_other():
    w = Watermark(4)
    with pytest.raises(ValueError, match=r"record \[5, 9\) does not follow position 4"):
        w.emitted(5, 9)


# Ported from Storm's OffsetManagerTest (storm-kafka-client): rows stand for offsets.

def rows(w, *starts):
    for s in starts:
        w.emitted(s, s + 1)


def test_storm_no_acks_no_commit():
    w = Watermark()
    rows(w, 0)
    assert w.position == 0


def test_storm_multiple_out_of_order_acks_commit_past_both():
    w = Watermark()
    rows(w, 0, 1)
    w.done(1)
    w.done(0)
    assert w.position == 2


def test_storm_an_unacked_gap_stops_the_commit():
    # testFindNextCommitOffsetWithUnackedOffsetGap / WithAckedOffsetGap
    w = Watermark()
    rows(w, 0, 1, 2)
    w.done(2)
    w.done(0)
    assert w.position == 1
    w.done(1)
    assert w.position == 3


def test_storm_acking_below_the_committed_position_has_no_effect():
    # testFindNextCommitOffsetWhenTooLowOffsetIsAcked
    w = Watermark(10)
    assert not w.done(0)
    assert w.position == 10


def test_a_seek_moves_mark_and_reading_to_the_position_and_drops_what_was_read_past_it():
    w = Watermark(0)
    for start in range(0, 50, 10):
        w.emitted(start, start + 10)
    w.done(10)
    w.seek(20)  # a committed checkpoint's position: 0-19 are done, 20-49 read again
    assert (w.position, w.read, len(w)) == (20, 20, 0)
    assert not w.done(30)  # a verdict on a record dropped by the seek moves nothing
    w.emitted(20, 30)
    assert w.done(20) and w.position == 30
    w.emitted(30, 40)
    assert w.position == 30  # the verdict before the seek does not count for the record read again
    w.seek(80)  # forward (a restart seeking past what this instance read)
    assert (w.position, w.read) == (80, 80)
    w.seek(5)  # back below the mark
    assert (w.position, w.read) == (5, 5)
    with pytest.raises(ValueError, match="negative position -1"):
        w.seek(-1)
