"""Storm's checkpoint tests, ported: CheckpointSpoutTest, StatefulBoltExecutorTest, and the
forwarding of CheckpointTupleForwarder; and the barrier's handling of retried checkpoints.

The spout runs with a real in-memory state provider on simulated time. Storm's first txid
is -1 and its msg id is the txid; squall's first txid is the clock in ms (``T0`` here) and
its msg id is ``(txid, action)``. The bolt tasks run on a fake worker that records what is
sent to the acker, with real state.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from squall.api.components import Bolt
from squall.api.fields import Fields
from squall.api.tuple import Tuple
from squall.runtime import clock as runtime_clock
from squall.runtime.checkpoint import CHECKPOINT_SPOUT, CHECKPOINT_STREAM, Barrier
from squall.runtime.checkpoint_spout import RECORD_KEY, CheckpointSpout
from squall.runtime.collectors import StreamRoute
from squall.runtime.host import TaskHost
from squall.runtime.plan import ACK_ACK, ACK_FAIL
from squall.runtime.routing import ConstantRouter
from squall.runtime.stateful import StatefulBoltTask
from squall.runtime.tasks import BoltTask
from squall.state import memory
from squall.state.memory import InMemoryStateProvider
from tests.state.spout_context import spout_context

TOPOLOGY = "storm"
CONF = {"topology.state.provider": "squall.state.memory.InMemoryStateProvider",
        "topology.state.checkpoint.interval.ms": 1000}
ACKER = 100
CP_FIELDS = Fields("txid", "action")


@pytest.fixture(autouse=True)
def fresh_store():
    memory.clear()
    with runtime_clock.simulation(0.0) as clock:
        yield clock
    memory.clear()


# ---- CheckpointSpoutTest ----------------------------------------------------------------


class Recorder:
    """The spout's collector: what it emitted, as (stream, values, msg_id)."""

    def __init__(self) -> None:
        self.emitted: list[tuple] = []

    def emit(self, values, stream, msg_id):
        self.emitted.append((stream, list(values), msg_id))

    def report_error(self, e):
        raise e


def open_spout(record: tuple[int, str] | None = None):
    if record is not None:
        state = InMemoryStateProvider().new_state(f"{TOPOLOGY}/{CHECKPOINT_SPOUT}", CONF, None)
        state.put(RECORD_KEY, list(record))
        state.commit(1)
    spout, out = CheckpointSpout(), Recorder()
    spout.open(CONF, spout_context(TOPOLOGY), out)
    return spout, out


def last(out: Recorder) -> tuple[int, str]:
    stream, values, msg_id = out.emitted[-1]
    assert stream == CHECKPOINT_STREAM and tuple(values) == msg_id
    return values[0], values[1]


def step(spout, clock, secs=1.0):
    clock.advance(secs)
    spout.next_tuple()


def test_spout_init_state(fresh_store):
    spout, out = open_spout()
    t0 = runtime_clock.time_ms()
    spout.next_tuple()
    assert last(out) == (t0, "INITSTATE") and len(out.emitted) == 1
    spout.next_tuple()
    assert len(out.emitted) == 1  # in flight: asked again, nothing new before its ack
    spout.ack((t0, "INITSTATE"))
    assert len(out.emitted) == 1  # nothing more until asked...
    spout.next_tuple()
    assert len(out.emitted) == 2 and last(out) == (t0 + 1, "PREPARE")  # ...then the ack counted


def test_spout_prepare(fresh_store):
    spout, out = open_spout()
    t0 = runtime_clock.time_ms()
    spout.next_tuple()
    spout.ack((t0, "INITSTATE"))
    spout.next_tuple()
    assert len(out.emitted) == 2 and last(out) == (t0 + 1, "PREPARE")


def test_spout_prepare_with_fail(fresh_store):
    clock = fresh_store
    spout, out = open_spout((-1, "COMMITTED"))
    spout.next_tuple()
    spout.ack((-1, "INITSTATE"))
    step(spout, clock)
    spout.ack((0, "PREPARE"))
    step(spout, clock)
    spout.ack((0, "COMMIT"))
    step(spout, clock)
    spout.fail((1, "PREPARE"))
    step(spout, clock)
    spout.fail((1, "ROLLBACK"))
    step(spout, clock)
    spout.ack((1, "ROLLBACK"))
    step(spout, clock)
    spout.ack((0, "INITSTATE"))
    step(spout, clock)
    assert [tuple(v) for _, v, _ in out.emitted] == [
        (-1, "INITSTATE"), (0, "PREPARE"), (0, "COMMIT"), (1, "PREPARE"), (1, "ROLLBACK"),
        (1, "ROLLBACK"), (0, "INITSTATE"), (1, "PREPARE")]


