"""The checkpoint state machine (RELIABILITY D1, D2) and barrier alignment (D4)."""

from squall.runtime.checkpoint import Action, Barrier, CheckpointCoordinator, Phase, TxState


def drive(coordinator, now=0.0):
    emit = coordinator.poll(now)
    assert emit is not None
    return emit


def test_normal_cycle_prepare_commit_then_next_txid():
    c = CheckpointCoordinator(TxState(), interval=1.0)
    e = drive(c)
    assert (e.txid, e.action) == (0, Action.INITSTATE)
    assert c.acked(0, Action.INITSTATE) is None and not c.recovering
    e = drive(c, now=1.0)
    assert (e.txid, e.action) == (1, Action.PREPARE)
    assert e.save == TxState(1, Phase.PREPARING)  # saved before PREPARE goes out
    assert c.acked(1, Action.PREPARE) == TxState(1, Phase.COMMITTING)
    e = drive(c, now=1.1)
    assert (e.txid, e.action, e.save) == (1, Action.COMMIT, None)
    assert c.acked(1, Action.COMMIT) == TxState(1, Phase.COMMITTED)
    assert c.poll(1.5) is None  # the interval has not passed since the last PREPARE
    e = drive(c, now=2.0)
    assert (e.txid, e.action) == (2, Action.PREPARE)


def test_recovery_from_preparing_rolls_back_to_the_previous_commit():
    c = CheckpointCoordinator(TxState(5, Phase.PREPARING), interval=1.0)
    e = drive(c)
    assert (e.txid, e.action) == (5, Action.ROLLBACK)
    assert c.acked(5, Action.ROLLBACK) == TxState(4, Phase.COMMITTED)
    e = drive(c)
    assert (e.txid, e.action) == (4, Action.INITSTATE)
    c.acked(4, Action.INITSTATE)
    assert not c.recovering
    assert (drive(c, 10.0).txid, c.in_flight[1]) == (5, Action.PREPARE)


def test_recovery_from_committing_commits_again():
    c = CheckpointCoordinator(TxState(3, Phase.COMMITTING), interval=1.0)
    e = drive(c)
    assert (e.txid, e.action) == (3, Action.COMMIT)
    assert c.acked(3, Action.COMMIT) == TxState(3, Phase.COMMITTED)
    assert drive(c).action is Action.INITSTATE


def test_recovery_from_committed_only_inits_state():
    c = CheckpointCoordinator(TxState(7, Phase.COMMITTED), interval=1.0)
    assert drive(c).action is Action.INITSTATE


def test_a_failed_prepare_is_rolled_back_not_committed_after_a_pause():
    c = CheckpointCoordinator(TxState(), interval=1.0)
    c.acked(drive(c).txid, Action.INITSTATE)
    e = drive(c, now=1.0)
    c.failed(e.txid, e.action, now=1.0)
    assert c.recovering
    assert c.poll(1.5) is None  # backs off one interval
    e = drive(c, now=2.0)
    assert (e.txid, e.action) == (1, Action.ROLLBACK)


def test_one_checkpoint_in_flight_and_late_answers_ignored():
    c = CheckpointCoordinator(TxState(), interval=0.0)
    e = drive(c)
    assert c.poll(0.0) is None
    assert c.acked(e.txid, Action.PREPARE) is None  # wrong action: not the one in flight
    c.failed(99, Action.COMMIT, now=0.0)
    assert c.in_flight == (0, Action.INITSTATE)


def test_barrier_completes_only_when_every_upstream_task_delivered():
    b = Barrier(expected=3)
    assert b.add(1, "PREPARE", 10, "a") == ([], [])
    assert b.add(1, "PREPARE", 11, "b") == ([], [])
    assert b.add(1, "PREPARE", 12, "c") == (["a", "b", "c"], [])
    assert b.add(1, "COMMIT", 10, "a") == ([], [])


def test_a_retried_checkpoint_from_one_task_does_not_stand_in_for_another():
    b = Barrier(expected=2)
    b.add(4, "COMMIT", 10, "first")
    done, superseded = b.add(4, "COMMIT", 10, "retry")
    assert done == [] and superseded == ["first"]
    done, superseded = b.add(4, "COMMIT", 11, "other")
    assert done == ["retry", "other"] and superseded == []


def test_barrier_drops_an_incomplete_checkpoint_when_a_newer_one_arrives():
    b = Barrier(expected=2)
    b.add(1, "PREPARE", 10, "a")
    done, superseded = b.add(1, "ROLLBACK", 10, "x")
    assert done == [] and superseded == ["a"]


def _spout_worker(coordinator):
    from types import SimpleNamespace

    from squall.runtime.checkpoint import CHECKPOINT_SPOUT
    spout = SimpleNamespace(component=CHECKPOINT_SPOUT, spout=SimpleNamespace(_coordinator=coordinator))
    return SimpleNamespace(index=0, tasks={1: spout})


def test_a_hold_lets_a_prepared_transaction_commit_and_begins_no_new_one():
    # a live rescale holds the spout until a barrier is free; held between PREPARE's ack and
    # COMMIT's emit, a hold that stopped every emit left the record COMMITTING for good: the
    # move waited its 10 s and restarted the topology (seen in the rescale bench on Spark)
    from squall.runtime import live_keyed
    c = CheckpointCoordinator(TxState(), interval=1.0)
    worker = _spout_worker(c)
    c.acked(0, drive(c).action)  # INITSTATE: recovery over
    assert drive(c, 1.0).action is Action.PREPARE
    c.acked(1, Action.PREPARE)
    live_keyed.hold_checkpoints(worker)
    assert live_keyed.checkpoints_idle(worker) == (False, 1)
    e = c.poll(1.01)
    assert e is not None and (e.txid, e.action) == (1, Action.COMMIT)
    c.acked(1, Action.COMMIT)
    assert live_keyed.checkpoints_idle(worker) == (True, 1)
    assert c.poll(9.0) is None  # held: no transaction 2 however late
    live_keyed.release_checkpoints(worker)
    assert drive(c, 9.0).action is Action.PREPARE


def test_a_hold_lets_a_recovery_finish():
    from squall.runtime import live_keyed
    c = CheckpointCoordinator(TxState(4, Phase.COMMITTED), interval=1.0)
    worker = _spout_worker(c)
    c.acked(4, drive(c).action)
    e = drive(c, 1.0)
    live_keyed.hold_checkpoints(worker)
    c.failed(e.txid, e.action, now=1.5)  # PREPARE 5 timed out: roll back, one interval on
    assert c.poll(2.0) is None and not live_keyed.checkpoints_idle(worker)[0]
    assert drive(c, 2.5).action is Action.ROLLBACK
    c.acked(5, Action.ROLLBACK)
    assert drive(c, 2.6).action is Action.INITSTATE
    c.acked(4, Action.INITSTATE)
    assert live_keyed.checkpoints_idle(worker) == (True, 4)
    assert c.poll(10.0) is None
