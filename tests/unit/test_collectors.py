"""Output collectors (squall/runtime/collectors.py) driven with a fake host, acked by a real ledger."""

from __future__ import annotations

import random
import sys
import sysconfig

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from squall.api.errors import FailedException
from squall.api.fields import Fields
from squall.api.tuple import Tuple
from squall.runtime import collectors
from squall.runtime.acker import AckerLedger, Outcome
from squall.runtime.collectors import (
    BasicOutputCollector,
    OutputCollector,
    SpoutOutputCollector,
    StreamRoute,
)
from squall.runtime.host import TaskHost
from squall.runtime.metrics import TaskMetrics
from squall.runtime.plan import ACK_ACK, ACK_FAIL, ACK_INIT, ACK_RESET
from squall.runtime.rotating import PendingMap
from squall.runtime.routing import ConstantRouter, DirectOnly
from squall.runtime.tasks import BoltTask, SpoutTask

ACKERS = [100, 101]
FIELDS = Fields("word")


class FakeWorker(TaskHost):
    """Records what tasks deliver; acker messages go to a real ledger on ``pump``.

    A ``TaskHost`` subclass (the compiled collectors accept no other type), whose tap and
    clock are set as attributes, since the compiled code reads the host's fields directly.
    """

    def __init__(self):
        self.sent: list[tuple] = []
        self.tapped: list[tuple] = []
        self.errors: list[BaseException] = []
        self.ledger = AckerLedger()
        self.outcomes: list[Outcome] = []
        self.tap = self._tap
        self.clock = lambda: 0.0

    def _tap(self, component, stream, values, task):
        self.tapped.append((component, stream, values))

    def deliver(self, target, src, stream, values, ids):
        self.sent.append((target, src.component, stream, values, ids))

    def deliver1(self, target, src, stream, values, root, edge):  # one tree: no map on the path
        self.deliver(target, src, stream, values, {root: edge})

    def report_error(self, task, error):
        self.errors.append(error)

    def pump(self) -> list[Tuple]:
        """Apply acker messages to the ledger; return the data tuples, as their receivers see them."""
        data, self.sent = self.sent, []
        apply = {ACK_INIT: self.ledger.init, ACK_ACK: self.ledger.ack,
                 ACK_FAIL: lambda root, *detail: self.ledger.fail(root, list(detail)),
                 ACK_RESET: self.ledger.reset_timeout}
        tuples = []
        for target, component, stream, values, ids in data:
            if target in ACKERS:
                self.outcomes += filter(None, [apply[stream](*values)])
            else:
                tuples.append(Tuple(values, FIELDS, component, stream, target, ids))
        return tuples


class _FakeTask:
    def __init__(self, worker, component, task_id, acking=True):
        self.host, self.component, self.task_id = worker, component, task_id
        self.metrics = TaskMetrics(component, task_id)
        self.hooks = None
        self.acking = acking
        self.owner = 0  # driven by hand from the test's thread
        self.scope = None  # in no spout-headed chain
        self._ack_held = False  # no ack held (BoltTask.process's loop holds them)

    def acker_for(self, root):
        return ACKERS[root % len(ACKERS)]

    def new_root(self):  # no acker in this worker: any random id
        return random.getrandbits(64)

    def send_ack(self, root, value):  # as a task whose acker lives in another worker
        self.host.deliver(self.acker_for(root), self, ACK_ACK, [root, value], None)

    def send_init(self, root, value):  # as a spout task whose acker lives in another worker
        self.host.deliver(self.acker_for(root), self, ACK_INIT, [root, value, self.task_id], None)


class FakeSpoutTask(_FakeTask, SpoutTask):
    pass


class FakeBoltTask(_FakeTask, BoltTask):
    pass


def routes(*targets, direct=(10, 11)):
    return {
        "default": StreamRoute("default", 1, [ConstantRouter(list(targets))], None),
        "picked": StreamRoute("picked", 1, [], DirectOnly(list(direct))),
    }


def spout(worker, *targets, acking=True):
    return SpoutOutputCollector(FakeSpoutTask(worker, "words", 1, acking), routes(*targets),
                                PendingMap(3))


def tracked(c):
    """The roots a spout collector put in its pending map."""
    return sorted(c._pending)


def bolt(worker, task_id, *targets, acking=True):
    return OutputCollector(FakeBoltTask(worker, f"bolt{task_id}", task_id, acking), routes(*targets))


# ---- emit checks (E4) ------------------------------------------------------------------


