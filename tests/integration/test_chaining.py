"""Operator chaining on LocalCluster: the same results and tree outcomes as unchained runs.

Each test runs the same topology with ``squall.chaining`` on and off and compares what the
spouts were told (acked, failed) and what the bolts emitted; the chained run must also have
actually fused (``chains`` in the info, the hop executed inside the spout's ``next_tuple``).
"""

import pytest

from squall import Config, LocalCluster, TopologyBuilder
from squall.testing import simulated_time, tracked_topology
from tests.integration import chain_components as cc
from tests.integration.chain_components import HoldStep, Step
from tests.integration.components import RECORD, ListSpout

CHAIN = ["spout", "map1", "map2", "map3"]


@pytest.fixture(autouse=True)
def _clear():
    cc.SEEN.clear()
    yield
    cc.SEEN.clear()


def pipeline(n=2, *, items=100, middle=None, replay=False):
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([[i] for i in range(items)], replay=replay), n)
    b.set_bolt("map1", Step("map1"), n).shuffle_grouping("spout")
    b.set_bolt("map2", middle or Step("map2"), n).local_or_shuffle_grouping("map1")
    b.set_bolt("map3", Step("map3"), n).shuffle_grouping("map2")
    return b.create_topology()


def conf(chaining, workers=2, **extra):
    c = Config()
    c.set_num_workers(workers)
    c["squall.chaining"] = chaining
    c.update(extra)
    return c


def run(topology, chaining, workers=2, **extra):
    """Run until every tree is decided; what the spouts heard and the info."""
    RECORD.clear()
    cc.SEEN.clear()
    with LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "chain", conf(chaining, workers, **extra), topology)
        tracked.wait_idle(timeout=60)
        info = tracked.info()
    acked = sorted(m for _, m in RECORD["spout.acked"])
    failed = sorted(m for _, m, _ in RECORD["spout.failed"])
    return acked, failed, info, {k: list(v) for k, v in cc.SEEN.items()}


@pytest.mark.parametrize("workers", [1, 2])
def test_chained_and_unchained_runs_give_the_same_results(workers):
    on = run(pipeline(), True, workers)
    off = run(pipeline(), False, workers)
    for acked, failed, _, seen in (on, off):
        assert acked == list(range(100)) and failed == []
        assert sorted(seen["map3.out"]) == list(range(100))
    assert on[2]["chains"] == [CHAIN]
    assert off[2]["chains"] == []


def test_a_chained_hop_runs_inside_the_upstream_call_and_an_unchained_one_does_not():
    on = run(pipeline(), True)[3]
    off = run(pipeline(), False)[3]
    for step in ("map1", "map2", "map3"):
        assert set(on[f"{step}.inside_next_tuple"]) == {True}
        assert set(off[f"{step}.inside_next_tuple"]) == {False}


def test_untracked_tuples_pass_the_chain_in_place_with_ackers_off():
    """No ackers: the tuples carry no tree and take the chain's other delivery (``deliver``)."""
    _, _, info, seen = run(pipeline(), True, **{"topology.acker.executors": 0})
    assert info["chains"] == [CHAIN]
    assert sorted(seen["map3.out"]) == list(range(100))
    for step in ("map1", "map2", "map3"):
        assert set(seen[f"{step}.inside_next_tuple"]) == {True}
        assert info["components"][step]["executed"] == 100


def test_each_chained_bolt_keeps_its_own_metrics():
    _, _, info, _ = run(pipeline(), True)
    comps = info["components"]
    for step in ("map1", "map2", "map3"):
        assert comps[step]["executed"] == 100
        assert comps[step]["acked"] == 100
        assert comps[step]["failed"] == 0
        assert comps[step]["execute_latency_ms"] >= 0.0
        assert len(comps[step]["tasks"]) == 2
    assert comps["spout"]["acked"] == 100
    assert comps["spout"]["complete_latency_ms"] > 0.0


