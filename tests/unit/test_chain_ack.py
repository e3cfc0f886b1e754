"""Per-chain acking (``host.AckScope``): a tree that completes inside one chained call.

One worker, driven in this thread (as ``benchmarks.opcodes`` does): the spout's
``next_tuple`` runs the whole chain, so what the acker saw (``executed``), what is pending
and what the spout was told can be read right after each call.
"""

from squall import BaseTaskHook, BasicBolt, Bolt, Config, Fields, Spout, TopologyBuilder
from squall.api.errors import FailedException
from squall.runtime.plan import ACK_ACK, ACK_FAIL, ACK_INIT, make_plan
from squall.runtime.submission import prepare_conf, prepare_topology
from squall.runtime.transport import InProcessHub
from squall.runtime.worker import Worker

NOW = [100.0]  # the workers' clock; a chained bolt moves it to give the tree a latency
READS = [0]  # clock reads so far
HELD: list = []  # inputs a Hold bolt keeps, acked by the test
HOOKED: list = []  # (task, stream, values) of the emits hooks saw


def clock():
    READS[0] += 1
    return NOW[0]


class Src(Spout):
    """Emits ``per_call`` items per ``next_tuple``, each with its msg id; records callbacks."""

    def __init__(self, items, per_call=1):
        self.items, self.per_call = items, per_call

    def open(self, conf, context, collector):
        self.collector, self.i = collector, 0
        self.acked, self.failed, self.inside = [], [], False
        self.called_inside = False

    def next_tuple(self):
        self.inside = True
        for _ in range(self.per_call):
            if self.i < len(self.items):
                self.collector.emit([self.items[self.i]], msg_id=self.i)
                self.i += 1
        self.inside = False

    def ack(self, msg_id):
        self.called_inside |= self.inside
        self.acked.append(msg_id)

    def fail(self, msg_id):
        self.called_inside |= self.inside
        self.failed.append(msg_id)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("v"))


class Map(BasicBolt):
    """Passes its value on; each execute takes 2 ms of the test's clock."""

    def execute(self, tup, collector):
        NOW[0] += 0.002
        if tup[0] == "fail":
            raise FailedException("told to")
        collector.emit([tup[0]])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("v"))


class Hold(Bolt):
    """Emits anchored and keeps its input for the test to ack later."""

    chainable = True

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        if tup[0] == "free":
            self.collector.emit([tup[0]])  # unanchored: the tree is done with the ack
        else:
            self.collector.emit([tup[0]], anchors=tup)
        if tup[0] == "hold":
            HELD.append((self.collector, tup))
        else:
            self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("v"))


class Sink(Map):
    """Not chainable: its input leaves the chain through the worker's queue."""

    chainable = False


class Recorder(BaseTaskHook):
    def emit(self, info):
        HOOKED.append((info.task_id, info.stream, list(info.values)))


class HookedMap(Map):
    def prepare(self, conf, context):
        context.add_task_hook(Recorder())


def worker(builder, *, pending=None, ackers=1, chaining=True, sample_rate=None):
    NOW[0] = 100.0
    HELD.clear()
    HOOKED.clear()
    conf = Config()
    conf.set_num_workers(1)
    conf.set_num_ackers(ackers)
    if pending:
        conf.set_max_spout_pending(pending)
    conf["squall.chaining"] = chaining
    if sample_rate is not None:
        conf["topology.stats.sample.rate"] = sample_rate
    topology = builder.create_topology()
    merged = prepare_conf(conf, topology)
    topology = prepare_topology(topology)
    plan = make_plan(topology, merged)
    w = Worker(topology_name="chainack", topology=topology, conf=merged, plan=plan, index=0,
               transport=InProcessHub(1, 64).endpoint(0), clock=clock)
    w.open_tasks()
    return w


def pipeline(*bolts, items=("a",), per_call=1):
    b = TopologyBuilder()
    b.set_spout("s", Src(list(items), per_call))
    upstream = "s"
    for i, bolt in enumerate(bolts):
        b.set_bolt(f"b{i}", bolt).shuffle_grouping(upstream)
        upstream = f"b{i}"
    return b


def parts(w):
    spout = next(t for t in w.spouts if t.component == "s")
    acker = next(t for t in w.tasks.values() if t.kind == "acker")
    return spout, acker


def drain(w, rounds=20):
    for _ in range(rounds):
        w.run_once()


def test_a_tree_that_completes_in_the_call_never_reaches_the_acker():
    w = worker(pipeline(Map(), Map(), Map()))
    spout, acker = parts(w)
    assert w.plan.chains == [["s", "b0", "b1", "b2"]]
    spout.activate()
    spout.next_tuple()
    assert spout.spout.acked == [0]
    assert not spout.spout.called_inside  # after next_tuple returned, never inside it
    assert len(spout.pending) == 0
    assert acker.metrics.executed == 0
    assert spout.metrics.acked == 1
    # emit -> completion: three executes of 2 ms each on the test's clock
    assert spout.metrics.complete_samples == 1
    assert abs(spout.metrics.complete_ms - 6.0) < 1e-6
    drain(w)
    assert spout.spout.acked == [0] and spout.spout.failed == []


def test_two_emits_in_one_next_tuple_complete_each_once():
    w = worker(pipeline(Map(), Map(), items=("a", "b", "c"), per_call=3), sample_rate=1.0)
    spout, acker = parts(w)
    spout.activate()
    spout.next_tuple()
    assert spout.spout.acked == [0, 1, 2]
    assert spout.metrics.acked == 3 and spout.metrics.complete_samples == 3
    assert acker.metrics.executed == 0 and len(spout.pending) == 0


