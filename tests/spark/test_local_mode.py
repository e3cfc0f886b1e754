"""SparkCluster on local[3]: word count, a killed worker, capacity and unpickling errors."""

from __future__ import annotations

import os
import signal

import pytest

from squall import Config, TopologyBuilder, TopologyStartError
from squall.spark import InsufficientSlotsError
from tests.spark import helpers
from tests.spark import topo_module as tm

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.mark.timeout(180)
def test_wordcount_is_exact(local_cluster, tmp_path):
    n = 600
    conf, topology = tm.wordcount(n, str(tmp_path))
    local_cluster.submit_topology("wc-local", conf, topology)
    try:
        acked = helpers.wait_all_acked(str(tmp_path), n, timeout=60)
        info = local_cluster.get_topology_info("wc-local")
    finally:
        local_cluster.kill_topology("wc-local", wait_secs=0)
    assert acked == set(range(n))
    _, counts, _ = tm.read_results(str(tmp_path))
    assert counts == tm.expected_counts(n)
    assert info["status"] == "ACTIVE"
    assert [w["worker"] for w in info["workers"]] == [0, 1]
    assert all(w["state"] == "RUNNING" and w["pid"] != os.getpid() for w in info["workers"])
    assert local_cluster.list_topologies() == []


@pytest.mark.timeout(240)
def test_sigkill_worker_loses_nothing(local_cluster, tmp_path):
    n = 3000
    conf, topology = tm.wordcount(n, str(tmp_path), rate=400, timeout=4)
    local_cluster.submit_topology("wc-kill", conf, topology)
    try:
        before = local_cluster.get_topology_info("wc-kill")["workers"]
        spout_task = _spout_task(local_cluster, "wc-kill")
        # kill the worker without the spout: the spout's pending tuples time out and replay
        victim = next(w for w in before if spout_task not in w["tasks"])
        survivor = next(w for w in before if w is not victim)
        helpers.wait_acked_at_least(str(tmp_path), 300, timeout=30)
        os.kill(victim["pid"], signal.SIGKILL)
        back = helpers.wait_worker_back(local_cluster, "wc-kill", victim["worker"], victim["pid"], 60)
        acked = helpers.wait_all_acked(str(tmp_path), n, timeout=120)
        after = local_cluster.get_topology_info("wc-kill")
    finally:
        local_cluster.kill_topology("wc-kill", wait_secs=0)
    assert acked == set(range(n)), f"{n - len(acked)} spout messages never acked"
    _, counts, duplicates = tm.read_results(str(tmp_path))
    assert counts == tm.expected_counts(n), "a word was lost"
    assert back["restarts"] == 1 and back["launch"] == victim["launch"] + 1
    still = after["workers"][survivor["worker"]]
    assert (still["pid"], still["launch"], still["attempt"], still["restarts"]) == (
        survivor["pid"], survivor["launch"], survivor["attempt"], 0), "the other worker restarted"
    print(f"duplicates after the kill: {duplicates}")


def _spout_task(cluster, name):
    return cluster.get_topology_info(name)["components"]["sentences"]["tasks"][0]


@pytest.mark.timeout(120)
def test_too_many_workers_names_the_slots(local_cluster, tmp_path):
    conf, topology = tm.wordcount(10, str(tmp_path), workers=4)
    with pytest.raises(InsufficientSlotsError, match=r"asks for 4 workers .* has 3 task slots"):
        local_cluster.submit_topology("wc-big", conf, topology)
    assert local_cluster.list_topologies() == []


@pytest.mark.timeout(120)
def test_component_failing_to_unpickle_on_executor_is_named(local_cluster, tmp_path):
    builder = TopologyBuilder()
    builder.set_spout("sentences", tm.SentenceSpout(10, str(tmp_path)))
    builder.set_bolt("fussy", tm.UnpicklableBolt()).shuffle_grouping("sentences")
    conf = Config()
    conf.set_num_workers(1)
    with pytest.raises(TopologyStartError, match=r"component 'fussy' .*cannot be unpickled.*refuses"):
        local_cluster.submit_topology("wc-fussy", conf, builder.create_topology())
    assert local_cluster.list_topologies() == []