@pytest.mark.parametrize("chaining", [True, False])
def test_a_failure_in_the_middle_of_a_chain_fails_the_tree(chaining):
    acked, failed, info, seen = run(pipeline(middle=Step("map2", fail_on=7)), chaining)
    assert failed == [7]
    assert acked == [i for i in range(100) if i != 7]
    assert 7 not in seen["map3.out"]
    assert info["components"]["map2"]["failed"] == 1
    assert info["errors"] == []  # a plain FailedException is not reported
    assert info["chains"] == ([CHAIN] if chaining else [])


@pytest.mark.parametrize("chaining", [True, False])
def test_an_exception_in_the_middle_of_a_chain_fails_the_tree_and_is_reported(chaining):
    acked, failed, info, seen = run(pipeline(middle=Step("map2", raise_on=5)), chaining)
    assert failed == [5]
    assert acked == [i for i in range(100) if i != 5]
    [error] = info["errors"]
    assert error["component"] == "map2"
    assert "map2 cannot take 5" in error["message"]
    assert info["components"]["map1"]["failed"] == 0


@pytest.mark.parametrize("chaining", [True, False])
def test_a_failed_tree_is_replayed_and_then_acked(chaining):
    acked, failed, _, seen = run(pipeline(items=20, middle=Step("map2", fail_on=3), replay=True), chaining,
                                 **{"squall.spout.max.retries": 2})
    # fails each time: given up after the retries and acked (E1), the rest acked once
    assert failed == [3, 3]
    assert acked == list(range(20))


@pytest.mark.parametrize("chaining", [True, False])
def test_a_tuple_held_in_the_middle_of_a_chain_times_out(chaining):
    topology = pipeline(items=10, middle=HoldStep(hold=4))
    RECORD.clear()
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("hold", conf(chaining, **{"topology.message.timeout.secs": 10}), topology)
        cluster.advance_time(1)
        cluster.wait_quiet()
        assert sorted(m for _, m in RECORD["spout.acked"]) == [i for i in range(10) if i != 4]
        cluster.advance_time(9)
        assert RECORD["spout.failed"] == []
        cluster.advance_time(12)
        assert [m for _, m, _ in RECORD["spout.failed"]] == [4]
        info = cluster.get_topology_info("hold")
    assert info["chains"] == ([CHAIN] if chaining else [])
    assert cc.SEEN["hold.held"] == [4]


def test_chaining_off_for_one_bolt_splits_the_chain():
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([[i] for i in range(30)], replay=False), 2)
    b.set_bolt("map1", Step("map1"), 2).shuffle_grouping("spout")
    b.set_bolt("map2", Step("map2"), 2).shuffle_grouping("map1").add_configuration("squall.chaining", False)
    b.set_bolt("map3", Step("map3"), 2).shuffle_grouping("map2")
    acked, _, info, seen = run(b.create_topology(), True)
    assert acked == list(range(30))
    assert info["chains"] == [["map2", "map3"], ["spout", "map1"]]
    assert set(seen["map1.inside_next_tuple"]) == {True}
    assert set(seen["map2.inside_next_tuple"]) == {False}


@pytest.mark.parametrize("chaining", [True, False])
def test_trees_that_complete_in_the_chained_call_are_acked_once_without_the_acker(chaining):
    acked, failed, info, _ = run(pipeline(), chaining)
    assert acked == list(range(100)) and failed == []  # each message acked once
    comps = info["components"]
    spout = comps["spout"]
    assert spout["acked"] == 100
    # the timed trees' emit -> completion latency recorded, whichever path decided them:
    # one in 20 per spout task (topology.stats.sample.rate 0.05), each task's 1st, 21st, 41st
    assert sum(spout["histograms"]["complete"]["counts"]) == 2 * 3
    assert spout["complete_latency_ms"] > 0.0
    # chained, no tree reached the acker's ledger; unchained, four messages per tree
    assert comps["__acker"]["executed"] == (0 if chaining else 400)