def test_spout_commit(fresh_store):
    clock = fresh_store
    spout, out = open_spout((-1, "COMMITTED"))
    spout.next_tuple()
    spout.ack((-1, "INITSTATE"))
    step(spout, clock)
    spout.ack((0, "PREPARE"))
    step(spout, clock)
    spout.fail((0, "COMMIT"))
    step(spout, clock)
    assert len(out.emitted) == 4 and last(out) == (0, "COMMIT")  # a failed commit is committed again


def test_spout_recovery_rollback(fresh_store):
    spout, out = open_spout((100, "PREPARING"))
    spout.next_tuple()
    assert len(out.emitted) == 1 and last(out) == (100, "ROLLBACK")


def test_spout_recovery_rollback_ack(fresh_store):
    clock = fresh_store
    spout, out = open_spout((100, "PREPARING"))
    spout.next_tuple()
    spout.ack((100, "ROLLBACK"))
    step(spout, clock)
    spout.ack((99, "INITSTATE"))
    step(spout, clock)
    assert len(out.emitted) == 3 and last(out) == (100, "PREPARE")
    saved = InMemoryStateProvider().new_state(f"{TOPOLOGY}/{CHECKPOINT_SPOUT}", CONF, None)
    assert saved.get(RECORD_KEY) == [100, "PREPARING"]  # saved before PREPARE went out


def test_spout_recovery_commit(fresh_store):
    spout, out = open_spout((100, "COMMITTING"))
    spout.next_tuple()
    assert len(out.emitted) == 1 and last(out) == (100, "COMMIT")


# ---- StatefulBoltExecutorTest -----------------------------------------------------------


class FakeWorker(TaskHost):
    """Records what the tasks send (a ``TaskHost`` so compiled tasks take it)."""

    def __init__(self):
        self.plan = SimpleNamespace(acker_tasks=[ACKER])
        self.tasks: dict = {}  # no task of its own: verdicts go through deliver
        self.sent: list[tuple] = []
        self.errors: list[BaseException] = []
        self.tap = None
        self.now = 0.0
        self.clock = lambda: self.now

    def deliver(self, target, src, stream, values, ids):
        self.sent.append((target, stream, values, ids))

    def deliver1(self, target, src, stream, values, root, edge):
        self.deliver(target, src, stream, values, {root: edge})

    def buffer_ack(self, acker, src, root, value):
        self.deliver(acker, src, ACK_ACK, [root, value], None)

    def report_error(self, task, error):
        self.errors.append(error)

    def outcomes(self, root: int) -> list[str]:
        """What the acker heard about ``root``: ACK_ACK / ACK_FAIL, in order."""
        return [s for target, s, v, _ in self.sent if target == ACKER and v and v[0] == root]

    def ack_values(self, root: int) -> list[int]:
        """The values of the ACK_ACK messages about ``root`` (input edge XOR anchored edges)."""
        return [v[1] for target, s, v, _ in self.sent if target == ACKER and s == ACK_ACK and v[0] == root]

    def checkpoints_to(self, targets) -> list[tuple]:
        """The checkpoint tuples sent to ``targets``: (target, values, ids)."""
        return [(t, v, ids) for t, s, v, ids in self.sent if t in targets and s == CHECKPOINT_STREAM]


class MockStatefulBolt(Bolt):
    """Storm's mocked IStatefulBolt: records every call."""

    def __init__(self):
        self.calls: list = []

    def prepare(self, conf, context, collector):
        self.collector = collector

    def init_state(self, state):
        self.calls.append("init_state")
        self.state = state

    def execute(self, tup):
        self.calls.append(("execute", tup[0]))
        self.state.put(tup[0], tup[0])
        self.collector.ack(tup)

    def pre_prepare(self, txid):
        self.calls.append(("pre_prepare", txid))

    def pre_commit(self, txid):
        self.calls.append(("pre_commit", txid))

    def pre_rollback(self):
        self.calls.append("pre_rollback")


def context(component="test", task=1):
    return SimpleNamespace(topology_name=TOPOLOGY, component_id=component, task_id=task,
                           get_this_component_tasks=lambda: [task], get_this_task_index=lambda: 0)


ROUTES = {CHECKPOINT_STREAM: StreamRoute(CHECKPOINT_STREAM, 2, [], None)}  # a leaf: no subscribers


def stateful_task():
    worker = FakeWorker()
    bolt = MockStatefulBolt()
    task = StatefulBoltTask(worker, 1, "test", None, CONF, bolt, dict(ROUTES))
    task.context = context()  # what the state needs of it: topology, component, task index
    task.barrier = Barrier(1)
    task.start()
    return worker, bolt, task


def data(value, root):
    return Tuple([value], Fields("word"), "words", "default", 7, {root: 3})


def checkpoint(txid, action, root, source=0):
    return Tuple([txid, action], CP_FIELDS, CHECKPOINT_SPOUT, CHECKPOINT_STREAM, source, {root: 5})