@pytest.mark.timeout(180)
def test_deactivate_activate_and_rebalance(local_cluster, tmp_path):
    n = 400
    conf, topology = tm.wordcount(n, str(tmp_path), rate=200)
    conf["squall.topology.start.inactive"] = True
    local_cluster.submit_topology("wc-life", conf, topology)
    try:
        assert local_cluster.get_topology_info("wc-life")["status"] == "INACTIVE"
        assert tm.read_results(str(tmp_path))[0] == set()
        local_cluster.activate("wc-life")
        helpers.wait_acked_at_least(str(tmp_path), 50, timeout=30)
        local_cluster.rebalance("wc-life", num_workers=1, parallelism={"count": 1})
        info = local_cluster.get_topology_info("wc-life")
        assert info["num_workers"] == 1 and info["components"]["count"]["tasks"] == [1]
        rec = info["rescale"]  # fewer workers: the workers restart, and the record says why
        assert (rec["status"], rec["live"], rec["reason"]) == ("done", False,
                                                               "fewer workers (2 -> 1) need a restart")
        acked = helpers.wait_all_acked(str(tmp_path), n, timeout=60)
    finally:
        local_cluster.kill_topology("wc-life", wait_secs=0)
    assert acked == set(range(n))
    assert tm.read_results(str(tmp_path))[1] == tm.expected_counts(n)


@pytest.mark.timeout(180)
def test_hung_worker_is_declared_dead_and_relaunched(local_cluster, tmp_path):
    n = 1500
    conf, topology = tm.wordcount(n, str(tmp_path), rate=300, timeout=4)
    conf["squall.spark.worker.heartbeat.timeout.secs"] = 3
    local_cluster.submit_topology("wc-hung", conf, topology)
    frozen = None
    try:
        info = local_cluster.get_topology_info("wc-hung")
        spout_task = info["components"]["sentences"]["tasks"][0]
        victim = next(w for w in info["workers"] if spout_task not in w["tasks"])
        helpers.wait_acked_at_least(str(tmp_path), 100, timeout=30)
        frozen = victim["pid"]
        os.kill(frozen, signal.SIGSTOP)  # alive but silent: only the heartbeat timeout sees it
        back = helpers.wait_worker_back(local_cluster, "wc-hung", victim["worker"], frozen, 60)
        assert "no heartbeat" in back["last_error"]
        acked = helpers.wait_all_acked(str(tmp_path), n, timeout=90)
    finally:
        if frozen is not None:
            try:
                os.kill(frozen, signal.SIGKILL)  # Spark kills it on cancel; make sure
            except ProcessLookupError:
                pass
        local_cluster.kill_topology("wc-hung", wait_secs=0)
    assert acked == set(range(n))
    assert tm.read_results(str(tmp_path))[1] == tm.expected_counts(n)


@pytest.mark.timeout(180)
def test_deactivate_is_a_contract_on_spark_and_submit_inactive_is_public(local_cluster, tmp_path):
    """Issue 10: after deactivate returns, every spout was told and no next_tuple starts;
    submitted inactive, no next_tuple until activate. Checked inside the spouts."""
    import time

    conf, topology = tm.sleepy_spouts(str(tmp_path), spouts=3, workers=2)
    local_cluster.submit_topology("sleepy", conf, topology, inactive=True)
    try:
        assert local_cluster.get_topology_info("sleepy")["status"] == "INACTIVE"
        time.sleep(0.5)  # real worker processes: give them time to misbehave
        assert all(e == [] for e in tm.read_events(str(tmp_path)).values())
        local_cluster.activate("sleepy")
        helpers.wait_until(lambda: sum(len(e) for e in tm.read_events(str(tmp_path)).values()) > 12, 30)
        local_cluster.deactivate("sleepy")
        returned = time.time()
        events = tm.read_events(str(tmp_path))
        assert sorted(events) == [2, 3, 4]
        assert all(any(w == "deactivate" for w, _ in e) for e in events.values()), events
        time.sleep(0.5)
        events = tm.read_events(str(tmp_path))
        late = [(task, w, t - returned) for task, e in events.items() for w, t in e
                if w in ("call", "violation") and t > returned]
        assert late == []
        assert not any(w == "violation" for e in events.values() for w, _ in e)
    finally:
        local_cluster.kill_topology("sleepy", wait_secs=0)


@pytest.mark.timeout(180)
def test_async_and_threaded_bolts_on_spark_are_exact(local_cluster, tmp_path):
    """Issue 22 on the Spark runtime: an AsyncBolt split and threaded count tasks in the
    executors' worker processes; every sentence acked, every word counted."""
    n = 400
    conf, topology = tm.wordcount(n, str(tmp_path), waiting=True)
    local_cluster.submit_topology("wc-waiting", conf, topology)
    try:
        acked = helpers.wait_all_acked(str(tmp_path), n, timeout=90)
        info = local_cluster.get_topology_info("wc-waiting")
    finally:
        local_cluster.kill_topology("wc-waiting", wait_secs=0)
    assert acked == set(range(n))
    assert tm.read_results(str(tmp_path))[1] == tm.expected_counts(n)
    assert info["errors"] == [] and info["stuck"] == []
