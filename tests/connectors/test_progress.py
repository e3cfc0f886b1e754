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