def test_one_tree_in_the_sample_rate_is_timed_and_the_others_read_no_clock():
    # Storm stamps the emit time of the sampled tracked emits only (topology.stats.sample.rate)
    w = worker(pipeline(Map(), items=[str(i) for i in range(41)], per_call=41), sample_rate=0.05)
    spout, _ = parts(w)
    spout.activate()
    READS[0] = 0
    spout.next_tuple()
    assert spout.spout.acked == list(range(41)) and spout.metrics.acked == 41
    assert spout.metrics.complete_samples == 3  # the 1st, 21st and 41st trees
    assert abs(spout.metrics.complete_ms - 3 * 2.0) < 1e-6  # each timed tree: one 2 ms hop
    # an emit time and an end time per timed tree, a start and an end per timed execute
    # (Map's 1st, 21st and 41st): no read for the 38 trees not timed
    assert READS[0] == 3 * 2 + 3 * 2


def test_an_untimed_tree_that_goes_through_the_acker_completes_with_no_latency():
    w = worker(pipeline(Map(), Hold(), items=("hold", "hold"), per_call=2), sample_rate=0.5)
    spout, _ = parts(w)
    spout.activate()
    spout.next_tuple()
    drain(w)
    assert len(spout.pending) == 2
    for collector, tup in HELD[:]:
        collector.ack(tup)
    drain(w)
    assert spout.spout.acked == [0, 1] and spout.metrics.acked == 2
    assert spout.metrics.complete_samples == 1  # the first tree only (one in two)
    assert sum(spout.metrics.complete_hist) == 1


def test_a_held_input_completes_its_tree_through_the_acker():
    w = worker(pipeline(Map(), Hold(), Map(), items=("hold",)))
    spout, acker = parts(w)
    spout.activate()
    spout.next_tuple()
    assert spout.spout.acked == [] and len(spout.pending) == 1
    assert acker.metrics.executed == 1  # one init for the whole chain, not one per hop
    drain(w)
    assert spout.spout.acked == []
    collector, tup = HELD.pop()
    collector.ack(tup)
    drain(w)
    assert spout.spout.acked == [0] and spout.spout.failed == []
    assert len(spout.pending) == 0 and spout.metrics.complete_samples == 1


def test_a_fail_inside_the_chain_fails_the_tree_once():
    w = worker(pipeline(Map(), Map(), Map(), items=("fail", "a")))
    spout, acker = parts(w)
    spout.activate()
    spout.next_tuple()
    assert spout.spout.failed == [] and len(spout.pending) == 1  # the acker decides
    drain(w)  # the verdict, and the next item, which completes in its call
    assert spout.spout.failed == [0] and spout.spout.acked == [1]
    drain(w)
    assert spout.spout.failed == [0] and spout.metrics.failed == 1
    assert not spout.spout.called_inside


def test_a_tuple_leaving_the_chain_leaves_the_decision_to_the_acker():
    w = worker(pipeline(Map(), Map(), Sink()))
    spout, acker = parts(w)
    assert w.plan.chains == [["s", "b0", "b1"]]
    spout.activate()
    spout.next_tuple()
    assert spout.spout.acked == [] and len(spout.pending) == 1
    assert acker.metrics.executed == 1
    drain(w)
    assert spout.spout.acked == [0] and len(spout.pending) == 0
    assert acker.metrics.executed == 2  # the init and the sink's ack


def test_an_unanchored_tuple_leaving_the_chain_still_leaks_the_scope():
    # the XOR would say done; anything that leaves the chain goes to the acker regardless
    w = worker(pipeline(Map(), Hold(), Sink(), items=("free",)))
    spout, acker = parts(w)
    assert w.plan.chains == [["s", "b0", "b1"]]
    spout.activate()
    spout.next_tuple()
    assert spout.spout.acked == [] and len(spout.pending) == 1
    assert acker.metrics.executed == 1  # one init, of an empty tree
    drain(w)
    assert spout.spout.acked == [0] and len(spout.pending) == 0


def test_max_spout_pending_counts_only_trees_left_pending():
    w = worker(pipeline(Map(), Hold(), items=("hold", "a", "b", "hold", "c")), pending=1)
    spout, acker = parts(w)
    spout.activate()
    spout.next_tuple()
    assert len(spout.pending) == 1 and not spout.can_emit()
    drain(w)
    assert spout.spout.i == 1  # held back by the one pending tree
    collector, tup = HELD.pop()
    collector.ack(tup)
    drain(w)
    # "a" and "b" completed in their calls, never pending; the second "hold" stops it again
    assert spout.spout.acked == [0, 1, 2] and spout.spout.i == 4
    assert len(spout.pending) == 1 and not spout.can_emit()
    collector, tup = HELD.pop()
    collector.ack(tup)
    drain(w)
    assert spout.spout.acked == [0, 1, 2, 3, 4] and len(spout.pending) == 0


def test_with_hooks_the_acker_sees_every_ack_as_storm_does():
    w = worker(pipeline(Map(), HookedMap(), Map()))
    spout, acker = parts(w)
    spout.activate()
    spout.next_tuple()
    assert spout.spout.acked == [] and len(spout.pending) == 1
    assert acker.metrics.executed == 4  # three acks and the init
    drain(w)
    assert spout.spout.acked == [0]
    hooked = next(t for t in w.tasks.values() if t.component == "b1")
    streams = [s for task, s, _ in HOOKED if task == hooked.task_id]
    assert streams == ["default", ACK_ACK]
    assert ACK_INIT not in streams and ACK_FAIL not in streams


def test_unchained_runs_take_the_acker_path():
    w = worker(pipeline(Map(), Map()), chaining=False)
    spout, acker = parts(w)
    spout.activate()
    spout.next_tuple()
    assert len(spout.pending) == 1
    drain(w)
    assert spout.spout.acked == [0] and acker.metrics.executed == 3
