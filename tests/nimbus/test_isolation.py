"""Isolated hosts and reserved workers across topologies under Nimbus (issue 41 item 9).

Each topology is a Spark application of its own; its master schedules its workers with
the other topologies of the same Spark cluster in view (their stored assignments, and the
hosts their configuration isolates). Here every executor is on 127.0.0.1 (``local[4]``,
SPARK_LOCAL_IP): ``gold`` isolates that host, so ``silver`` is refused while gold runs;
once gold is killed silver runs there, and then gold is refused, each refusal one line
naming the host and the other topology. Then ``squall.scheduler.reserved.workers`` counts
the workers of the topologies already on the cluster (the four slots of ``local[4]``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.nimbus.harness import Cli, NimbusProcess, cleanup_topologies, wait_for
from tests.nimbus.test_lifecycle import ok

pytestmark = [pytest.mark.spark, pytest.mark.slow]
HOST = "127.0.0.1"
ISOLATE = f"squall.scheduler.isolation={json.dumps({HOST: ['gold']})}"

SOURCE = '''\
"""Numbers to a bolt that acks them: one worker."""
from squall import Bolt, Config, Fields, Spout, TopologyBuilder


class Numbers(Spout):
    def open(self, conf, context, collector):
        self.collector, self.i = collector, 0

    def next_tuple(self):
        self.i += 1
        self.collector.emit([self.i], msg_id=self.i)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"))


class Ack(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.ack(tup)


def build_topology():
    builder = TopologyBuilder()
    builder.set_spout("numbers", Numbers(), parallelism=1)
    builder.set_bolt("ack", Ack(), parallelism=1).shuffle_grouping("numbers")
    conf = Config()
    conf.set_num_workers(1)
    conf.set_max_spout_pending(10)
    return conf, builder.create_topology()
'''


def refused_naming(proc, *words: str) -> str:
    """A refused submit: non-zero exit, one line on stderr naming ``words``."""
    err = proc.stderr.strip()
    assert proc.returncode != 0, f"submit was not refused: {proc.stdout}{proc.stderr}"
    assert len(err.splitlines()) == 1, f"not one line: {err!r}"
    for w in words:
        assert w in err, f"{w!r} not in {err!r}"
    return err


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("nimbus-isolation")
    home = root / "home"
    nimbus = NimbusProcess(home, root, name="nimbus").start()
    cli = Cli(nimbus.url, home, root)
    path = Path(root / "isolation_topology.py")
    path.write_text(SOURCE)
    try:
        yield cli, path
    finally:
        cleanup_topologies(cli, home)
        nimbus.stop()


def kill_all(cli: Cli) -> None:
    for t in cli.json("list"):
        ok(cli("kill", t["name"], "--wait", "0", timeout=120))


def stored_assignment(cli: Cli, name: str):
    return lambda: (cli.json("info", name).get("assignment") or {}).get("workers")


@pytest.mark.timeout(600)
def test_isolated_hosts_hold_across_topologies(world):
    cli, path = world
    ok(cli("submit", str(path), "--name", "gold", "--conf", ISOLATE, timeout=240))
    assert {w["host"] for w in wait_for(stored_assignment(cli, "gold"), 60, "gold's assignment")} == {HOST}
    # gold isolates the only host: silver may not use it
    refused_naming(cli("submit", str(path), "--name", "silver", timeout=240), HOST, "'gold'")
    assert [t["name"] for t in cli.json("list")] == ["gold"]

    ok(cli("kill", "gold", "--wait", "0", timeout=120))
    ok(cli("submit", str(path), "--name", "silver", timeout=240))
    wait_for(stored_assignment(cli, "silver"), 60, "silver's assignment")
    # silver's workers use the host gold would isolate: gold is refused
    refused_naming(cli("submit", str(path), "--name", "gold", "--conf", ISOLATE, timeout=240),
                   HOST, "'silver'", "isolated for 'gold'")
    assert [t["name"] for t in cli.json("list")] == ["silver"]


@pytest.mark.timeout(600)
def test_reserved_workers_count_the_other_topologies_workers(world):
    cli, path = world
    kill_all(cli)
    ok(cli("submit", str(path), "--name", "one", timeout=240))
    wait_for(stored_assignment(cli, "one"), 60, "one's assignment")
    # 3 workers + one's 1 + 1 reserved > local[4]'s 4 slots
    refused_naming(cli("submit", str(path), "--name", "three", "--conf", "topology.workers=3",
                       "--conf", "squall.scheduler.reserved.workers=1", timeout=240),
                   "'three' asks for 3 workers", "4 worker slots", "(one: 1)", "1 must stay free")
    # 2 + 1 + 1 fit
    ok(cli("submit", str(path), "--name", "two", "--conf", "topology.workers=2",
           "--conf", "squall.scheduler.reserved.workers=1", timeout=240))
    assert sorted(t["name"] for t in cli.json("list")) == ["one", "two"]
