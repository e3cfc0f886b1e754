"""Task hooks at the task level (squall/runtime/hooks.py, the call points in tasks and collectors).

The tasks run on the fake worker of test_tasks, whose clock the test moves, so every
latency is exact.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from squall.api.context import TopologyContext
from squall.api.errors import TopologyStartError
from squall.api.fields import Fields
from squall.api.hooks import BaseTaskHook, BoltAckInfo, BoltExecuteInfo, BoltFailInfo, EmitInfo
from squall.api.tuple import SYSTEM_COMPONENT, TICK_STREAM, Tuple
from squall.runtime.collectors import StreamRoute  # first: compiled, tasks cannot be imported first
from squall.runtime.hooks import TaskHooks, load_hook_class
from squall.runtime.plan import ACK_ACK, ACK_FAIL, ACK_INIT, ACK_RESET
from squall.runtime.routing import ConstantRouter
from squall.runtime.tasks import BoltTask, SpoutTask
from tests.unit.test_tasks import ACKER, EchoBasic, EchoBolt, FakeWorker, ListSpout, verdict

ROUTES = {"default": StreamRoute("default", 1, [ConstantRouter([10])], None)}


class Recorder:
    """Has every hook method; records the info objects it gets."""

    def __init__(self):
        self.events = []
        self.prepared = None

    def prepare(self, conf, context):
        self.prepared = (conf, context.task_id)

    def cleanup(self):
        self.events.append(("cleanup", None))

    def __getattr__(self, name):
        if name in ("emit", "spout_ack", "spout_fail", "bolt_execute", "bolt_ack", "bolt_fail"):
            return lambda info: self.events.append((name, info))
        raise AttributeError(name)


def context(component, task_id):
    plan = SimpleNamespace(task_component={task_id: component})
    return TopologyContext("topo", plan, [task_id], task_id)


def hooked_spout(items, conf=None):
    worker = FakeWorker()
    task = SpoutTask(worker, 1, "words", context("words", 1), conf or {}, ListSpout(items), ROUTES)
    rec = Recorder()
    task.context.add_task_hook(rec)
    task.start()
    task.activate()
    return worker, task, rec


def test_add_task_hook_prepares_it_at_once_with_the_conf_and_context():
    _, task, rec = hooked_spout([], conf={"k": 1})
    assert rec.prepared == ({"k": 1}, 1)
    assert task.context.get_hooks() == [rec]


def test_spout_hooks_see_the_emit_the_ack_init_and_the_ack_with_its_latency():
    worker, task, rec = hooked_spout(["m1"])
    worker.now = 10.0
    task.next_tuple()
    (root,) = list(task.pending)
    emit, init = [info for name, info in rec.events]
    assert emit == EmitInfo(["m1"], "default", 1, [10])
    assert (init.stream, init.task_id, init.out_tasks, init.values[0], init.values[2]) == (
        ACK_INIT, 1, [ACKER], root, 1)
    worker.now = 10.25
    task.handle(verdict(ACK_ACK, root))
    name, info = rec.events[-1]
    assert name == "spout_ack"
    assert (info.message_id, info.spout_task_id, info.complete_latency_ms) == ("m1", 1, 250.0)


def test_spout_fail_hook_on_a_fail_verdict_and_on_a_timeout():
    worker, task, rec = hooked_spout(["a", "b"])
    task.next_tuple()
    worker.now = 2.0
    task.handle(verdict(ACK_FAIL, list(task.pending)[0]))
    task.next_tuple()
    worker.now = 5.0
    for _ in range(3):
        task.expire()
    fails = [(i.message_id, i.spout_task_id, i.fail_latency_ms) for n, i in rec.events if n == "spout_fail"]
    assert fails == [("a", 1, 2000.0), ("b", 1, 3000.0)]


def test_max_retries_give_up_is_a_fail_for_the_hooks():
    _, task, rec = hooked_spout(["p", "p"], conf={"squall.spout.max.retries": 0})
    task.next_tuple()
    task.handle(verdict(ACK_FAIL, list(task.pending)[0]))
    assert task.spout.acked == ["p"]
    assert [n for n, _ in rec.events if n.startswith("spout_")] == ["spout_fail"]


def test_without_ackers_the_spout_ack_hook_follows_the_immediate_ack():
    worker = FakeWorker(ackers=())
    task = SpoutTask(worker, 1, "words", context("words", 1), {}, ListSpout(["m"]), ROUTES)
    rec = Recorder()
    task.context.add_task_hook(rec)
    task.start()
    task.activate()
    task.next_tuple()
    assert [n for n, _ in rec.events] == ["emit", "spout_ack"]
    assert rec.events[1][1].complete_latency_ms == 0.0


def hooked_bolt(bolt=None):
    worker = FakeWorker()
    task = BoltTask(worker, 5, "echo", context("echo", 5), {}, bolt or EchoBolt(), ROUTES)
    rec = Recorder()
    task.context.add_task_hook(rec)
    task.start()
    return worker, task, rec


def tracked(value, root=77, edge=5):
    return Tuple([value], Fields("w"), "words", "default", 1, {root: edge})


class TimedBolt(EchoBolt):
    """Takes 30 ms (of the fake worker's clock) per execute; fails "x"."""

    def execute(self, tup):
        self.worker.now += 0.03
        if tup[0] == "x":
            self.collector.fail(tup)
        else:
            self.collector.ack(tup)


def test_bolt_hooks_see_execute_ack_and_the_ack_message_with_latencies():
    bolt = TimedBolt()
    worker, task, rec = hooked_bolt(bolt)
    bolt.worker = worker
    worker.now = 1.0
    tup = tracked("a")
    task.handle(tup)
    names = [n for n, _ in rec.events]
    assert names == ["emit", "bolt_ack", "bolt_execute"]  # acked inside execute, as in Storm
    ack_msg, ack, execute = (i for _, i in rec.events)
    assert ack_msg == EmitInfo([77, 5], ACK_ACK, 5, [ACKER])
    assert ack == BoltAckInfo(tup, 5, pytest.approx(30.0))
    assert execute == BoltExecuteInfo(tup, 5, pytest.approx(30.0))


def test_bolt_fail_hook_and_the_fail_message():
    bolt = TimedBolt()
    worker, task, rec = hooked_bolt(bolt)
    bolt.worker = worker
    tup = tracked("x")
    task.handle(tup)
    assert [(n, getattr(i, "stream", None)) for n, i in rec.events] == [
        ("emit", ACK_FAIL), ("bolt_fail", None), ("bolt_execute", None)]
    assert rec.events[1][1] == BoltFailInfo(tup, 5, pytest.approx(30.0))


def test_a_bolt_that_raises_fails_its_input_for_the_hooks_too():
    worker, task, rec = hooked_bolt()
    task.handle(tracked("boom"))
    assert [n for n, _ in rec.events] == ["emit", "bolt_fail", "bolt_execute"]
    assert "execute exploded" in str(worker.errors[0])


def test_basic_bolt_hooks_and_reset_timeout_message():
    worker, task, rec = hooked_bolt(EchoBasic())
    task.handle(tracked("ok"))
    assert [n for n, _ in rec.events] == ["emit", "bolt_ack", "bolt_execute"]
    task.collector.reset_timeout(tracked("y", root=9))
    assert rec.events[-1][1] == EmitInfo([9], ACK_RESET, 5, [ACKER])


class AckAll(EchoBolt):
    def execute(self, tup):
        self.collector.ack(tup)


def test_untracked_ack_is_no_emit_and_a_tick_ack_is_still_an_ack():
    worker, task, rec = hooked_bolt(AckAll())
    task.handle(Tuple(["u"], Fields("w"), "words", "default", 1, None))
    assert [n for n, _ in rec.events] == ["bolt_ack", "bolt_execute"]
    task.handle(Tuple([], Fields(), SYSTEM_COMPONENT, TICK_STREAM, 0, None))
    assert [n for n, _ in rec.events] == ["bolt_ack", "bolt_execute"] * 2  # as Storm's
    assert task.metrics.acked == 1  # a tick is no metric


def test_cleanup_hooks_run_before_the_components_cleanup():
    order = []

    class Bolt(EchoBolt):
        def cleanup(self):
            order.append("bolt")

    class Hook(BaseTaskHook):
        def cleanup(self):
            order.append("hook")

    _, task, _ = hooked_bolt(Bolt())
    task.context.add_task_hook(Hook())
    task.stop()
    assert order == ["hook", "bolt"]


def test_a_raising_hook_is_reported_and_the_others_still_run():
    worker, task, rec = hooked_bolt()

    class Bad(BaseTaskHook):
        def bolt_execute(self, info):
            raise ValueError("bad hook")

    task.context.add_task_hook(Bad())
    task.context.add_task_hook(rec2 := Recorder())
    task.handle(tracked("a"))
    assert [str(e) for e in worker.errors] == ["bad hook"]
    assert [n for n, _ in rec2.events] == [n for n, _ in rec.events] == ["emit", "bolt_ack", "bolt_execute"]


def test_base_task_hook_methods_left_alone_cost_nothing():
    class OnlyEmit(BaseTaskHook):
        def emit(self, info):
            pass

    hooks = TaskHooks(3, lambda error: None)
    hooks.add(OnlyEmit())
    assert [n for n, fns in hooks._fns.items() if fns] == ["emit"]


def test_a_task_without_hooks_has_none():
    worker = FakeWorker()
    task = BoltTask(worker, 5, "echo", context("echo", 5), {}, EchoBolt(), ROUTES)
    task.start()
    assert task.hooks is None


def test_hook_classes_by_path_are_checked():
    assert load_hook_class("squall.api.hooks.BaseTaskHook", "c") is BaseTaskHook
    with pytest.raises(TopologyStartError, match=r"component 'c': topology.auto.task.hooks entry 'Nope'"):
        load_hook_class("Nope", "c")
    with pytest.raises(TopologyStartError, match=r"'squall.api.hooks.HOOK_METHODS' is not a class"):
        load_hook_class("squall.api.hooks.HOOK_METHODS", "c")