@pytest.mark.parametrize("make", [lambda w: spout(w, 10), lambda w: bolt(w, 10, 20)])
def test_emit_errors_name_component_and_stream(make):
    c = make(FakeWorker())
    with pytest.raises(ValueError, match=r"emitted 2 values on stream 'default'.*1 fields"):
        c.emit(["a", "b"])
    with pytest.raises(ValueError, match=r"stream 'nope', which it does not declare"):
        c.emit(["a"], stream="nope")
    with pytest.raises(TypeError, match=r"emitted str on stream 'default'"):
        c.emit("a")
    with pytest.raises(ValueError, match=r"used emit on direct stream 'picked'"):
        c.emit(["a"], stream="picked")
    with pytest.raises(ValueError, match=r"emit_direct on stream 'default'.*not direct"):
        c.emit_direct(10, ["a"])
    with pytest.raises(ValueError, match=r"emit_direct on stream 'nope'.*does not declare"):
        c.emit_direct(10, ["a"], stream="nope")
    with pytest.raises(ValueError, match=r"emit_direct to task 99.*subscribers: \[10, 11\]"):
        c.emit_direct(99, ["a"], stream="picked")
    with pytest.raises(ValueError, match=rf"component '{c._component}' emitted 2 values on stream 'picked'"):
        c.emit_direct(10, ["a", "b"], stream="picked")


def test_emit_direct_refuses_a_string_like_emit():
    c = SpoutOutputCollector(FakeSpoutTask(FakeWorker(), "words", 1), {
        "picked": StreamRoute("picked", 2, [], DirectOnly([10]))}, PendingMap(3))
    with pytest.raises(TypeError):
        c.emit_direct(10, "ab", stream="picked")


def test_emit_direct_goes_to_that_task_only():
    w = FakeWorker()
    spout(w, 10).emit_direct(11, ["a"], stream="picked")
    assert [(t, s, v) for t, _, s, v, _ in w.sent] == [(11, "picked", ["a"])]


def test_emit_copies_values_and_targets_and_counts():
    w = FakeWorker()
    c = spout(w, 10, 11)
    values = ["a"]
    targets = c.emit(values)
    values.append("mutated")
    targets.append(99)
    assert c.emit(["b"]) == [10, 11]
    assert [v for *_, v, _ in w.sent] == [["a"], ["a"], ["b"], ["b"]]
    assert (c._metrics.emitted, c._metrics.transferred) == (2, 4)
    assert w.tapped == [("words", "default", ["a"]), ("words", "default", ["b"])]
    c.report_error(err := RuntimeError("x"))
    assert w.errors == [err]


EMITTERS = ["spout", "bolt", "bolt, keywords", "basic bolt"]


def _emit(w, how, targets, make):
    """Emit ``make()`` as user code does, in one of the three collectors' ways.

    The list is built in the call itself (no variable of this frame holds it), as in
    ``collector.emit([word])``.
    """
    root = Tuple(["in"], FIELDS, "src", "default", 5, {7: 1})
    if how == "spout":
        spout(w, *targets).emit(make())
    elif how == "bolt":
        bolt(w, 3, *targets).emit(make(), root)
    elif how == "bolt, keywords":
        bolt(w, 3, *targets).emit(values=make(), anchors=root)
    else:
        basic = BasicOutputCollector(bolt(w, 3, *targets))
        basic.input = root
        basic.emit(make())


@pytest.mark.parametrize("how", EMITTERS)
@pytest.mark.parametrize("targets", [(10,), (10, 11)])
def test_a_list_the_caller_keeps_is_copied_so_changing_it_after_emit_changes_no_tuple(how, targets):
    w = FakeWorker()
    kept = ["a"]
    _emit(w, how, targets, lambda: kept)
    kept[0] = "changed"
    kept.append("more")
    sent = [values for *_, values, _ in w.sent if values != ["in"]]
    assert sent == [["a"]] * len(targets)
    assert all(values is not kept for values in sent)


@pytest.mark.parametrize("how", EMITTERS)
def test_a_list_built_for_the_emit_alone_is_sent_as_it_is_when_compiled(how):
    # nobody else holds it, so nobody can change it: its copy would be an allocation and a
    # free per tuple for nothing (compiled on CPython before 3.14, see collectors.REUSE_LISTS)
    w = FakeWorker()
    made: list[int] = []

    def build():
        values = ["a"]
        made.append(id(values))
        return values

    _emit(w, how, (10,), build)
    sent = w.sent[-1][3]
    assert sent == ["a"]
    assert (id(sent) == made[0]) is collectors.REUSE_LISTS


