"""Component configuration as Storm's (issue 10 item 4): ``topology.tasks`` per component,
``topology.max.task.parallelism``, the merge order and the checks of per-component keys.

Storm's rules ported: ``ServerUtils.getComponentParallelism`` (tasks = ``topology.tasks``,
default the parallelism hint, capped by ``topology.max.task.parallelism``, both looked up in
the component's conf over the topology's), ``Nimbus.computeExecutors`` (never more executors
than tasks) and ``Executor.normalizedComponentConf`` (which keys a component may override).
"""

from __future__ import annotations

import pytest

from squall.api.builder import TopologyBuilder
from squall.api.components import Bolt, Spout
from squall.api.config import Config, component_tasks, task_conf
from squall.api.errors import InvalidTopologyError
from squall.api.fields import Fields
from squall.runtime.plan import make_plan
from squall.runtime.submission import prepare_conf, with_parallelism


class WordSpout(Spout):
    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"))


class ConfSpout(WordSpout):
    def __init__(self, conf):
        self.conf = conf

    def get_component_configuration(self):
        return self.conf


class Sink(Bolt):
    def __init__(self, conf=None):
        self.conf = conf

    def execute(self, tup):
        pass

    def get_component_configuration(self):
        return self.conf


def build(bolt_conf=None, parallelism=2, configure=lambda d: d):
    b = TopologyBuilder()
    b.set_spout("words", WordSpout())
    configure(b.set_bolt("sink", Sink(bolt_conf), parallelism=parallelism).shuffle_grouping("words"))
    return b.create_topology()


def tasks_and_executors(topology, conf=None, component="sink"):
    plan = make_plan(topology, prepare_conf(conf or {}, topology))
    executors = [ex.tasks for ex in plan.executors if ex.component == component]
    return plan.component_tasks[component], executors


# ---- topology.tasks ----------------------------------------------------------------------


def test_set_num_tasks_is_the_component_configuration_topology_tasks():
    b = TopologyBuilder()
    d = b.set_spout("words", WordSpout(), parallelism=2).set_num_tasks(6)
    assert d.conf == {"topology.tasks": 6} and d.num_tasks == 6
    spec = b.create_topology().components["words"]
    assert (spec.num_tasks, spec.parallelism, spec.conf["topology.tasks"]) == (6, 2, 6)


def test_add_configuration_topology_tasks_gives_that_many_tasks():
    topo = build(configure=lambda d: d.add_configuration("topology.tasks", 6))
    assert topo.components["sink"].num_tasks == 6
    tasks, executors = tasks_and_executors(topo)
    assert len(tasks) == 6 and [len(e) for e in executors] == [3, 3]


def test_get_component_configuration_topology_tasks_gives_that_many_tasks():
    topo = build({"topology.tasks": 6})
    tasks, executors = tasks_and_executors(topo)
    assert len(tasks) == 6 and len(executors) == 2


def test_builder_configuration_wins_over_the_components_own():
    # Storm's order: topology conf, then get_component_configuration, then the declarer
    topo = build({"topology.tasks": 6, "k": "component"},
                 configure=lambda d: d.set_num_tasks(4).add_configuration("k", "builder"))
    spec = topo.components["sink"]
    assert spec.num_tasks == 4 and spec.conf["k"] == "builder"
    topo = build({"topology.tasks": 6}, configure=lambda d: d.set_num_tasks(4).set_num_tasks(5))
    assert topo.components["sink"].num_tasks == 5  # the last setter wins


def test_fewer_tasks_than_parallelism_gives_one_executor_per_task():
    # Storm: executors are partitionFixed(hint, tasks), so never more executors than tasks
    topo = build(parallelism=3, configure=lambda d: d.set_num_tasks(2))
    tasks, executors = tasks_and_executors(topo)
    assert len(tasks) == 2 and executors == [(tasks[0],), (tasks[1],)]


def test_topology_level_topology_tasks_applies_where_the_component_sets_none():
    topo = build(parallelism=2)
    tasks, executors = tasks_and_executors(topo, {"topology.tasks": 5})
    assert len(tasks) == 5 and len(executors) == 2
    topo = build(parallelism=2, configure=lambda d: d.set_num_tasks(3))
    tasks, _ = tasks_and_executors(topo, {"topology.tasks": 5})
    assert len(tasks) == 3  # the component's own wins


# ---- topology.max.task.parallelism ---------------------------------------------------------


def test_max_task_parallelism_caps_tasks_and_executors():
    topo = build(parallelism=4, configure=lambda d: d.set_num_tasks(8))
    tasks, executors = tasks_and_executors(topo, {"topology.max.task.parallelism": 3})
    assert len(tasks) == 3 and len(executors) == 3
    conf = Config()
    conf.set_max_task_parallelism(2)
    tasks, executors = tasks_and_executors(build(parallelism=4), conf)
    assert len(tasks) == 2 and len(executors) == 2


def test_component_max_task_parallelism_as_storms_test_word_spout():
    # Storm's TestWordSpout returns {topology.max.task.parallelism: 1} when not distributed
    b = TopologyBuilder()
    b.set_spout("words", ConfSpout({"topology.max.task.parallelism": 1}), parallelism=4)
    topo = b.create_topology()
    assert topo.components["words"].parallelism == 1
    tasks, executors = tasks_and_executors(topo, {"topology.max.task.parallelism": 8},
                                           component="words")
    assert len(tasks) == 1 and len(executors) == 1


def test_component_cap_wins_over_the_topologys():
    topo = build(parallelism=4, configure=lambda d: d.set_max_task_parallelism(3))
    tasks, _ = tasks_and_executors(topo, {"topology.max.task.parallelism": 1})
    assert len(tasks) == 3


