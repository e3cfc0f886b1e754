"""ShellBolt with a pystorm bolt and a plain Node.js bolt, on LocalCluster."""

from __future__ import annotations

import shutil
from collections import Counter

import pytest

from squall import Config, Fields, LocalCluster, TopologyBuilder
from squall.multilang import ShellBolt
from tests.integration.components import RECORD, CountBolt, ListSpout
from tests.multilang.helpers import PYTHON, RESOURCES, wait_for

SENTENCES = [["the cow jumped over the moon"], ["an apple a day"], ["four score and seven"]]
WORDS = Counter(w for (s,) in SENTENCES for w in s.split())


def topology(split, items, spout_tasks=1):
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout(items), spout_tasks)
    b.set_bolt("split", split, 2).shuffle_grouping("spout")
    b.set_bolt("count", CountBolt(), 2).fields_grouping("split", Fields("word"))
    return b.create_topology()


def counted():
    return Counter(w for _, w in RECORD["count.seen"])


def acked():
    return sorted(m for _, m in RECORD["spout.acked"])


def failed():
    return sorted(m for _, m, _ in RECORD["spout.failed"])


def pystorm_split(*args, **kw):
    return ShellBolt([PYTHON, "pystorm_split.py", *args], resources=RESOURCES,
                     outputs={"default": Fields("word")}, **kw)


@pytest.mark.parametrize("serializer", ["json", "msgpack"])
def test_pystorm_bolt_splits_and_acks_through_the_protocol(serializer):
    conf = Config()
    conf["topology.multilang.serializer"] = serializer
    with LocalCluster() as cluster:
        cluster.submit_topology("ml", conf, topology(pystorm_split(serializer), SENTENCES))
        assert wait_for(lambda: len(RECORD["spout.acked"]) == 3)
        assert wait_for(lambda: counted() == WORDS)
    assert acked() == [0, 1, 2]
    assert failed() == []


def test_pystorm_fail_reaches_the_spout_and_the_replay_succeeds_elsewhere():
    items = [["fail this one"], ["fine words here"]]
    conf = Config()
    with LocalCluster() as cluster:
        b = TopologyBuilder()
        b.set_spout("spout", ListSpout(items, replay=False), 1)
        b.set_bolt("split", pystorm_split(), 1).shuffle_grouping("spout")
        b.set_bolt("count", CountBolt(), 1).shuffle_grouping("split")
        cluster.submit_topology("ml", conf, b.create_topology())
        assert wait_for(lambda: failed() == [0] and acked() == [1])
    assert counted() == Counter({"fine": 1, "words": 1, "here": 1})


def test_error_command_is_reported_as_an_error_of_the_component():
    items = [["report this please"]]
    with LocalCluster() as cluster:
        cluster.submit_topology("ml", Config(), topology(pystorm_split(), items))
        assert wait_for(lambda: acked() == [0])
        errors = cluster.get_topology_info("ml")["errors"]
    assert any(e["component"] == "split" and "Shell Process Exception: Python RuntimeError" in e["message"]
               for e in errors)


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node (scripts/setup-node.sh)")
def test_node_bolt_splits_and_acks_with_task_ids_sent_back():
    node = ShellBolt(["node", "splitsentence.js"], resources=RESOURCES,
                     outputs={"default": Fields("word")})
    items = SENTENCES + [["fail me"]]
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout(items, replay=False), 1)
    b.set_bolt("split", node, 2).shuffle_grouping("spout")
    b.set_bolt("count", CountBolt(), 2).fields_grouping("split", Fields("word"))
    with LocalCluster() as cluster:
        cluster.submit_topology("node", Config(), b.create_topology())
        assert wait_for(lambda: acked() == [0, 1, 2] and failed() == [3])
        assert wait_for(lambda: counted() == WORDS)
        errors = cluster.get_topology_info("node")["errors"]
    assert errors == []  # every task-id list was expected by an emit (else the script throws)


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node (scripts/setup-node.sh)")
@pytest.mark.parametrize("max_pending", [1, 4])
def test_shellbolt_max_pending_bounds_the_tuples_in_the_subprocess(tmp_path, max_pending):
    log = tmp_path / "most"
    hold = ShellBolt(["node", "holdack.js"], resources=RESOURCES, env={"HOLD_LOG": str(log)})
    items = [[f"s{i}"] for i in range(40)]
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout(items, replay=False), 1)
    b.set_bolt("hold", hold, 1).shuffle_grouping("spout")
    conf = Config()
    conf["topology.shellbolt.max.pending"] = max_pending
    with LocalCluster() as cluster:
        cluster.submit_topology("hold", conf, b.create_topology())
        assert wait_for(lambda: acked() == list(range(40)))
    assert int(log.read_text()) == max_pending  # reached, never passed


def test_log_and_metrics_commands(caplog):
    import logging

    caplog.set_level(logging.INFO, logger="squall.multilang")
    items = [["log this line"], ["metric of five words"]]
    with LocalCluster() as cluster:
        cluster.submit_topology("ml", Config(), topology(pystorm_split(), items))
        assert wait_for(lambda: acked() == [0, 1])
        running = cluster._topologies["ml"]
        bolts = [t.bolt for w in running.workers for t in w.tasks.values()
                 if getattr(t, "component", None) == "split"]
    warnings = [r for r in caplog.records
                if r.name == "squall.multilang.split" and r.levelno == logging.WARNING]
    assert any("note: log this line" in r.getMessage() for r in warnings)
    assert {"words": 4} in [b.shell_metrics for b in bolts]


def test_a_shell_bolt_on_a_thread_of_its_own():
    # set_threaded(): call_soon must reach the task's own thread, not the loop's
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout(SENTENCES), 1)
    b.set_bolt("split", pystorm_split(), 2).shuffle_grouping("spout").set_threaded()
    b.set_bolt("count", CountBolt(), 2).fields_grouping("split", Fields("word"))
    with LocalCluster() as cluster:
        cluster.submit_topology("thr", Config(), b.create_topology())
        assert wait_for(lambda: acked() == [0, 1, 2])
        assert wait_for(lambda: counted() == WORDS)
        assert cluster.get_topology_info("thr")["errors"] == []
