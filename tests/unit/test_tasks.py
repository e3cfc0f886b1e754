"""Task runners (squall/runtime/tasks.py) on a fake worker: callbacks, timeouts, max pending."""

from __future__ import annotations

import struct
from types import SimpleNamespace

import pytest

from squall.api.components import BasicBolt, Bolt, Spout
from squall.api.errors import FailedException, ReportedFailedException
from squall.api.fields import Fields
from squall.api.tuple import Tuple
from squall.runtime.collectors import StreamRoute
from squall.runtime.host import TaskHost
from squall.runtime.plan import ACK_ACK, ACK_ACKS, ACK_FAIL, ACK_INIT, ACK_RESET
from squall.runtime.routing import ConstantRouter
from squall.runtime.tasks import AckerTask, BoltTask, SpoutTask

ACKER = 100


class FakeWorker(TaskHost):
    """A ``TaskHost`` subclass (the compiled tasks accept no other type) recording deliveries."""

    def __init__(self, ackers=(ACKER,)):
        self.plan = SimpleNamespace(acker_tasks=list(ackers))
        self.tasks: dict = {}  # no task of its own: verdicts go through deliver
        self.sent: list[tuple] = []
        self.errors: list[BaseException] = []
        self.tap = None
        self.now = 0.0
        self.clock = lambda: self.now  # a field: the compiled tasks read it directly
        self.timing = False  # TaskHost's fields, set here as its __init__ is not called
        self.fused_secs = 0.0

    def deliver(self, target, src, stream, values, ids):
        self.sent.append((target, stream, values, ids))

    def deliver1(self, target, src, stream, values, root, edge):  # one tree: no map on the path
        self.deliver(target, src, stream, values, {root: edge})

    def buffer_ack(self, acker, src, root, value):  # the real worker sends these at round end
        self.deliver(acker, src, ACK_ACK, [root, value], None)

    def report_error(self, task, error):
        self.errors.append(error)


class ListSpout(Spout):
    def __init__(self, items=()):
        self.items = list(items)
        self.acked: list = []
        self.failed: list = []

    def next_tuple(self):
        if self.items:
            item = self.items.pop(0)
            if item == "boom":
                raise RuntimeError("boom")
            self.collector.emit([item], msg_id=item)

    def open(self, conf, context, collector):
        self.collector = collector

    def ack(self, msg_id):
        if msg_id == "bad-ack":
            raise ValueError("ack exploded")
        self.acked.append(msg_id)

    def fail(self, msg_id):
        self.failed.append(msg_id)


