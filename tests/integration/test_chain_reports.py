"""Issue 41 item 6: every report about a chained component names the component whose code
runs, with its chain beside it (stuck tasks, errors, latencies, capacity, samples).

Chaining is on (the default) in every test; time is simulated where it matters: a bolt
spends simulated time in ``execute`` (``Spends``), and the stuck test moves the simulated
clock while a real thread is held on purpose.
"""

import time

import pytest

from squall import Config, Fields, LocalCluster, TopologyBuilder
from squall.runtime import clock
from squall.testing import FeederSpout, simulated_time
from tests.integration import chain_components as cc
from tests.integration.chain_components import Blocking, Spends, Step
from tests.integration.components import ListSpout


@pytest.fixture(autouse=True)
def _clear():
    cc.SEEN.clear()
    cc.GATE.clear()
    cc.ENTERED.clear()
    yield
    cc.GATE.set()
    cc.SEEN.clear()


def wait_real(predicate, timeout):
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.02)  # a real thread is held on purpose; the watchdog samples on real time
    return predicate()


def test_a_stuck_chained_bolt_is_reported_as_itself_beside_its_chain():
    """The bolt waiting on a database is named, not the spout whose next_tuple called it."""
    feeder = FeederSpout(Fields("value"))
    b = TopologyBuilder()
    b.set_spout("in", feeder, 1)
    b.set_bolt("map1", Step("map1"), 1).shuffle_grouping("in")
    b.set_bolt("db", Blocking("hold"), 1).shuffle_grouping("map1")
    conf = Config()
    conf.update({"topology.workers": 1, "squall.task.stuck.secs": 5})
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("t", conf, b.create_topology())
        feeder.feed(["hold"], msg_id=1)
        assert cc.ENTERED.wait(10)
        sim = clock.simulated()

        def reported():
            sim.advance(0.5)  # simulated: the held call lasts until the limit is passed
            return cluster.get_topology_info("t")["stuck"]

        assert wait_real(reported, 20)
        info = cluster.get_topology_info("t")
        assert info["chains"] == [["in", "map1", "db"]]
        (stuck,) = info["stuck"]
        assert (stuck["component"], stuck["method"]) == ("db", "execute")
        assert stuck["chain"] == ["in", "map1", "db"]
        assert "wait_on_the_database" in stuck["waits_in"] or "wait_on_the_database" in stuck["stack"]
        assert stuck["secs"] >= 5
        (error,) = [e for e in info["errors"] if "StuckTaskError" in e["message"]]
        assert error["component"] == "db" and error["chain"] == ["in", "map1", "db"]
        assert "of 'db' (chained: in -> map1 -> db) has been inside execute" in error["message"]
        cc.GATE.set()
        assert wait_real(lambda: feeder.acked == [1], 20)
        assert wait_real(lambda: cluster.get_topology_info("t")["stuck"] == [], 10)


def test_an_error_of_a_chained_bolt_names_it_beside_its_chain():
    b = TopologyBuilder()
    b.set_spout("in", ListSpout([[i] for i in range(10)], replay=False), 1)
    b.set_bolt("map1", Step("map1"), 1).shuffle_grouping("in")
    b.set_bolt("map2", Step("map2", raise_on=5), 1).shuffle_grouping("map1")
    conf = Config()
    conf.update({"topology.workers": 1})
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("t", conf, b.create_topology())
        cluster.advance_time(1)
        info = cluster.get_topology_info("t")
    assert info["chains"] == [["in", "map1", "map2"]]
    (error,) = info["errors"]
    assert error["component"] == "map2" and "map2 cannot take 5" in error["message"]
    assert error["chain"] == ["in", "map1", "map2"]
    assert info["components"]["map2"]["chain"] == ["in", "map1", "map2"]
    assert "chain" not in info["components"]["__acker"]


def test_latencies_and_capacity_of_a_chain_are_each_components_own():
    """``quick`` emits to ``slow`` in place: slow's 10 ms are slow's, not quick's too."""
    items = 50
    b = TopologyBuilder()
    b.set_spout("in", ListSpout([[i] for i in range(items)], replay=False), 1)
    b.set_bolt("quick", Spends(0), 1).shuffle_grouping("in")
    b.set_bolt("slow", Spends(10), 1).shuffle_grouping("quick")
    conf = Config()
    conf.update({"topology.workers": 1, "topology.stats.sample.rate": 1.0,
                 "squall.metrics.window.secs": 10})
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("t", conf, b.create_topology())
        assert wait_real(lambda: cluster.get_topology_info("t")["components"]["slow"]["executed"]
                         == items, 20)
        cluster.advance_time(10)  # one metrics window closes (capacity)
        info = cluster.get_topology_info("t")
    assert info["chains"] == [["in", "quick", "slow"]]
    quick, slow = info["components"]["quick"], info["components"]["slow"]
    assert slow["execute_latency_ms"] == pytest.approx(10.0)
    assert quick["execute_latency_ms"] == pytest.approx(0.0, abs=1e-6)
    assert slow["process_latency_ms"] == pytest.approx(10.0)
    assert quick["process_latency_ms"] == pytest.approx(0.0, abs=1e-6)
    assert slow["capacity"] == pytest.approx(items * 10.0 / 10_000)
    assert quick["capacity"] == pytest.approx(0.0, abs=1e-6)


def test_samples_of_a_chained_component_name_the_emitting_component():
    """The debug tap (Storm's event logger) sees each chained hop's emits as its own."""
    seen = []
    b = TopologyBuilder()
    b.set_spout("in", ListSpout([[i] for i in range(5)], replay=False), 1)
    b.set_bolt("map1", Step("map1"), 1).shuffle_grouping("in")
    b.set_bolt("map2", Step("map2"), 1).shuffle_grouping("map1")
    conf = Config()
    conf.update({"topology.workers": 1})
    with simulated_time(), LocalCluster(tap=lambda c, s, v, t: seen.append((c, v[0], t))) as cluster:
        cluster.submit_topology("t", conf, b.create_topology())
        cluster.advance_time(1)
        info = cluster.get_topology_info("t")
    assert info["chains"] == [["in", "map1", "map2"]]
    tasks = {c: info["components"][c]["tasks"] for c in ("in", "map1", "map2")}
    for comp in ("in", "map1", "map2"):
        assert sorted(v for c, v, _ in seen if c == comp) == list(range(5))
        assert {t for c, _, t in seen if c == comp} == set(tasks[comp])
