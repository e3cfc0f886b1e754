"""A worker's memory limit on Spark, from the configuration (issue 41, item 8): its arithmetic,
the check of its keys, the worker's own check, and how ``squall info`` shows a stop for memory.

The Spark end to end (a bolt that allocates without bound) is tests/spark/test_memory_limit.py.
"""

from __future__ import annotations

import argparse

import pytest

from squall.api.builder import TopologyBuilder
from squall.api.components import Bolt, Spout
from squall.api.conf_checks import check_setting
from squall.api.errors import InvalidTopologyError
from squall.api.fields import Fields
from squall.runtime.plan import make_plan


class OneSpout(Spout):
    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"))


class OneBolt(Bolt):
    def execute(self, tup):
        pass

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"))


def topology(ask: float | None = 300.0, conf_ask: float | None = None):
    b = TopologyBuilder()
    b.set_spout("spout", OneSpout())
    bolt = b.set_bolt("bolt", OneBolt(), parallelism=2).shuffle_grouping("spout")
    if ask is not None:
        bolt.set_memory_load(ask)
    if conf_ask is not None:
        bolt.add_configuration("topology.component.resources.onheap.memory.mb", conf_ask)
    return b.create_topology()


def limit(topo, conf, index=0):
    from squall.spark.memory import worker_limit_mb

    plan = make_plan(topo, {"topology.workers": 1, "squall.chaining": False, **conf})
    return worker_limit_mb(topo, conf, plan, index)


def test_the_limit_is_the_base_plus_what_the_workers_tasks_ask():
    # one spout task and one acker ask nothing: a memory slot each (the scheduler counts so);
    # two bolt tasks ask 300 MB each; __system counts nothing; the base is 256 MB
    assert limit(topology(300.0), {}) == 256 + 128 + 2 * 300 + 128
    assert limit(topology(300.0), {"squall.scheduler.memory.slot.mb": 64,
                                   "squall.spark.worker.memory.base.mb": 100}) == 100 + 64 + 600 + 64
    # Storm's component key asks as set_memory_load does
    assert limit(topology(None, conf_ask=50.0), {}) == 256 + 128 + 2 * 50 + 128


def test_no_ask_means_no_limit_and_the_workers_own_setting_is_the_limit():
    assert limit(topology(None), {}) is None
    assert limit(topology(None), {"topology.worker.max.heap.size.mb": 900}) == 900.0
    assert limit(topology(300.0), {"topology.worker.max.heap.size.mb": 512.5}) == 512.5


def test_a_worker_without_a_task_that_asks_has_no_limit():
    from squall.spark.memory import worker_limit_mb

    topo = topology(300.0)
    conf = {"topology.workers": 3, "squall.chaining": False}
    plan = make_plan(topo, conf)
    limits = [worker_limit_mb(topo, conf, plan, i) for i in range(3)]
    asked = [any(plan.task_component[t] == "bolt" for t in plan.worker_tasks(i)) for i in range(3)]
    assert [x is not None for x in limits] == asked
    assert sum(asked) == 2


@pytest.mark.parametrize(("key", "value", "wanted"), [
    ("topology.worker.max.heap.size.mb", "lots", "a positive number or None"),
    ("topology.worker.max.heap.size.mb", 0, "a positive number or None"),
    ("squall.spark.worker.memory.base.mb", -1, "a number >= 0"),
    ("squall.spark.worker.memory.base.mb", True, "a number >= 0"),
])
def test_a_bad_value_is_refused_in_one_line_naming_the_key(key, value, wanted):
    with pytest.raises(InvalidTopologyError) as e:
        check_setting(key, value)
    assert str(e.value) == f"config {key} must be {wanted}, got {value!r}"


def test_a_bad_ask_is_refused_in_one_line_naming_the_component():
    with pytest.raises(InvalidTopologyError) as e:
        limit(topology(None, conf_ask="big"), {})
    assert "\n" not in str(e.value)
    assert "'bolt'" in str(e.value) and "topology.component.resources.onheap.memory.mb" in str(e.value)


def test_the_watch_says_over_only_above_the_limit():
    from squall.spark.memory import MemoryWatch

    rss = [100 << 20]
    watch = MemoryWatch(150.0, rss=lambda: rss[0])
    assert watch.over() is None
    rss[0] = 150 << 20
    assert watch.over() is None  # at the limit is not over it
    rss[0] = 151 << 20
    assert watch.over() == 151.0


def test_the_reason_names_the_rss_and_the_limit():
    from squall.spark.memory import reason

    assert reason(712.44, 448.0) == "stopped for memory: RSS 712 MB over its limit of 448 MB"


def test_the_backstop_lowers_the_data_limit_and_gives_it_back():
    import resource

    from squall.spark.memory import HARD_FACTOR, backstop

    before = resource.getrlimit(resource.RLIMIT_DATA)
    restore = backstop(1000.0)
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
        assert soft == int(HARD_FACTOR * 1000 * 1024 * 1024) and hard == before[1]
    finally:
        restore()
    assert resource.getrlimit(resource.RLIMIT_DATA) == before
    backstop(None)()  # no limit: nothing set, nothing to give back


def test_squall_info_says_a_worker_was_stopped_for_memory(monkeypatch, capsys):
    from squall.cli.commands import info as info_cmd

    worker = {"worker": 1, "state": "RESTARTING", "tasks": [2, 3], "restarts": 1, "uptime_secs": 0.0,
              "memory_limit_mb": 448.0, "memory_stops": 1,
              "last_error": "stopped for memory: RSS 712 MB over its limit of 448 MB"}
    body = {"name": "wc", "status": "ACTIVE", "version": 1, "uptime_secs": 1.0, "master": {},
            "workers": [worker], "errors": [], "components": {}}

    class Client:
        def get(self, path):
            return body
    monkeypatch.setattr(info_cmd, "client", lambda args: Client())
    info_cmd.run(argparse.Namespace(name="wc", json=False, conf=False, tasks=False))
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("WORKER"))
    assert "MEM LIMIT MB" in header and "MEM STOPS" in header
    assert ("memory: worker 1 stopped 1 time(s) over its limit; last: stopped for memory: RSS 712 MB "
            "over its limit of 448 MB") in out


STOPPED = {"worker": 1, "state": "RUNNING", "tasks": [2, 3], "restarts": 1, "uptime_secs": 3.0,
           "memory_limit_mb": 448.0, "memory_stops": 1,
           "memory_stop": "stopped for memory: RSS 712 MB over its limit of 448 MB"}


def test_the_ui_and_the_metrics_show_the_limit_and_the_stops():
    from prometheus_client.parser import text_string_to_metric_families

    from squall.nimbus.prometheus import render
    from squall.nimbus.stormapi import TopologyView, worker_row

    view = TopologyView({"name": "wc", "id": "wc-1-1", "components": {}}, {}, {}, None, 0.0)
    row = worker_row(view, STOPPED)
    assert (row["memoryLimitMb"], row["memoryStops"], row["memoryStop"]) == (
        448.0, 1, "stopped for memory: RSS 712 MB over its limit of 448 MB")
    info = {"name": "wc", "id": "wc-1-1", "status": "ACTIVE", "components": {}, "workers": [STOPPED]}
    fams = {f.name: f for f in text_string_to_metric_families(render([info], {"leader": True}))}
    assert [s.value for s in fams["squall_worker_memory_stops"].samples] == [1.0]
    assert [s.value for s in fams["squall_worker_memory_limit_bytes"].samples] == [448.0 * 1024 * 1024]
