"""The keyed move's schedule (pure): which tasks get each checkpoint tuple around T."""

from squall.runtime.live_keyed import MoveSchedule

T = 10


def schedule():
    return MoveSchedule(T, [1, 2], [1, 2, 5, 6])


def test_the_move_rides_t_old_tasks_until_prepare_both_at_commit_new_after():
    s = schedule()
    assert [s.see(*b) for b in [(T - 1, "COMMIT"), (T, "PREPARE"), (T, "COMMIT"), (T + 1, "PREPARE")]] == [
        "before", "switch", "commit", "committed"]
    assert s.targets(T, "PREPARE") == [1, 2] and s.targets(T, "COMMIT") == [1, 2, 5, 6]
    assert s.targets(T + 1, "PREPARE") == [1, 2, 5, 6]


def test_a_rollback_of_t_fails_the_move_for_a_task_that_never_forwarded_prepare_t():
    forwarded, failed = schedule(), schedule()
    forwarded.see(T, "PREPARE")  # the other task failed PREPARE(T): it never forwarded it
    for s in (forwarded, failed):
        assert s.see(T, "ROLLBACK") == "rolled_back"
        s.see(T - 1, "INITSTATE")
        assert s.see(T, "PREPARE") == "before"  # the retry of T moves nothing
        assert s.targets(T, "COMMIT") == [1, 2] and s.targets(T + 5, "PREPARE") == [1, 2]


def test_a_recovery_after_commit_t_keeps_the_move():
    s = schedule()
    for b in [(T, "PREPARE"), (T, "COMMIT")]:
        s.see(*b)
    assert s.see(T, "INITSTATE") == "committed" and not s.rolled_back
    assert s.targets(T, "INITSTATE") == [1, 2, 5, 6]