def test_bolt_handle_tuple_before_init():
    _, bolt, task = stateful_task()
    task.handle(data("a", 11))
    assert bolt.calls == []


def test_bolt_handle_tuple():
    worker, bolt, task = stateful_task()
    task.handle(data("a", 11))
    task.handle(checkpoint(0, "INITSTATE", 90))
    assert bolt.calls == ["init_state", ("execute", "a")]
    assert worker.outcomes(90) == [ACK_ACK]


def test_bolt_rollback():
    worker, bolt, task = stateful_task()
    task.handle(data("a", 11))
    task.handle(checkpoint(0, "ROLLBACK", 90))
    assert task.state.committed_txid() is None and task.state.prepared_txid() is None
    assert worker.outcomes(90) == [ACK_ACK] and bolt.calls == []  # no hook before init_state


def test_bolt_commit():
    worker, bolt, task = stateful_task()
    task.handle(checkpoint(0, "INITSTATE", 90))
    task.handle(data("a", 11))
    task.handle(checkpoint(0, "COMMIT", 91))
    assert ("pre_commit", 0) in bolt.calls and task.state.committed_txid() == 0
    assert worker.outcomes(91) == [ACK_ACK]


def test_bolt_prepare_and_rollback_before_initstate():
    worker, _, task = stateful_task()
    task.handle(data("a", 11))
    task.handle(checkpoint(100, "PREPARE", 90))
    assert worker.outcomes(90) == [ACK_FAIL]  # restarted: fail fast so the spout recovers
    task.handle(checkpoint(100, "ROLLBACK", 91))
    assert worker.outcomes(91) == [ACK_ACK] and task.state.prepared_txid() is None


def test_bolt_commit_before_initstate():
    worker, _, task = stateful_task()
    task.handle(checkpoint(100, "COMMIT", 90))
    assert worker.outcomes(90) == [ACK_ACK]  # a restarted task commits what it had prepared
    task.handle(checkpoint(100, "ROLLBACK", 91))
    assert worker.outcomes(91) == [ACK_ACK]


def test_bolt_prepare_and_commit():
    worker, bolt, task = stateful_task()
    task.handle(checkpoint(0, "INITSTATE", 90))
    task.handle(data("a", 11))
    task.handle(checkpoint(100, "PREPARE", 91))
    task.handle(data("b", 12))
    task.handle(checkpoint(100, "COMMIT", 92))
    assert task.state.committed_txid() == 100
    assert [c for c in bolt.calls if c[0] == "execute"] == [("execute", "a"), ("execute", "b")]
    assert worker.outcomes(11) == [ACK_ACK]  # prepared in 100: acked at its commit
    assert worker.outcomes(12) == []  # after the prepare: held for the next transaction


def test_a_restarted_task_commits_what_its_previous_process_prepared():
    worker, _, task = stateful_task()
    task.handle(checkpoint(0, "INITSTATE", 90))
    task.handle(data("a", 11))
    task.handle(checkpoint(5, "PREPARE", 91))
    _, _, again = stateful_task()  # the process died between PREPARE and COMMIT
    again.handle(checkpoint(5, "COMMIT", 92))
    assert again.state.committed_txid() == 5 and again.state.get("a") == "a"


def test_a_commit_whose_staged_transaction_another_writer_rolled_back_fails_naming_it():
    worker, _, task = stateful_task()
    task.handle(checkpoint(0, "INITSTATE", 90))
    task.handle(data("a", 11))
    task.handle(checkpoint(5, "PREPARE", 91))
    _, _, other = stateful_task()  # the same task still running elsewhere (a zombie)
    other.handle(checkpoint(5, "ROLLBACK", 92))
    task.handle(checkpoint(5, "COMMIT", 93))
    assert worker.outcomes(93) == [ACK_FAIL]  # the spout retries the COMMIT; it refuses again
    assert worker.outcomes(11) == []  # not acked as committed: it was not
    assert "cannot commit txid 5: this task prepared it" in str(worker.errors[-1])
    assert task.state.committed_txid() is None


# ---- CheckpointTupleForwarder -----------------------------------------------------------