def test_a_list_only_a_star_calls_argument_tuple_refers_to_is_sent_as_it_is_too():
    # the edge of the contract the collectors' docstrings state: the tuple of ``emit(*args)``
    # is the call's own, so its list counts as built in the call; one the caller also keeps
    # is copied
    w = FakeWorker()
    c = bolt(w, 3, 10)
    root = Tuple(["in"], FIELDS, "src", "default", 5, {7: 1})
    args = (["a"], root)
    c.emit(*args)
    assert (w.sent[-1][3] is args[0]) is collectors.REUSE_LISTS
    kept = ["b"]
    c.emit(*(kept, root))
    assert w.sent[-1][3] == ["b"] and w.sent[-1][3] is not kept


def test_lists_are_reused_exactly_when_the_hot_path_is_compiled_on_cpython_before_3_14_with_a_gil():
    compiled = collectors.__file__.endswith((".so", ".pyd"))
    gil = not sysconfig.get_config_var("Py_GIL_DISABLED")
    assert collectors.REUSE_LISTS is (compiled and sys.version_info < (3, 14) and gil)


@pytest.mark.parametrize("tapped", [False, True])
def test_an_emit_nobody_subscribes_to_is_counted_goes_nowhere_and_leaves_the_tree_as_it_was(tapped):
    w = FakeWorker()
    if not tapped:
        w.tap = None
    sink = OutputCollector(FakeBoltTask(w, "sink", 3, True), {"default": StreamRoute("default", 1, [], None)})
    root = Tuple(["in"], FIELDS, "src", "default", 5, {7: 1})
    first = sink.emit(["x"], root)
    first.append(99)  # the caller's own list
    values = ["y"]
    assert sink.emit(values, root) == []
    values[0] = "changed"
    m, route = sink._metrics, sink._routes["default"]
    assert (m.emitted, m.transferred, route.emitted, route.transferred) == (2, 0, 2, 0)
    assert w.sent == []
    assert w.tapped == ([("sink", "default", ["x"]), ("sink", "default", ["y"])] if tapped else [])
    sink.ack(root)
    assert w.sent == [(ACKERS[7 % 2], "sink", ACK_ACK, [7, 1], None)]  # the input's edge alone


# ---- spout tracking (A1, A11) ----------------------------------------------------------


def test_spout_emit_without_msg_id_is_untracked():
    w = FakeWorker()
    c = spout(w, 10, 11)
    c.emit(["a"])
    assert all(ids is None for *_, ids in w.sent) and len(w.sent) == 2
    assert tracked(c) == [] and c.acks_soon == []


def test_spout_emit_with_msg_id_inits_the_acker_with_the_xor_of_its_edges():
    w = FakeWorker()
    c = spout(w, 10, 11)
    c.emit(["a"], msg_id="m1")
    *data, init = w.sent
    (root,) = tracked(c)
    edges = [ids[root] for *_, ids in data]
    assert len(set(edges)) == 2
    assert init == (c._task.acker_for(root), "words", ACK_INIT, [root, edges[0] ^ edges[1], 1], None)
    assert c._pending.take(root) and c._pending.msg_id == "m1"


@pytest.mark.parametrize("acking, targets", [(False, (10,)), (True, ())])
def test_spout_msg_id_acked_soon_when_nothing_tracks_it(acking, targets):
    w = FakeWorker()
    c = spout(w, *targets, acking=acking)
    c.emit(["a"], msg_id="m1")
    assert c.acks_soon == ["m1"] and tracked(c) == []
    assert all(ids is None and s != ACK_INIT for *_, s, _, ids in w.sent)


# ---- bolt anchoring and acking (A1-A5) -------------------------------------------------


def relay(w, tup, *targets, anchors=None):
    """Bolt task ``tup.task`` emits one tuple anchored to ``anchors`` (default ``tup``), acks ``tup``."""
    c = bolt(w, tup.task, *targets)
    if targets:
        c.emit(["x"], anchors=tup if anchors is None else anchors)
    c.ack(tup)
    return w.pump()


def test_linear_tree_acks_only_after_the_last_bolt():
    w = FakeWorker()
    spout(w, 10).emit(["a"], msg_id="m")
    (t1,) = w.pump()
    (t2,) = relay(w, t1, 20)
    assert w.outcomes == []
    relay(w, t2)
    assert [o.kind for o in w.outcomes] == ["ack"]


def test_fail_downstream_fails_the_root():
    w = FakeWorker()
    spout(w, 10).emit(["a"], msg_id="m")
    (t2,) = relay(w, w.pump()[0], 20)
    bolt(w, 20).fail(t2)
    w.pump()
    assert [o.kind for o in w.outcomes] == ["fail"]


