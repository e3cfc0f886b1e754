"""ShellSpout with a pystorm spout: next/ack/fail/activate through the protocol."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from squall import Bolt, Config, Fields, LocalCluster, TopologyBuilder
from squall.multilang import ShellSpout
from squall.runtime import clock
from tests.integration.components import record
from tests.multilang.helpers import PYTHON, RESOURCES, wait_for


class FailOnceBolt(Bolt):
    """Fails each sentence whose number is in ``fail`` the first time it sees it."""

    def __init__(self, fail=()):
        self.fail = set(fail)

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.seen = set()

    def execute(self, tup):
        n = int(tup[0].split()[1])
        record("bolt.seen", n)
        if n in self.fail and n not in self.seen:
            self.seen.add(n)
            self.collector.fail(tup)
        else:
            self.collector.ack(tup)


def log_lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def spout(log, count, *args):
    return ShellSpout([PYTHON, "pystorm_spout.py", *args], resources=RESOURCES,
                      outputs={"default": Fields("sentence")},
                      env={"SPOUT_LOG": str(log), "SPOUT_COUNT": str(count)})


@pytest.mark.parametrize("serializer", ["json", "msgpack"])
def test_pystorm_spout_gets_acks_and_fails_and_replays(tmp_path, serializer):
    log = tmp_path / "spout.log"
    b = TopologyBuilder()
    b.set_spout("spout", spout(log, 10, serializer), 1)
    b.set_bolt("bolt", FailOnceBolt(fail=[3, 7]), 1).shuffle_grouping("spout")
    conf = Config()
    conf["topology.multilang.serializer"] = serializer
    with LocalCluster() as cluster:
        cluster.submit_topology("sp", conf, b.create_topology())
        want = {f"ack {i}" for i in range(10)}
        assert wait_for(lambda: want <= set(log_lines(log)))
    lines = log_lines(log)
    assert lines[0] == "activate"
    assert sorted(line for line in lines if line.startswith("fail")) == ["fail 3", "fail 7"]
    assert sorted(line for line in lines if line.startswith("ack")) == sorted(want)  # once each


def test_deactivate_and_activate_reach_the_subprocess(tmp_path):
    log = tmp_path / "spout.log"
    b = TopologyBuilder()
    b.set_spout("spout", spout(log, 3), 1)
    b.set_bolt("bolt", FailOnceBolt(), 1).shuffle_grouping("spout")
    with LocalCluster() as cluster:
        cluster.submit_topology("sp", Config(), b.create_topology())
        assert wait_for(lambda: "ack 2" in log_lines(log))
        cluster.deactivate("sp")
        assert wait_for(lambda: "deactivate" in log_lines(log))
        cluster.activate("sp")
        assert wait_for(lambda: log_lines(log).count("activate") == 2)


def test_a_spout_subprocess_that_owes_a_sync_too_long_is_restarted(tmp_path):
    # the subprocess is stopped with SIGSTOP: it owes the sync of its current "next"
    log = tmp_path / "spout.log"
    pids = tmp_path / "pids"
    pids.mkdir()
    wrapper = ("import os, runpy, sys; open(os.path.join(sys.argv[1], str(os.getpid())), 'w').close(); "
               "sys.argv = ['pystorm_spout.py']; runpy.run_path('pystorm_spout.py', run_name='__main__')")
    s = ShellSpout([PYTHON, "-c", wrapper, str(pids)], resources=RESOURCES,
                   outputs={"default": Fields("sentence")},
                   env={"SPOUT_LOG": str(log), "SPOUT_COUNT": "3"})
    b = TopologyBuilder()
    b.set_spout("spout", s, 1)
    b.set_bolt("bolt", FailOnceBolt(), 1).shuffle_grouping("spout")
    conf = Config()
    conf["topology.subprocess.timeout.secs"] = 5
    with clock.simulation() as sim, LocalCluster() as cluster:
        cluster.submit_topology("sp", conf, b.create_topology())
        assert wait_for(lambda: "ack 2" in log_lines(log))
        (first,) = os.listdir(pids)
        os.kill(int(first), signal.SIGSTOP)  # the subprocess this test started
        time.sleep(1.2)  # a question counts as unanswered after a real second too
        for _ in range(7):
            sim.advance(1)
            time.sleep(0.05)
        assert wait_for(lambda: len(os.listdir(pids)) == 2)
        errors = [e for e in cluster.get_topology_info("sp")["errors"]
                  if "SubprocessDiedError" in e["message"]]
        # the new subprocess starts over: its sentences are emitted and acked again
        assert wait_for(lambda: log_lines(log).count("ack 2") == 2)
    assert len(errors) == 1 and "owes a sync for 'next'" in errors[0]["message"]