class Echo(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector
        self.seen: list = []

    def execute(self, tup):
        self.seen.append(tup[0])
        self.collector.ack(tup)


SUBSCRIBERS = [30, 31]  # the tasks of the bolt downstream of the forwarder (all grouping)


def forwarder(inputs=2):
    worker = FakeWorker()
    routes = {CHECKPOINT_STREAM: StreamRoute(CHECKPOINT_STREAM, 2, [ConstantRouter(SUBSCRIBERS)], None)}
    task = BoltTask(worker, 1, "fwd", None, CONF, Echo(), routes)
    task.barrier = Barrier(inputs)
    task.start()
    return worker, task


def test_forwarder_forwards_a_checkpoint_once_every_input_task_sent_it():
    worker, task = forwarder()
    task.handle(checkpoint(3, "PREPARE", 90, source=20))
    assert worker.outcomes(90) == []  # held: task 21 has not delivered yet
    assert worker.checkpoints_to(SUBSCRIBERS) == []  # and not forwarded
    task.handle(data("x", 11))  # other tuples are not held back meanwhile (as Storm)
    assert task.bolt.seen == ["x"]
    task.handle(checkpoint(3, "PREPARE", 90, source=21))
    forwarded = worker.checkpoints_to(SUBSCRIBERS)
    # once, to every subscriber, in the same transaction and action
    assert [(t, v) for t, v, _ in forwarded] == [(30, [3, "PREPARE"]), (31, [3, "PREPARE"])]
    assert worker.outcomes(90) == [ACK_ACK, ACK_ACK]
    # anchored to both inputs: the copies' edges are in the tree, so it completes only when
    # the subscribers ack them (each input's ack value is its edge XOR the edges it anchors)
    assert [ids and set(ids) for _, _, ids in forwarded] == [{90}, {90}]
    xor = 0
    for value in worker.ack_values(90) + [5, 5]:  # both inputs came with edge 5 of root 90
        xor ^= value
    for _, _, ids in forwarded:
        xor ^= ids[90]
    assert xor == 0
    task.handle(data("y", 12))
    assert len(worker.checkpoints_to(SUBSCRIBERS)) == 2  # nothing forwarded again


# ---- retried checkpoints at a barrier -----------------------------------------------------


def copy(root: int):
    return SimpleNamespace(id=SimpleNamespace(roots=lambda: [root]), root=root)


def test_a_stale_copy_of_an_earlier_attempt_never_completes_a_retry():
    # task 11's copy of attempt 1 is left (task 10's copy died with a restarted worker)
    b = Barrier(expected=2)
    stale = copy(1)
    assert b.add(4, "COMMIT", 11, stale) == ([], [])
    first, second = copy(2), copy(2)
    done, superseded = b.add(4, "COMMIT", 10, first)  # the retry: a new tree
    assert done == [] and superseded == [stale]
    done, superseded = b.add(4, "COMMIT", 11, second)
    assert done == [first, second] and superseded == []


def test_a_late_copy_of_an_attempt_that_is_over_is_failed_at_once():
    b = Barrier(expected=2)
    b.add(4, "COMMIT", 11, copy(1))
    b.add(4, "COMMIT", 10, copy(2))
    late = copy(1)
    assert b.add(4, "COMMIT", 10, late) == ([], [late])
    assert b.key == (4, "COMMIT", (2,))  # the retry still collects


def test_an_older_transaction_is_ignored_as_storm_does():
    b = Barrier(expected=1)
    assert b.add(7, "COMMIT", 10, copy(1))[0]
    old = copy(2)
    assert b.add(6, "PREPARE", 10, old) == ([], [old])
    assert b.add(7, "ROLLBACK", 10, copy(3))[0]  # a rollback of 7 takes the bolt back to 6
    assert b.add(6, "INITSTATE", 10, copy(4))[0]


def test_a_held_spout_whose_record_could_not_be_saved_stays_held(fresh_store):
    # a save failing at an ack makes the spout start over from its durable record with a new
    # coordinator; a live rescale's hold must survive that, or the spout begins a transaction
    # while the move arms its barriers
    from squall.runtime import live_keyed
    clock = fresh_store
    spout, out = open_spout()
    errors = []
    out.report_error = errors.append
    worker = SimpleNamespace(index=0, tasks={1: SimpleNamespace(component=CHECKPOINT_SPOUT, spout=spout)})
    t0 = runtime_clock.time_ms()
    spout.next_tuple()
    spout.ack((t0, "INITSTATE"))
    spout.next_tuple()
    assert last(out) == (t0 + 1, "PREPARE")
    live_keyed.hold_checkpoints(worker)
    commit = spout._state.commit
    spout._state.commit = lambda txid: (_ for _ in ()).throw(OSError("store down"))
    spout.ack((t0 + 1, "PREPARE"))  # COMMITTING not saved: back to PREPARING, recover
    spout._state.commit = commit
    assert errors and "store down" in str(errors[0])
    for _ in range(10):
        step(spout, clock)
        stream, (txid, action), msg_id = out.emitted[-1]
        spout.ack(msg_id)
    assert [a for _, (_, a), _ in out.emitted[2:]] == ["ROLLBACK", "INITSTATE"]
    assert live_keyed.checkpoints_idle(worker) == (True, t0)
    live_keyed.release_checkpoints(worker)
    step(spout, clock)
    assert last(out) == (t0 + 1, "PREPARE")
