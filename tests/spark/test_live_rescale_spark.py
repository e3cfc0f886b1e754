"""Live rescale on SparkCluster (local[3]): a stateless bolt 2 -> 4 -> 2 while the topology runs."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from squall import Config, TopologyBuilder
from squall.spark.live_move import StepError
from tests.spark import helpers
from tests.spark import topo_module as tm

pytestmark = [pytest.mark.spark, pytest.mark.slow]


class PickyCount(tm.CountBolt):
    """A count whose third task and above refuse to prepare."""

    def prepare(self, conf, context, collector) -> None:
        if context.get_this_task_index() >= 2:
            raise ValueError("no third task")
        super().prepare(conf, context, collector)


def _wordcount(n, out, count=None):
    """sentences -> split (2) -> count (2, shuffle: every count task gets words; counts dedupe)."""
    builder = TopologyBuilder()
    builder.set_spout("sentences", tm.SentenceSpout(n, out, 300), parallelism=1)
    builder.set_bolt("split", tm.SplitBolt(), parallelism=2).shuffle_grouping("sentences")
    builder.set_bolt("count", count or tm.CountBolt(out), parallelism=2).shuffle_grouping("split")
    conf = Config()
    conf.set_num_workers(2)
    conf.set_message_timeout_secs(5)
    conf.set_max_spout_pending(64)
    conf["topology.disable.loadaware.messaging"] = True  # else a shuffle keeps to its own worker
    return conf, builder.create_topology()


def _pids(info):
    return {w["worker"]: (w["pid"], w["launch"], w["restarts"]) for w in info["workers"]}


def _writers(out_dir):
    """Count task ids that wrote at least one word (files count-<task>-<pid>.txt)."""
    return {int(f.name.split("-")[1]) for f in Path(out_dir).glob("count-*.txt") if f.stat().st_size}


@pytest.mark.timeout(240)
def test_a_stateless_bolt_grows_and_shrinks_live_on_spark(local_cluster, tmp_path):
    n = 2400
    out = str(tmp_path)
    conf, topology = _wordcount(n, out)
    local_cluster.submit_topology("wc-live", conf, topology)
    try:
        before = local_cluster.get_topology_info("wc-live")
        old_count = before["components"]["count"]["tasks"]
        helpers.wait_acked_at_least(out, 200, timeout=30)

        began = time.perf_counter()
        local_cluster.rebalance("wc-live", parallelism={"count": 4})
        grow_call = time.perf_counter() - began
        grown = local_cluster.get_topology_info("wc-live")
        rec = grown["rescale"]
        assert (rec["status"], rec["live"], rec["reason"]) == ("done", True, None), rec
        assert rec["components"] == {"count": [2, 4]} and rec["pause_ms"] >= 0
        new_count = grown["components"]["count"]["tasks"]
        assert new_count[:2] == old_count and len(new_count) == 4
        assert _pids(grown) == _pids(before)  # no worker process restarted
        added = set(new_count[2:])
        helpers.wait_until(lambda: added <= _writers(out), 30, "the new count tasks counting words")
        grow_pause = rec["pause_ms"]

        began = time.perf_counter()
        local_cluster.rebalance("wc-live", parallelism={"count": 2})
        shrink_call = time.perf_counter() - began
        shrunk = local_cluster.get_topology_info("wc-live")
        rec = shrunk["rescale"]
        assert (rec["status"], rec["live"], rec["reason"]) == ("done", True, None), rec
        assert rec["components"] == {"count": [4, 2]}
        assert shrunk["components"]["count"]["tasks"] == old_count
        assert _pids(shrunk) == _pids(before)
        acked = helpers.wait_all_acked(out, n, timeout=120)
        after = local_cluster.get_topology_info("wc-live")
    finally:
        local_cluster.kill_topology("wc-live", wait_secs=0)
    assert acked == set(range(n)), f"{n - len(acked)} spout messages never acked"
    assert tm.read_results(out)[1] == tm.expected_counts(n)  # every word counted (deduped)
    assert _pids(after) == _pids(before)
    print(f"pause_ms: grow {grow_pause}, shrink {rec['pause_ms']}; rebalance call: grow "
          f"{grow_call * 1000:.0f} ms, shrink {shrink_call * 1000:.0f} ms")


@pytest.mark.timeout(300)
def test_a_worker_killed_as_the_move_starts_ends_in_a_restart_under_the_new_plan(local_cluster, tmp_path):
    import os
    import signal

    n = 1500
    out = str(tmp_path)
    conf, topology = tm.wordcount(n, out, rate=300, timeout=5)
    local_cluster.submit_topology("wc-lost", conf, topology)
    try:
        info = local_cluster.get_topology_info("wc-lost")
        spout_task = info["components"]["sentences"]["tasks"][0]
        victim = next(w for w in info["workers"] if spout_task not in w["tasks"])
        helpers.wait_acked_at_least(out, 200, timeout=30)
        os.kill(victim["pid"], signal.SIGKILL)  # the master has not seen it die yet
        local_cluster.rebalance("wc-lost", parallelism={"count": 4})
        after = local_cluster.get_topology_info("wc-lost")
        acked = helpers.wait_all_acked(out, n, timeout=120)
    finally:
        local_cluster.kill_topology("wc-lost", wait_secs=0)
    rec = after["rescale"]
    print(f"reason: {rec['reason']}")
    assert (rec["status"], rec["live"]) == ("done", False), rec
    assert rec["reason"].startswith(f"worker {victim['worker']}") and rec["reason"].endswith(
        "the topology restarted under the new plan"), rec["reason"]
    assert len(after["components"]["count"]["tasks"]) == 4
    assert acked == set(range(n)), f"{n - len(acked)} spout messages never acked"
    assert tm.read_results(out)[1] == tm.expected_counts(n)


@pytest.mark.timeout(240)
def test_the_nimbus_topology_master_rescales_a_stateless_bolt_live(local_cluster, tmp_path):
    """``TopologyApp.rebalance`` (what ``squall rebalance`` reaches through Nimbus) over a real master."""
    from squall.runtime.plan import make_plan
    from squall.runtime.submission import prepare_conf, prepare_topology
    from squall.spark.app import TopologyApp
    from squall.spark.master import TopologyMaster
    from squall.spark.shipping import ship_user_modules

    n = 1500
    out = str(tmp_path)
    conf, topology = _wordcount(n, out)
    conf = prepare_conf(conf, topology)
    topology = prepare_topology(topology, conf)
    sc = local_cluster.spark_context
    ship_user_modules(sc)
    master = TopologyMaster("app-live", topology, conf, make_plan(topology, conf), sc)
    app = TopologyApp(None, None, "app-live", 1)  # type: ignore[arg-type]  # a live rescale stores nothing
    master.start()
    app.master = master
    try:
        before = master.info()
        helpers.wait_acked_at_least(out, 200, timeout=30)
        for old, new in ((2, 4), (4, 2)):
            answer = app.rebalance({"parallelism": {"count": new}})
            rec = answer["rescale"]
            assert (rec["status"], rec["live"], rec["reason"]) == ("done", True, None), rec
            assert rec["components"] == {"count": [old, new]} and answer["tasks"]["count"] == new
            assert app.record["parallelism"] == {"count": new} and app.record["rescale"] == rec
            assert app.master is master and _pids(master.info()) == _pids(before)
        acked = helpers.wait_all_acked(out, n, timeout=120)
    finally:
        master.stop()
    assert acked == set(range(n)), f"{n - len(acked)} spout messages never acked"
    assert tm.read_results(out)[1] == tm.expected_counts(n)


@pytest.mark.timeout(240)
def test_a_new_task_failing_to_prepare_leaves_the_old_routing(local_cluster, tmp_path):
    n = 900
    out = str(tmp_path)
    conf, topology = _wordcount(n, out, PickyCount(out))
    local_cluster.submit_topology("wc-picky", conf, topology)
    try:
        before = local_cluster.get_topology_info("wc-picky")
        helpers.wait_acked_at_least(out, 100, timeout=30)
        with pytest.raises(StepError, match="no third task"):
            local_cluster.rebalance("wc-picky", parallelism={"count": 4})
        info = local_cluster.get_topology_info("wc-picky")
        acked = helpers.wait_all_acked(out, n, timeout=120)
    finally:
        local_cluster.kill_topology("wc-picky", wait_secs=0)
    rec = info["rescale"]
    assert (rec["status"], rec["live"], rec["reason"]) == ("failed", True, "ValueError: no third task"), rec
    assert info["components"]["count"]["tasks"] == before["components"]["count"]["tasks"]
    assert _pids(info) == _pids(before)
    assert acked == set(range(n)), f"{n - len(acked)} spout messages never acked"
    assert _writers(out) <= set(before["components"]["count"]["tasks"])
    assert tm.read_results(out)[1] == tm.expected_counts(n)


@pytest.mark.timeout(300)
def test_a_worker_killed_after_a_live_rescale_comes_back_under_the_new_plan(local_cluster, tmp_path):
    import os
    import signal

    n = 2400
    out = str(tmp_path)
    conf, topology = _wordcount(n, out)
    local_cluster.submit_topology("wc-after", conf, topology)
    try:
        helpers.wait_acked_at_least(out, 200, timeout=30)
        local_cluster.rebalance("wc-after", parallelism={"count": 4})
        info = local_cluster.get_topology_info("wc-after")
        assert info["rescale"]["live"] is True
        spout_task = info["components"]["sentences"]["tasks"][0]
        victim = next(w for w in info["workers"] if spout_task not in w["tasks"])
        added = set(info["components"]["count"]["tasks"][2:]) & set(victim["tasks"])
        assert added  # the victim hosts one of the new count tasks
        os.kill(victim["pid"], signal.SIGKILL)
        back = helpers.wait_worker_back(local_cluster, "wc-after", victim["worker"], victim["pid"], 60)
        assert back["tasks"] == victim["tasks"]  # relaunched under the new plan
        # the new task runs again in the new process
        helpers.wait_until(lambda: all(
            Path(out, f"count-{t}-{back['pid']}.txt").exists() for t in added), 60, "the new task back")
        acked = helpers.wait_all_acked(out, n, timeout=120)
    finally:
        local_cluster.kill_topology("wc-after", wait_secs=0)
    assert acked == set(range(n)), f"{n - len(acked)} spout messages never acked"
    assert tm.read_results(out)[1] == tm.expected_counts(n)
