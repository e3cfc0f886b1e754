"""Live rescale on LocalCluster: stateless bolts change task count while the topology runs."""

import threading
from collections import Counter

import pytest

from squall import Bolt, Fields, LocalCluster, TopologyBuilder
from squall.testing import simulated_time
from tests.integration.components import RECORD, CountBolt, ForwardBolt, ListSpout, reset
from tests.integration.test_acking import conf

WORDS = [[f"w{i % 23}"] for i in range(3000)]
HELD = 1000  # words a HeldSpout emits before it waits for RELEASE
RELEASE = threading.Event()


@pytest.fixture(autouse=True)
def _clean():
    reset()
    RELEASE.clear()
    yield
    RELEASE.set()
    reset()


class HeldSpout(ListSpout):
    """A ListSpout that stops after ``HELD`` items until ``RELEASE`` is set: the words after it
    are emitted once the test has rescaled, however fast the first ones ran."""

    def next_tuple(self):
        if self.queue and self.queue[0] >= HELD and not RELEASE.is_set():
            return
        super().next_tuple()


def word_topology(count_grouping: str = "fields", held: bool = False):
    """src -> count (2 tasks), and a branch other -> sink that a rescale of count never touches.

    ``held``: src is a ``HeldSpout``.
    """
    b = TopologyBuilder()
    b.set_spout("src", (HeldSpout if held else ListSpout)(WORDS, fields=("word",)), 1)
    decl = b.set_bolt("count", CountBolt(), 2)
    if count_grouping == "fields":
        decl.fields_grouping("src", Fields("word"))
    else:
        decl.global_grouping("src")
    b.set_spout("other", ListSpout([[i] for i in range(2000)], tag="other"), 1)
    b.set_bolt("sink", ForwardBolt(), 1).shuffle_grouping("other")
    return b.create_topology()


def c(**extra):
    return conf(4, **{"topology.max.spout.pending": 40, **extra})


def tasks_of(cluster, name):
    return {t: task for w in cluster.workers(name) for t, task in w.tasks.items()}


def acked(tag):
    return {m for _, m in RECORD[f"{tag}.acked"]}


def test_a_stateless_bolt_grows_past_its_task_count_and_shrinks_live_nothing_lost():
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("t", c(), word_topology(held=True))
        assert cluster.get_topology_info("t")["rescale"] is None
        workers = cluster.workers("t")
        before = tasks_of(cluster, "t")
        old_count = cluster.get_topology_info("t")["components"]["count"]["tasks"]

        cluster.rebalance("t", parallelism={"count": 6})

        info = cluster.get_topology_info("t")
        rec = info["rescale"]
        assert rec["status"] == "done" and rec["live"] is True, rec
        assert rec["components"] == {"count": [2, 6]} and rec["reason"] is None
        assert rec["moved_key_groups"] == 0 and rec["moved_bytes"] == 0 and rec["pause_ms"] >= 0
        new_count = info["components"]["count"]["tasks"]
        assert new_count[:2] == old_count and len(new_count) == 6
        assert min(new_count[2:]) > max(t for w in info["workers"] for t in w["tasks"]
                                        if t not in new_count[2:])
        # no worker restarted, every task that stayed is the same object
        assert cluster.workers("t") == workers
        after = tasks_of(cluster, "t")
        assert all(after[t] is task for t, task in before.items())
        RELEASE.set()
        cluster.wait_quiet(trees=True)
        seen_by = {task for task, _ in RECORD["count.seen"]}
        assert set(new_count[2:]) & seen_by  # the new tasks got words

        cluster.rebalance("t", parallelism={"count": 3})
        rec = cluster.get_topology_info("t")["rescale"]
        assert rec["live"] is True and rec["components"] == {"count": [6, 3]}
        assert cluster.workers("t") == workers
        cleaned = {task for task, _ in RECORD["count.cleanup"]}
        assert cleaned == set(new_count[3:])  # the removed tasks were cleaned up
        cluster.advance_time(1)
        cluster.wait_quiet(trees=True)
        assert acked("spout") == set(range(len(WORDS)))  # nothing lost
        assert acked("other") == set(range(2000))
        counts = Counter(w for _, w in RECORD["count.seen"])
        source = Counter(w for [w] in WORDS)
        assert all(counts[w] >= n for w, n in source.items())  # at least once


def test_a_task_prepare_failing_leaves_the_old_routing():
    class PickyBolt(Bolt):
        def prepare(self, conf, context, collector):
            if context.get_this_task_index() >= 2:
                raise ValueError("no third task")
            self.collector = collector

        def execute(self, tup):
            self.collector.ack(tup)

    b = TopologyBuilder()
    b.set_spout("src", ListSpout(WORDS, fields=("word",)), 1)
    b.set_bolt("count", PickyBolt(), 2).shuffle_grouping("src")
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("t", c(), b.create_topology())
        workers = cluster.workers("t")
        with pytest.raises(ValueError, match="no third task"):
            cluster.rebalance("t", parallelism={"count": 4})
        info = cluster.get_topology_info("t")
        rec = info["rescale"]
        assert rec["status"] == "failed" and rec["live"] is True
        assert rec["reason"] == "ValueError: no third task"
        assert len(info["components"]["count"]["tasks"]) == 2
        assert cluster.workers("t") == workers
        cluster.wait_quiet(trees=True)
        assert acked("spout") == set(range(len(WORDS)))


def test_global_grouping_falls_back_to_a_restart_and_says_so():
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("t", c(), word_topology("global"))
        workers = cluster.workers("t")
        cluster.rebalance("t", parallelism={"count": 3})
        rec = cluster.get_topology_info("t")["rescale"]
        assert rec["status"] == "done" and rec["live"] is False
        assert rec["reason"] == ("component 'count': global grouping from 'src' (it names "
                                 "tasks, so it does not move live)")
        assert cluster.workers("t") != workers  # restarted
        assert len(cluster.get_topology_info("t")["components"]["count"]["tasks"]) == 3


def test_new_workers_take_new_tasks_live():
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("t", c(), word_topology())
        workers = cluster.workers("t")
        cluster.rebalance("t", num_workers=5, parallelism={"count": 4})
        info = cluster.get_topology_info("t")
        assert info["rescale"]["live"] is True and info["num_workers"] == 5
        assert cluster.workers("t")[:4] == workers
        fifth = info["workers"][4]["tasks"]
        assert set(fifth) & set(info["components"]["count"]["tasks"])
        cluster.wait_quiet(trees=True)
        assert acked("spout") == set(range(len(WORDS)))


def test_a_tuple_reaching_a_removed_task_is_failed_so_its_spout_replays_it():
    from squall.runtime.live import RetiredTask

    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("t", c(), word_topology())
        cluster.wait_quiet(trees=True)
        cluster.rebalance("t", parallelism={"count": 1})
        (w, retired), = [(w, t) for w in cluster.workers("t") for t in w.tasks.values()
                         if isinstance(t, RetiredTask)]
        src = next(t for x in cluster.workers("t") for t in x.tasks.values() if t.component == "src")
        # a frame sent before the switch, arriving after the retirement: one tracked tuple
        w.query(lambda: w.deliver1(retired.task_id, src, "default", ["late"], 7, 9), 10)
        cluster.wait_quiet()
        assert retired.failed == 1
        assert len(cluster.get_topology_info("t")["components"]["count"]["tasks"]) == 1