class EchoBolt(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        if tup[0] == "boom":
            raise RuntimeError("execute exploded")
        self.collector.ack(tup)


class EchoBasic(BasicBolt):
    def execute(self, tup, collector):
        if tup[0] == "fail":
            raise FailedException("quiet")
        if tup[0] == "reported":
            raise ReportedFailedException("loud")
        if tup[0] == "boom":
            raise RuntimeError("basic exploded")


ROUTES = {"default": StreamRoute("default", 1, [ConstantRouter([10])], None)}


def spout_task(items=(), conf=None, ackers=(ACKER,)):
    worker = FakeWorker(ackers)
    task = SpoutTask(worker, 1, "words", None, conf or {}, ListSpout(items), ROUTES)
    task.start()
    task.activate()
    return worker, task


def verdict(stream, root):
    return Tuple([root], Fields("root"), "__acker", stream, ACKER, None)


def roots(task):
    return list(task.pending)


def test_tracked_emit_is_pending_and_acked_once():
    worker, task = spout_task(["m1"])
    assert task.next_tuple() == 1
    (root,) = roots(task)
    assert worker.sent[-1][:2] == (ACKER, ACK_INIT)
    task.handle(verdict(ACK_ACK, root))
    task.handle(verdict(ACK_ACK, root))  # double ack (A15)
    task.handle(verdict(ACK_FAIL, root))  # fail after ack
    assert task.spout.acked == ["m1"] and task.spout.failed == []
    assert task.metrics.acked == 1 and len(task.pending) == 0


def test_fail_verdict_calls_fail():
    _, task = spout_task(["m1"])
    task.next_tuple()
    task.handle(verdict(ACK_FAIL, roots(task)[0]))
    assert task.spout.failed == ["m1"] and task.metrics.failed == 1


def test_max_retries_gives_a_poison_message_up_after_that_many_failures():
    # E1: the message fails twice (the spout replays it), the third failure acks it instead
    worker, task = spout_task(["poison"] * 4, conf={"squall.spout.max.retries": 2})
    for _ in range(3):
        task.next_tuple()
        task.handle(verdict(ACK_FAIL, roots(task)[0]))
    assert task.spout.failed == ["poison", "poison"]
    assert task.spout.acked == ["poison"]
    assert task.metrics.failed == 3 and task.metrics.acked == 0
    (error,) = worker.errors
    assert "message 'poison' failed 3 times (squall.spout.max.retries=2)" in str(error)
    assert task._failures == {}  # counted no longer: a later replay starts again
    task.next_tuple()
    task.handle(verdict(ACK_FAIL, roots(task)[0]))
    assert task.spout.failed == ["poison", "poison", "poison"]


def test_max_retries_counts_timeouts_and_forgets_a_message_once_acked():
    _, task = spout_task(["m", "m", "m"], conf={"squall.spout.max.retries": 1})
    task.next_tuple()
    for _ in range(3):
        task.expire()  # timed out: a failure like any other
    assert task.spout.failed == ["m"]
    task.next_tuple()
    task.handle(verdict(ACK_ACK, roots(task)[0]))
    assert task.spout.acked == ["m"] and task._failures == {}
    task.next_tuple()
    task.handle(verdict(ACK_FAIL, roots(task)[0]))  # its count started again at 0
    assert task.spout.failed == ["m", "m"]


def test_without_max_retries_the_spout_decides_forever():
    _, task = spout_task(["m"] * 20)
    for _ in range(20):
        task.next_tuple()
        task.handle(verdict(ACK_FAIL, roots(task)[0]))
    assert task.spout.failed == ["m"] * 20 and task.spout.acked == []


def test_verdict_for_unknown_root_is_ignored():
    _, task = spout_task()
    task.handle(verdict(ACK_ACK, 12345))
    task.handle(verdict(ACK_RESET, 12345))
    assert task.spout.acked == [] and task.spout.failed == []


def test_timeout_fails_after_all_buckets_rotated():
    _, task = spout_task(["m1"])
    task.next_tuple()
    (root,) = roots(task)
    assert task.expire() == 0 and task.expire() == 0
    assert task.spout.failed == []
    assert task.expire() == 1
    assert task.spout.failed == ["m1"]
    task.handle(verdict(ACK_ACK, root))  # a late ack does nothing
    assert task.spout.acked == []


def test_reset_verdict_keeps_the_root_across_twice_the_timeout():
    _, task = spout_task(["m1"])
    task.next_tuple()
    (root,) = roots(task)
    for _ in range(6):  # 6 rotations = 3 timeouts with 3 buckets
        task.expire()
        task.handle(verdict(ACK_RESET, root))
    assert task.spout.failed == []
    task.handle(verdict(ACK_ACK, root))
    assert task.spout.acked == ["m1"]


def test_max_spout_pending_blocks_next_tuple():
    _, task = spout_task(["a", "b", "c"], {"topology.max.spout.pending": 2})
    assert task.can_emit()
    task.next_tuple()
    task.next_tuple()
    assert not task.can_emit()
    task.handle(verdict(ACK_ACK, roots(task)[0]))
    assert task.can_emit()


def test_inactive_spout_cannot_emit():
    _, task = spout_task(["a"])
    task.deactivate()
    assert not task.can_emit()
    task.activate()
    assert task.can_emit()


def test_without_ackers_msg_ids_are_acked_after_next_tuple():
    worker, task = spout_task(["m1"], ackers=())
    task.next_tuple()
    assert task.spout.acked == ["m1"] and len(task.pending) == 0
    assert all(stream != ACK_INIT for _, stream, _, _ in worker.sent)


def test_user_errors_are_reported_and_the_task_carries_on():
    worker, task = spout_task(["boom", "bad-ack", "m2"], ackers=())
    task.next_tuple()
    task.next_tuple()
    task.next_tuple()
    assert [str(e) for e in worker.errors] == ["boom", "ack exploded"]
    assert task.spout.acked == ["m2"]


def test_complete_latency_is_recorded_with_the_workers_clock():
    worker, task = spout_task(["m1"])
    task.next_tuple()
    worker.now = 0.25
    task.handle(verdict(ACK_ACK, roots(task)[0]))
    assert task.metrics.complete_latency_ms == pytest.approx(250.0)


# ---- acker task ------------------------------------------------------------------------


def test_acker_task_forwards_verdicts_to_the_spout_task():
    worker = FakeWorker()
    acker = AckerTask(worker, ACKER, "__acker", None, {})
    acker.handle(Tuple([7, 0b1010, 3], Fields("root", "value", "task"), "s", ACK_INIT, 3, None))
    acker.handle(Tuple([7], Fields("root"), "b", ACK_RESET, 9, None))
    acker.handle(Tuple([7, 0b1010], Fields("root", "value"), "b", ACK_ACK, 9, None))
    acker.handle(Tuple([7], Fields("root"), "b", "weird", 9, None))
    assert [(t, s, v) for t, s, v, _ in worker.sent] == [(3, ACK_RESET, [7]), (3, ACK_ACK, [7])]
    assert acker.metrics.executed == 3


def pairs(*ints):
    """An ``__ack_acks`` payload: (root, value) pairs as little-endian 64-bit ints."""
    return struct.pack(f"<{len(ints)}Q", *ints)


def test_acker_task_applies_a_round_of_remote_acks_in_one_message():
    worker = FakeWorker()
    acker = AckerTask(worker, ACKER, "__acker", None, {})
    acker.apply(ACK_INIT, [7, 0b1100, 3])
    acker.apply(ACK_INIT, [8, 0b0011, 4])
    acker.apply(ACK_ACKS, [pairs(7, 0b0100, 8, 0b0011, 7, 0b1000)])
    assert [(t, s, v) for t, s, v, _ in worker.sent] == [(4, ACK_ACK, [8]), (3, ACK_ACK, [7])]
    acker.apply(ACK_ACKS, [pairs(7, 0b0100)])  # a redelivered batch completes nothing twice (A13)
    assert len(worker.sent) == 2
    assert acker.metrics.executed == 6


def test_acker_task_expire_rotates_its_ledger():
    acker = AckerTask(FakeWorker(), ACKER, "__acker", None, {})
    acker.ledger.init(1, 5, 3)
    assert [acker.expire() for _ in range(3)] == [0, 0, 1]


# ---- bolt tasks ------------------------------------------------------------------------


def bolt_task(bolt):
    worker = FakeWorker()
    task = BoltTask(worker, 10, "b", None, {}, bolt, {})
    task.start()
    return worker, task


def tracked(value):
    return Tuple([value], Fields("word"), "words", "default", 1, {77: 5})


def acker_streams(worker):
    return [stream for target, stream, _, _ in worker.sent if target == ACKER]


def test_bolt_execute_error_is_reported_and_the_input_failed():
    worker, task = bolt_task(EchoBolt())
    task.handle(tracked("boom"))
    task.handle(tracked("ok"))
    assert [str(e) for e in worker.errors] == ["execute exploded"]
    assert acker_streams(worker) == [ACK_FAIL, ACK_ACK]
    assert task.metrics.executed == 2


@pytest.mark.parametrize(
    "value, streams, reported",
    [("ok", [ACK_ACK], []), ("fail", [ACK_FAIL], []), ("reported", [ACK_FAIL], ["loud"]),
     ("boom", [ACK_FAIL], ["basic exploded"])],
)
@pytest.mark.parametrize("queued", [False, True], ids=["handle", "process"])
def test_basic_bolt_acks_or_fails_its_input(value, streams, reported, queued):
    worker, task = bolt_task(EchoBasic())
    if queued:  # through the queue: process's inlined loop for basic bolts
        task._sample_every = 0
        task.inbox.append(tracked(value))
        assert task.process(10) == 1
        assert task.metrics.executed == 1
    else:
        task.handle(tracked(value))
    assert acker_streams(worker) == streams
    assert [str(e) for e in worker.errors] == reported
    assert task._basic.input is None


def test_new_roots_are_steered_to_an_acker_in_the_same_worker():
    worker, task = spout_task(ackers=(100, 101, 102, 103))
    local = AckerTask(worker, 102, "__acker", None, {})
    task.bind_ackers({102: local})
    roots = {task.new_root() for _ in range(500)}
    assert len(roots) == 500 and all(0 <= r < 1 << 64 for r in roots)
    assert {task.acker_for(r) for r in roots} == {102}


def test_without_a_local_acker_roots_spread_over_all_ackers():
    _, task = spout_task(ackers=(100, 101, 102, 103))
    task.bind_ackers({})
    assert {task.acker_for(task.new_root()) for _ in range(500)} == {100, 101, 102, 103}
