"""Tuples crossing workers: every value type, serialization faults, backpressure."""

import threading
import time
from collections import Counter
from decimal import Decimal

from squall import Config, Fields, LocalCluster, Spout, TopologyBuilder
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
