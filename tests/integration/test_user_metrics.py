"""User metrics on LocalCluster: per task and per component in get_topology_info."""

from __future__ import annotations

import pytest

from squall import LocalCluster, TopologyBuilder, TopologyStartError
from squall.testing import MockedSources, complete_topology, simulated_time, tracked_topology
from tests.integration.components import RECORD, ForwardBolt, ListSpout
from tests.integration.hook_components import HoldBolt, MeteredSpout, SummingBolt
from tests.integration.test_acking import conf, run_until_idle

N = 40


def metered():
    b = TopologyBuilder()
    b.set_spout("spout", MeteredSpout(N), 2)
    b.set_bolt("sum", SummingBolt(), 3).shuffle_grouping("spout")
    return b.create_topology()


def test_registered_metrics_appear_per_task_and_per_component():
    with LocalCluster() as cluster:
        info = run_until_idle(cluster, metered(), conf(workers=2), "metered").info()
        cluster.kill_topology("metered")
    assert info["components"]["spout"]["acked"] == N
    spout, bolt = info["components"]["spout"], info["components"]["sum"]
    m = spout["metrics"]
    assert m["emitted"] == {"type": "counter", "count": N}
    assert m["sizes"] == {"type": "histogram", "count": N, "min": 0.0, "max": N - 1.0,
                          "mean": (N - 1) / 2, "p50": 19.0, "p95": 37.0, "p99": 39.0}
    assert m["lines"]["type"] == "meter" and m["lines"]["count"] == 2 * N
    assert m["next"]["type"] == "timer" and m["next"]["count"] >= N and m["next"]["min_ms"] >= 0.0
    assert m["left"]["type"] == "gauge" and m["left"]["sum"] == 0
    assert sorted(m["left"]["values"]) == spout["tasks"]
    # each spout task emitted its half, and says so in its own figures
    for task in spout["tasks"]:
        mine = spout["by_task"][task]["metrics"]
        assert mine["emitted"]["count"] == N // 2
        assert mine["sizes"]["count"] == N // 2
        assert mine["left"] == {"type": "gauge", "value": 0}
        assert set(mine) == {"emitted", "sizes", "lines", "next", "left"}
    b = bolt["metrics"]
    assert b["seen"]["count"] == sum(bolt["by_task"][t]["metrics"]["seen"]["count"] for t in bolt["tasks"])
    assert b["values"]["count"] == N and b["values"]["max"] == N - 1.0
    assert b["total"]["sum"] == sum(range(N))
    assert b["broken"]["sum"] is None
    assert set(b["broken"]["errors"]) == set(bolt["tasks"])
    assert all(e.startswith("ZeroDivisionError") for e in b["broken"]["errors"].values())


def test_a_topology_without_user_metrics_shows_none():
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([[i] for i in range(5)]))
    b.set_bolt("fwd", ForwardBolt(), 2).shuffle_grouping("spout")
    result = complete_topology(b.create_topology(), MockedSources({"spout": [[i] for i in range(5)]}))
    for comp in ("spout", "fwd"):
        figures = result.info["components"][comp]
        assert figures["metrics"] == {}
        assert all(t["metrics"] == {} for t in figures["by_task"].values())


def test_registering_a_name_twice_fails_the_start_naming_it():
    class Twice(SummingBolt):
        def prepare(self, conf, context):
            context.register_counter("x")
            context.register_meter("x")

    b = TopologyBuilder()
    b.set_spout("spout", MeteredSpout(1))
    b.set_bolt("twice", Twice()).shuffle_grouping("spout")
    twice = r"component 'twice' task \d+: a metric named 'x' is already registered"
    with LocalCluster() as cluster, pytest.raises(TopologyStartError, match=twice):
        cluster.submit_topology("twice", conf(workers=1), b.create_topology())


def test_windows_rates_and_hook_latencies_follow_simulated_time():
    # inputs wait for the bolt's 5 s tick: every latency is exactly 5 s of simulated time
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([[i] for i in range(10)]))
    b.set_bolt("hold", HoldBolt()).shuffle_grouping("spout").add_configuration(
        "topology.tick.tuple.freq.secs", 5)
    c = conf(workers=1, **{"squall.metrics.window.secs": 10,
                           "topology.auto.task.hooks": ["tests.integration.hook_components.RecordingHook"]})
    with simulated_time(), LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "sim", c, b.create_topology())
        cluster.wait_quiet()  # everything emitted and held at t=0
        before = tracked.info()["components"]["hold"]["metrics"]
        cluster.advance_time(5)  # the tick acks them
        tracked.wait_idle()
        cluster.advance_time(5)  # t=10: the inputs' window closes, the previous one now
        at_10 = tracked.info()["components"]["hold"]["metrics"]
        cluster.advance_time(10)  # t=20: it is forgotten
        at_20 = tracked.info()["components"]["hold"]["metrics"]
    assert before["inputs"] == {"type": "meter", "count": 10, "rate": 0.0, "mean_rate": 0.0}
    assert before["sizes"]["max"] == 9.0
    assert at_10["inputs"] == {"type": "meter", "count": 10, "rate": 1.0, "mean_rate": 1.0}
    assert at_10["sizes"]["max"] == 9.0 and at_10["sizes"]["count"] == 10
    assert at_20["inputs"] == {"type": "meter", "count": 10, "rate": 0.0, "mean_rate": 0.5}
    assert at_20["sizes"] == {"type": "histogram", "count": 10, "min": None, "max": None, "mean": None,
                              "p50": None, "p95": None, "p99": None}
    assert sorted(m for _, m, _ in RECORD["hook.spout_ack"]) == list(range(10))
    assert {latency for _, _, latency in RECORD["hook.spout_ack"]} == {5000.0}
    acks = [(values, latency) for _, values, latency in RECORD["hook.bolt_ack"] if values]
    assert len(acks) == 10 and all(latency == pytest.approx(5000.0) for _, latency in acks)
