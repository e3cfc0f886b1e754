"""Tuples crossing workers: every value type, serialization faults, backpressure."""

import threading
import time
from collections import Counter
from decimal import Decimal

from squall import Bolt, Config, Fields, LocalCluster, Spout, TopologyBuilder
from squall.testing import simulated_time
from tests.integration.components import RECORD, ListSpout, SlowBolt, TypeRecorder, record
from tests.integration.test_acking import conf, run_until_idle

VALUES = [
    None, True, False, 0, -1, 2**63 - 1, -(2**63), 2**64 - 1, 2**80, 1.5, float("inf"),
    "", "word", "unicode: \u00e9\u4e2d\U0001f600", b"\x00\xffbytes", [1, [2, "x"]],
    {"a": 1, 2: [3]}, (1, "tuple"), Decimal("1.10"), {1, 2, 3},
]


def crossing_topology(spout):
    b = TopologyBuilder()
    b.set_spout("spout", spout, 1)
    b.set_bolt("sink", TypeRecorder(), 1).shuffle_grouping("spout")
    return b.create_topology()


def test_values_of_every_supported_type_cross_workers_intact():
    topology = crossing_topology(ListSpout([[v] for v in VALUES], replay=False))
    with LocalCluster() as cluster:
        info = run_until_idle(cluster, topology, conf(2)).info()
        worker_of = {t: w["worker"] for w in info["workers"] for t in w["tasks"]}
        assert worker_of[1] != worker_of[2]  # sink (task 1) and spout (task 2) apart
        assert len(RECORD["spout.acked"]) == len(VALUES)
    got = RECORD["types"]
    assert len(got) == len(VALUES)
    for sent in VALUES:
        match = [g for g in got if type(g) is type(sent) and g == sent]
        assert match, f"{sent!r} ({type(sent).__name__}) did not arrive intact: {got!r}"


def test_topology_info_counts_the_tuples_and_acker_messages_that_crossed_workers():
    items = [[i] for i in range(40)]
    with LocalCluster() as cluster:
        info = run_until_idle(cluster, crossing_topology(ListSpout(items, replay=False)),
                              conf(2)).info()
    worker_of = {t: w["worker"] for w in info["workers"] for t in w["tasks"]}
    assert worker_of[1] != worker_of[2]  # sink and spout apart: every tuple crosses
    sent = {w["worker"]: w["transfer"] for w in info["workers"]}
    spout_side, sink_side = sent[worker_of[2]], sent[worker_of[1]]
    assert spout_side["tuples"] == len(items) and sink_side["tuples"] == 0
    assert spout_side["frames"] >= 1 and spout_side["bytes"] > len(items)
    # the sink's acks reach the acker of each tree in the spout's worker (or its inits cross)
    assert spout_side["acker"] + sink_side["acker"] > 0


class UnserializableSpout(Spout):
    def open(self, conf, context, collector):
        self.collector = collector
        self.sent = 0

    def next_tuple(self):
        if self.sent < 3:
            value = threading.Lock() if self.sent == 1 else self.sent
            self.sent += 1
            self.collector.emit([value], msg_id=self.sent)

    def ack(self, msg_id):
        record("unser.acked", msg_id)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("value"))


def test_an_unserializable_value_fails_at_emit_naming_component_and_stream():
    with LocalCluster() as cluster:
        errors = run_until_idle(cluster, crossing_topology(UnserializableSpout()), conf(2)).info()["errors"]
        assert sorted(RECORD["unser.acked"]) == [1, 3]
    assert len(errors) == 1
    message = errors[0]["message"]
    assert errors[0]["component"] == "spout"
    assert "component 'spout'" in message and "stream 'default'" in message
    assert "lock" in message.lower()


class FastSpout(Spout):
    """Emits as fast as it is allowed, untracked, up to ``limit``."""

    def __init__(self, limit):
        self.limit = limit

    def open(self, conf, context, collector):
        self.collector = collector
        self.n = 0

    def next_tuple(self):
        if self.n < self.limit:
            self.collector.emit([self.n])
            self.n += 1

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("value"))


def test_a_slow_bolt_holds_back_a_fast_spout_with_bounded_queues_and_no_loss():
    capacity = 200
    b = TopologyBuilder()
    b.set_spout("spout", FastSpout(3000), 1)
    b.set_bolt("slow", SlowBolt(0.0002), 1).shuffle_grouping("spout")
    c = conf(2, **{"topology.executor.receive.buffer.size": capacity,
                   "topology.executor.send.buffer.size": 200, "squall.transfer.batch.size": 50})
    peak = Counter()
    throttled = False
    with LocalCluster() as cluster:
        cluster.submit_topology("t", c, b.create_topology())
        workers = cluster.workers("t")
        deadline = time.monotonic() + 30
        while len(RECORD["slow.done"]) < 3000 and time.monotonic() < deadline:
            for w in workers:
                for task in w.tasks.values():
                    peak[task.task_id] = max(peak[task.task_id], len(task.inbox))
                throttled = throttled or w.throttled
            time.sleep(0.002)  # sampling the queues while they fill, not waiting for an outcome
    assert sorted(RECORD["slow.done"]) == list(range(3000))
    # a remote frame may land on a queue just under the mark: bound = capacity + one frame
    assert max(peak.values()) <= capacity + 50
    assert throttled  # the spout was held back at some point


