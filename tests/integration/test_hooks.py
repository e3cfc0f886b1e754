"""Task hooks (Storm's ITaskHook) on LocalCluster: Storm's testHooks, auto hooks, errors."""

from __future__ import annotations

import pytest

from squall import InvalidTopologyError, LocalCluster, TopologyBuilder, TopologyStartError
from squall.api.tuple import DEFAULT_STREAM
from squall.runtime.plan import ACK_ACK, ACK_FAIL, ACK_INIT
from squall.testing import MockedSources, complete_topology
from tests.integration.components import RECORD, ListSpout
from tests.integration.hook_components import AsyncJudge, HooksBolt, JudgeBolt, MeteredSpout
from tests.integration.test_acking import conf, run_until_idle

RECORDING = "tests.integration.hook_components.RecordingHook"


def test_storms_hooks_bolt_sees_emits_acks_fails_and_executes():
    # Storm's TopologyIntegrationTest.testHooks: the acker messages count as emits too
    b = TopologyBuilder()
    b.set_spout("1", MeteredSpout(0))
    b.set_bolt("2", HooksBolt()).shuffle_grouping("1")
    result = complete_topology(b.create_topology(),
                               mocked_sources=MockedSources({"1": [[1], [1], [1], [1]]}),
                               conf=conf(workers=1))
    assert result.emitted("2") == [[0, 0, 0, 0], [2, 1, 0, 1], [4, 1, 1, 2], [6, 2, 1, 3]]
    assert result.acked("1") == [0, 2]
    assert result.failed("1") == [1, 3]


def judged(n=6, workers=1, judge=None, threaded=False, **extra):
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([[i] for i in range(n)], replay=False)).set_threaded(threaded)
    b.set_bolt("judge", judge or JudgeBolt()).shuffle_grouping("spout").set_threaded(threaded)
    return conf(workers=workers, **extra), b.create_topology()


@pytest.mark.parametrize("judge, threaded", [(JudgeBolt, False), (JudgeBolt, True), (AsyncJudge, False)])
def test_auto_task_hooks_see_every_event_with_storms_info(judge, threaded):
    c, topology = judged(judge=judge(), threaded=threaded, **{"topology.auto.task.hooks": [RECORDING]})
    with LocalCluster() as cluster:
        info = run_until_idle(cluster, topology, c, "hooks").info()
        cluster.kill_topology("hooks")
    spout, judge = info["components"]["spout"]["tasks"][0], info["components"]["judge"]["tasks"][0]
    assert sorted(RECORD["hook.prepare"]) == [("judge", judge), ("spout", spout)]  # not the acker
    assert sorted(RECORD["hook.cleanup"]) == [("judge", judge), ("spout", spout)]
    assert sorted(m for t, m, _ in RECORD["hook.spout_ack"]) == [0, 2, 4]
    assert sorted(m for t, m, _ in RECORD["hook.spout_fail"]) == [1, 3, 5]
    events = RECORD["hook.spout_ack"] + RECORD["hook.spout_fail"]
    assert all(t == spout and latency >= 0.0 for t, _, latency in events)
    assert sorted(v for t, (v,), _ in RECORD["hook.bolt_execute"]) == list(range(6))
    assert sorted(v for t, (v,), _ in RECORD["hook.bolt_ack"]) == [0, 2, 4]
    assert sorted(v for t, (v,), _ in RECORD["hook.bolt_fail"]) == [1, 3, 5]
    bolt_events = RECORD["hook.bolt_execute"] + RECORD["hook.bolt_ack"] + RECORD["hook.bolt_fail"]
    assert all(t == judge and latency is not None and latency >= 0.0 for t, _, latency in bolt_events)
    emits = RECORD["hook.emit"]
    acker = info["components"]["__acker"]["tasks"] if "__acker" in info["components"] else None
    data = [e for e in emits if e[2] == DEFAULT_STREAM]
    assert sorted(e[3] for e in data) == [[i] for i in range(6)]
    assert all(e[0] == "spout" and e[1] == spout and e[4] == [judge] for e in data)
    inits = [e for e in emits if e[2] == ACK_INIT]
    assert len(inits) == 6 and all(e[0] == "spout" and e[3][2] == spout for e in inits)
    assert sum(1 for e in emits if e[2] == ACK_ACK and e[0] == "judge") == 3
    assert sum(1 for e in emits if e[2] == ACK_FAIL and e[0] == "judge") == 3
    assert acker is None or all(e[4][0] in acker for e in emits if e[2].startswith("__ack"))


def test_without_ackers_a_spout_ack_hook_is_called_at_once():
    c, topology = judged(**{"topology.auto.task.hooks": [RECORDING], "topology.acker.executors": 0})
    with LocalCluster() as cluster:
        run_until_idle(cluster, topology, c, "hooks-noack")
        cluster.kill_topology("hooks-noack")
    assert len(RECORD["hook.bolt_execute"]) == 6
    assert sorted((m, latency) for _, m, latency in RECORD["hook.spout_ack"]) == [(i, 0.0) for i in range(6)]
    assert not [e for e in RECORD["hook.emit"] if e[2].startswith("__ack")]


def test_a_hook_that_raises_is_an_error_of_its_component_not_a_crash():
    c, topology = judged(**{"topology.auto.task.hooks": ["tests.integration.hook_components.ExplodingHook"],
                            "topology.max.error.report.per.interval": 10})  # all 6 shown, not Storm's 5
    with LocalCluster() as cluster:
        info = run_until_idle(cluster, topology, c, "hooks-boom").info()
        cluster.kill_topology("hooks-boom")
    assert sorted(m for _, m in RECORD["spout.acked"]) == [0, 2, 4]
    assert info["components"]["judge"]["errors"] == 6
    assert all(e["component"] == "judge" and "hook exploded" in e["message"] for e in info["errors"])


@pytest.mark.parametrize("paths, error, message", [
    ("tests.integration.hook_components.RecordingHook", InvalidTopologyError,
     r"topology.auto.task.hooks must be a list"),
    (["RecordingHook"], InvalidTopologyError, r"'RecordingHook'"),
    (["no_such_module.Hook"], TopologyStartError, r"cannot import module 'no_such_module'"),
    (["tests.integration.hook_components.Missing"], TopologyStartError, r"no attribute 'Missing'"),
    (["tests.integration.hook_components.NotConstructible"], TopologyStartError,
     r"NotConstructible' cannot be instantiated"),
])
def test_bad_auto_task_hooks_are_named_at_submit(paths, error, message):
    c, topology = judged(**{"topology.auto.task.hooks": paths})
    with LocalCluster() as cluster, pytest.raises(error, match=message):
        cluster.submit_topology("hooks-bad", c, topology)
