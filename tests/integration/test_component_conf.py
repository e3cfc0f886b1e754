"""Component configuration honoured by LocalCluster (issue 10 item 4): ``topology.tasks``,
``topology.max.task.parallelism``, ``topology.max.spout.pending`` and
``topology.tick.tuple.freq.secs`` per component, and user keys in the task's conf."""

from __future__ import annotations

from collections import Counter

from squall import Bolt, Config, LocalCluster, TopologyBuilder
from squall.testing import MockedSources, complete_topology, simulated_time, tracked_topology
from tests.integration.components import RECORD, ListSpout, WhoGotIt, record, reset
from tests.integration.test_groupings import Source


class ConfWho(WhoGotIt):
    def __init__(self, conf=None):
        self.conf = conf

    def get_component_configuration(self):
        return self.conf


def run_who(configure, who=None, conf=None, n_items=120):
    b = TopologyBuilder()
    b.set_spout("src", Source())
    configure(b.set_bolt("who", who or WhoGotIt(), 2).shuffle_grouping("src"))
    items = [[f"k{i}", i] for i in range(n_items)]
    result = complete_topology(b.create_topology(), MockedSources({"src": items}), conf)
    assert result.acked("src") == list(range(n_items))
    return Counter(task for task, _ in result.emitted("who")), result.info


def test_add_configuration_topology_tasks_runs_that_many_tasks():
    counts, info = run_who(lambda d: d.add_configuration("topology.tasks", 6))
    assert len(info["components"]["who"]["tasks"]) == 6
    assert len(counts) == 6 and max(counts.values()) - min(counts.values()) <= 1


def test_get_component_configuration_topology_tasks_runs_that_many_tasks():
    counts, info = run_who(lambda d: d, who=ConfWho({"topology.tasks": 6}))
    assert len(info["components"]["who"]["tasks"]) == 6 and len(counts) == 6


def test_max_task_parallelism_caps_a_component_on_the_cluster():
    conf = Config()
    conf.set_max_task_parallelism(3)
    counts, info = run_who(lambda d: d.set_num_tasks(8), conf=conf)
    assert len(info["components"]["who"]["tasks"]) == 3 and len(counts) == 3


class ConfRecorder(Bolt):
    """Records, from inside the task, the conf it was prepared with."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        record("conf", (context.component_id, dict(conf)))

    def execute(self, tup):
        if tup.is_tick():
            record("tick", self.component)
        self.collector.ack(tup)

    def get_component_configuration(self):
        return {"topology.my.own.key": "from-component", "topology.workers": 7}

    @property
    def component(self):
        return type(self).__name__


class TickedA(ConfRecorder):
    pass


class TickedB(ConfRecorder):
    pass


class PendingOne(ListSpout):
    def get_component_configuration(self):
        return {"topology.max.spout.pending": 1}


def test_per_component_keys_reach_the_task_and_topology_wide_ones_do_not():
    reset()
    b = TopologyBuilder()
    b.set_spout("slow", PendingOne([[i] for i in range(60)], tag="slow"))
    b.set_spout("free", ListSpout([[i] for i in range(60)], tag="free"))
    b.set_bolt("a", TickedA()).shuffle_grouping("slow").shuffle_grouping("free") \
        .add_configuration("topology.tick.tuple.freq.secs", 1) \
        .add_configuration("topology.message.timeout.secs", 1) \
        .add_configuration("user.key", 3)
    b.set_bolt("b", TickedB()).shuffle_grouping("slow")
    b.set_bolt("c", TickedB()).shuffle_grouping("free")
    conf = Config()
    conf.set_num_workers(1)
    conf.set_max_spout_pending(50)
    conf["user.key"] = 1
    with simulated_time(), LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "cc", conf, b.create_topology())
        tracked.wait_idle()
        assert len(RECORD["slow.acked"]) == 60 and len(RECORD["free.acked"]) == 60
        assert RECORD["tick"] == []  # the clock has not moved
        cluster.advance_time(3.5, increment=0.5)
        assert Counter(RECORD["tick"]) == {"TickedA": 3}  # only "a" ticks: the topology sets none
    seen = dict(RECORD["conf"])
    assert seen["a"]["topology.tick.tuple.freq.secs"] == 1
    assert seen["a"]["user.key"] == 3 and seen["b"]["user.key"] == 1
    assert seen["a"]["topology.my.own.key"] == "from-component"  # unknown topology.* kept
    assert seen["a"]["topology.workers"] == 1  # topology-wide: the component cannot change it
    assert seen["a"]["topology.message.timeout.secs"] == 30
    assert seen["b"]["topology.tick.tuple.freq.secs"] is None
    assert max(RECORD["slow.max_in_flight"]) == 1  # the component's max.spout.pending
    assert max(RECORD["free.max_in_flight"]) > 1  # the topology's 50