def test_a4_anchoring_the_same_input_twice_still_acks_once():
    w = FakeWorker()
    spout(w, 10).emit(["a"], msg_id="m")
    (t1,) = w.pump()
    (t2,) = relay(w, t1, 20, anchors=[t1, t1])
    bolt(w, 10).ack(t1)  # a second ack of the same tuple object is a no-op
    w.pump()
    assert w.outcomes == []
    relay(w, t2)
    assert [o.kind for o in w.outcomes] == ["ack"]


def test_a5_unanchored_emit_is_not_tracked():
    w = FakeWorker()
    spout(w, 10).emit(["a"], msg_id="m")
    c = bolt(w, 10, 20)
    (t1,) = w.pump()
    c.emit(["b"])
    c.ack(t1)
    (t2,) = w.pump()
    assert t2._ids is None
    bolt(w, 20).fail(t2)
    assert w.sent == []  # nothing for the acker
    assert [o.kind for o in w.outcomes] == ["ack"]


def test_a3_multi_anchored_output_failing_fails_every_root():
    w = FakeWorker()
    s = spout(w, 10)
    s.emit(["a"], msg_id="m1")
    s.emit(["b"], msg_id="m2")
    ta, tb = w.pump()
    (child,) = relay(w, ta, 20, anchors=[ta, tb])
    relay(w, tb)
    assert sorted(child.id.roots()) == tracked(s)
    bolt(w, 20).fail(child)
    w.pump()
    assert sorted(o.root for o in w.outcomes if o.kind == "fail") == tracked(s)


def test_join_of_a_fan_out_is_not_acked_before_the_joined_tuple():
    w = FakeWorker()
    spout(w, 10, 11).emit(["a"], msg_id="m")
    t10, t11 = w.pump()
    (x,) = relay(w, t10, 30)
    (y,) = relay(w, t11, 30)
    (joined,) = relay(w, x, 40, anchors=[x, y])
    relay(w, y)
    assert w.outcomes == []  # the sink has not acked `joined` yet
    bolt(w, 40).fail(joined)
    w.pump()
    assert [o.kind for o in w.outcomes] == ["fail"]


def test_ack_fail_reset_after_done_are_no_ops_and_metrics_count_once():
    w = FakeWorker()
    spout(w, 10).emit(["a"], msg_id="m")
    (t1,) = w.pump()
    b1 = bolt(w, 10)
    b1.reset_timeout(t1)
    assert [s for _, _, s, *_ in w.sent] == [ACK_RESET]
    b1.ack(t1)
    b1.ack(t1)
    b1.fail(t1)
    b1.reset_timeout(t1)
    assert [s for _, _, s, *_ in w.sent] == [ACK_RESET, ACK_ACK]
    assert (b1._metrics.acked, b1._metrics.failed) == (1, 0)


def test_tick_and_untracked_tuples_ack_without_acker_traffic():
    w = FakeWorker()
    b1 = bolt(w, 10)
    tick = Tuple([], Fields(), "__system", "__tick", 99, None)
    b1.ack(tick)
    b1.ack(Tuple(["a"], FIELDS, "words", "default", 1, None))
    assert w.sent == []
    assert b1._metrics.acked == 1  # the tick is not counted


def test_bolt_with_acking_off_sends_nothing_to_ackers():
    w = FakeWorker()
    b1 = bolt(w, 10, 20, acking=False)
    t = Tuple(["a"], FIELDS, "words", "default", 1, {5: 7})
    b1.emit(["b"], anchors=t)
    b1.ack(t)
    assert [(target, ids) for target, *_, ids in w.sent] == [(20, None)]


def test_basic_collector_anchors_to_the_input_and_fail_raises():
    w = FakeWorker()
    spout(w, 10).emit(["a"], msg_id="m")
    (t1,) = w.pump()
    basic = BasicOutputCollector(bolt(w, 10, 20))
    basic.input = t1
    assert basic.emit(["b"]) == [20]
    basic.emit_direct(11, ["c"], stream="picked")
    assert all(ids and set(ids) == set(t1._ids) for *_, ids in w.sent)
    with pytest.raises(FailedException):
        basic.fail()


# ---- property: trees built through the real collectors (A12) ---------------------------


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 30))
def test_random_trees_through_collectors_ack_exactly_at_the_last_ack(seed, size):
    rng = random.Random(seed)
    w = FakeWorker()
    spout(w, *range(10, 10 + rng.randint(1, 3))).emit(["a"], msg_id="m")
    queue, budget = w.pump(), size
    while queue:
        assert w.outcomes == [], "acked before every tuple was acked"
        tup = queue.pop(rng.randrange(len(queue)))
        fanout = min(budget, rng.randint(0, 3))
        budget -= fanout
        queue += relay(w, tup, *range(20, 20 + fanout))
    assert [o.kind for o in w.outcomes] == ["ack"]
