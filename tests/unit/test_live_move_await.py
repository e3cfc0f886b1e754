"""A live move on Spark is over only when every task that must carry it reports its part.

Before, the master took the move for over once every reported part was done: a worker that
reported no part (the move never armed there) made an empty, "done" answer, and the record
read ``done, live`` while no key group had moved.
"""

from __future__ import annotations

import pytest

from squall.spark import live_move


@pytest.fixture
def replies(monkeypatch):
    """The workers' answers to each status step, as the test sets them."""
    answers: dict[int, list] = {}
    monkeypatch.setattr(live_move, "_step", lambda master, incs, step, fields, timeout=0: dict(answers))
    return answers


def test_a_worker_without_its_task_moves_ends_the_wait_with_an_error(replies):
    replies.update({0: [], 1: [(True, None, 1.0, 10)]})
    with pytest.raises(RuntimeError, match="worker 0 carries 0 of its 2 task moves"):
        live_move._await_move(None, {0: b"a", 1: b"b"}, 5.0, "status", {0: 2, 1: 1})


def test_the_move_is_over_once_every_expected_part_is_done(replies):
    replies.update({0: [(True, None, 2.0, 5), (True, None, 1.0, 7)], 1: [(True, None, 1.0, 10)]})
    states, failed = live_move._await_move(None, {0: b"a", 1: b"b"}, 5.0, "status", {0: 2, 1: 1})
    assert failed is None and len(states) == 3


def test_a_rolled_back_part_is_reported_as_the_failure(replies):
    replies.update({0: [(False, "T rolled back", 0.0, 0)], 1: [(True, None, 1.0, 10)]})
    _, failed = live_move._await_move(None, {0: b"a", 1: b"b"}, 5.0, "status", {0: 1, 1: 1})
    assert failed == "T rolled back"


def test_expected_counts_add_up_by_worker():
    assert live_move._counts({0: [1, 2], 1: [3]}, {1: [4], 2: [5, 6]}) == {0: 2, 1: 2, 2: 2}