def test_a_four_worker_word_count_is_exact():
    sentences = [["the cow jumped over the moon"], ["an apple a day keeps the doctor away"],
                 ["four score and seven years ago"], ["snow white and the seven dwarfs"],
                 ["i am at two with nature"]] * 200
    expected = Counter(w for (s,) in sentences for w in s.split())
    from tests.integration.components import CountBolt, SplitBolt

    b = TopologyBuilder()
    b.set_spout("spout", ListSpout(sentences), 4)
    b.set_bolt("split", SplitBolt(), 4).shuffle_grouping("spout")
    b.set_bolt("count", CountBolt(), 4).fields_grouping("split", Fields("word"))
    c = Config()
    c.set_num_workers(4)
    with LocalCluster() as cluster:
        run_until_idle(cluster, b.create_topology(), c, name="wc", timeout=60)
        assert len(RECORD["spout.acked"]) == len(sentences)
    counts = Counter()
    owners = {}
    for task, partial in RECORD["count.cleanup"]:
        for word, n in partial.items():
            assert word not in owners, f"{word!r} counted by tasks {owners.get(word)} and {task}"
            owners[word] = task
            counts[word] += n
    assert counts == expected
    assert RECORD["spout.failed"] == []


class TwoStreamSpout(Spout):
    """Emits 0..n-1, every third on stream ``b``, the rest on ``a``; values of awkward types ride along."""

    def __init__(self, n):
        self.n = n

    def open(self, conf, context, collector):
        self.collector = collector
        self.i = 0

    def next_tuple(self):
        if self.i < self.n:
            i = self.i
            extra = [2**70, "\ud800", 2.5, None, b"x"][i % 5]  # the first two need pickle
            self.collector.emit([i, extra], stream="b" if i % 3 == 0 else "a", msg_id=i)
            self.i += 1

    def ack(self, msg_id):
        record("two.acked", msg_id)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("i", "extra"), stream="a")
        declarer.declare(Fields("i", "extra"), stream="b")


class OrderRecorder(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        record("two.got", (tup.stream, tup[0], tup[1]))
        self.collector.ack(tup)


def test_what_one_task_sends_another_on_two_streams_arrives_in_emit_order():
    # frames carry a batch per (source, target, stream): a switch of stream opens a new batch
    # behind the last one, so the receiver still sees the emit order (checkpoint barriers
    # rely on it); values msgpack cannot take alone go through pickle without disturbing it
    n = 600
    b = TopologyBuilder()
    b.set_spout("spout", TwoStreamSpout(n), 1)
    sink = b.set_bolt("sink", OrderRecorder(), 1)
    sink.shuffle_grouping("spout", "a")
    sink.shuffle_grouping("spout", "b")
    with LocalCluster() as cluster:
        info = run_until_idle(cluster, b.create_topology(), conf(2)).info()
        worker_of = {t: w["worker"] for w in info["workers"] for t in w["tasks"]}
        assert worker_of[1] != worker_of[2]  # sink (task 1) and spout (task 2) apart
    got = RECORD["two.got"]
    assert [i for _, i, _ in got] == list(range(n))
    assert all(stream == ("b" if i % 3 == 0 else "a") for stream, i, _ in got)
    extras = [2**70, "\ud800", 2.5, None, b"x"]
    assert all(extra == extras[i % 5] and type(extra) is type(extras[i % 5])
               for _, i, extra in got)
    assert sorted(RECORD["two.acked"]) == list(range(n))


class MutatingSpout(Spout):
    """Emits three dicts; the first emit of message 1 has a lock put into its dict right after."""

    def open(self, conf, context, collector):
        self.collector = collector
        self.queue = [0, 1, 2]
        self.spoiled = False

    def next_tuple(self):
        if self.queue:
            i = self.queue.pop(0)
            value = {"n": i}
            self.collector.emit([value], msg_id=i)
            if i == 1 and not self.spoiled:
                self.spoiled = True
                value["lock"] = threading.Lock()  # after its check at emit, before the flush

    def ack(self, msg_id):
        record("mut.acked", msg_id)

    def fail(self, msg_id):
        record("mut.failed", msg_id)
        self.queue.append(msg_id)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("value"))


def test_a_value_spoiled_after_its_emit_drops_its_frame_and_the_trees_replay():
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("t", conf(2, **{"topology.message.timeout.secs": 10}),
                                crossing_topology(MutatingSpout()))
        cluster.wait_quiet()
        assert 1 not in RECORD["mut.acked"]
        assert sum(w.unsendable_frames for w in cluster.workers("t")) == 1
        cluster.advance_time(20, increment=0.5)
        cluster.wait_quiet()
    assert 1 in RECORD["mut.failed"]  # timed out, replayed
    assert sorted(set(RECORD["mut.acked"])) == [0, 1, 2]
    assert [v["n"] for v in RECORD["types"] if isinstance(v, dict)].count(1) == 1