def test_rebalance_keeps_the_cap():
    topo = build(parallelism=2)
    grown = with_parallelism(topo, {"sink": 6})
    tasks, executors = tasks_and_executors(grown, {"topology.max.task.parallelism": 4})
    assert len(tasks) == 4 and len(executors) == 4
    tasks, executors = tasks_and_executors(grown)
    assert len(tasks) == 6 and len(executors) == 6


def test_rebalance_of_a_component_with_set_num_tasks():
    topo = build(parallelism=2, configure=lambda d: d.set_num_tasks(4))
    tasks, executors = tasks_and_executors(with_parallelism(topo, {"sink": 3}))
    assert len(tasks) == 4 and len(executors) == 3
    tasks, executors = tasks_and_executors(with_parallelism(topo, {"sink": 6}))
    assert len(tasks) == 6 and len(executors) == 6


@pytest.mark.parametrize("hint, own, top, expected", [
    (2, {}, {}, (2, 2)),
    (2, {"topology.tasks": 6}, {}, (6, 2)),
    (4, {"topology.tasks": 2}, {}, (2, 2)),
    (2, {}, {"topology.tasks": 5}, (5, 2)),
    (4, {"topology.tasks": 6}, {"topology.max.task.parallelism": 3}, (3, 3)),
    (4, {"topology.max.task.parallelism": None}, {"topology.max.task.parallelism": 1}, (4, 4)),
    (1, {}, {"topology.tasks": None, "topology.max.task.parallelism": None}, (1, 1)),
])
def test_component_tasks_is_storms_get_component_parallelism(hint, own, top, expected):
    assert component_tasks(hint, own, top) == expected


# ---- what a task sees ----------------------------------------------------------------------


def test_task_conf_merges_topology_then_component_keeping_storms_per_component_keys():
    top = {"topology.workers": 2, "topology.message.timeout.secs": 30,
           "topology.max.spout.pending": 100, "topology.tick.tuple.freq.secs": None,
           "topology.tasks": None, "user.key": "topology"}
    own = {"topology.workers": 9, "topology.message.timeout.secs": 1,  # topology-wide: dropped
           "topology.tasks": 6,  # dropped from the task's conf, as Storm's Executor does
           "topology.max.spout.pending": 5, "topology.tick.tuple.freq.secs": 2,
           "topology.max.task.parallelism": 3, "topology.debug": True,
           "topology.my.custom.key": "kept", "user.key": "component", "squall.x": 1}
    conf = task_conf(top, own)
    assert conf["topology.workers"] == 2 and conf["topology.message.timeout.secs"] == 30
    assert conf["topology.tasks"] is None
    assert conf["topology.max.spout.pending"] == 5 and conf["topology.tick.tuple.freq.secs"] == 2
    assert conf["topology.max.task.parallelism"] == 3 and conf["topology.debug"] is True
    assert conf["topology.my.custom.key"] == "kept" and conf["user.key"] == "component"
    assert conf["squall.x"] == 1
    assert top["topology.workers"] == 2 and "squall.x" not in top  # inputs untouched


# ---- wrong types ----------------------------------------------------------------------------


BAD = [
    ("topology.tasks", 0), ("topology.tasks", -1), ("topology.tasks", 2.5), ("topology.tasks", "6"),
    ("topology.tasks", True), ("topology.tasks", None),
    ("topology.max.task.parallelism", 0), ("topology.max.task.parallelism", "3"),
    ("topology.max.task.parallelism", 1.0),
    ("topology.max.spout.pending", "10"), ("topology.max.spout.pending", 0),
    ("topology.max.spout.pending", 2.5), ("topology.max.spout.pending", False),
    ("topology.tick.tuple.freq.secs", "1"), ("topology.tick.tuple.freq.secs", 0),
    ("topology.tick.tuple.freq.secs", -1.5), ("topology.tick.tuple.freq.secs", True),
]


@pytest.mark.parametrize("key, value", BAD)
@pytest.mark.parametrize("how", ["add_configuration", "get_component_configuration"])
def test_a_wrong_type_names_component_key_and_value(key, value, how):
    if how == "add_configuration":
        make = lambda: build(configure=lambda d: d.add_configuration(key, value))  # noqa: E731
    else:
        make = lambda: build({key: value})  # noqa: E731
    with pytest.raises(InvalidTopologyError) as info:
        make()
    message = str(info.value)
    for needle in ("'sink'", key, repr(value)):
        assert needle in message, f"{needle!r} not in {message!r}"
    assert "\n" not in message


@pytest.mark.parametrize("key, value", [("topology.tasks", 0), ("topology.tasks", "4"),
                                        ("topology.max.task.parallelism", 0),
                                        ("topology.max.task.parallelism", 2.0),
                                        ("topology.localityaware.higher.bound", "x")])
def test_topology_level_wrong_types_are_refused_at_submit(key, value):
    with pytest.raises(InvalidTopologyError, match=rf"{key}.*{value!r}"):
        prepare_conf({key: value}, build())


def test_per_component_values_of_the_right_type_are_accepted():
    topo = build({"topology.max.spout.pending": None, "topology.tick.tuple.freq.secs": 0.5},
                 configure=lambda d: d.add_configuration("topology.max.spout.pending", 7)
                 .add_configuration("topology.unknown.key", object))
    spec = topo.components["sink"]
    assert spec.conf["topology.max.spout.pending"] == 7
    assert spec.conf["topology.tick.tuple.freq.secs"] == 0.5
    assert spec.conf["topology.unknown.key"] is object
    prepare_conf({}, topo)


def test_configuration_keys_are_strings():
    with pytest.raises(InvalidTopologyError, match=r"'sink'.*5"):
        build(configure=lambda d: d.add_configuration(5, 1))
