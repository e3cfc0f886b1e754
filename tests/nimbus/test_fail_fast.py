"""Workers and masters fail fast, end to end under Nimbus on Spark (issue 41 item 4).

- A topology master silenced (SIGSTOP of its driver process) makes its workers stop as
  orphans within ``squall.spark.master.timeout.secs``, before Nimbus's own
  ``nimbus.master.timeout.secs`` would have it relaunched (and its process group killed).
- A master fenced by a newer epoch in the store stops its workers and exits.

A worker that ends closes its receive socket: its port no longer takes connections.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import pytest

from squall.nimbus.launcher import pid_alive
from squall.store import keys as K
from squall.store import open_store
from tests.nimbus.harness import Cli, NimbusProcess, cleanup_topologies, wait_for
from tests.nimbus.test_lifecycle import ok

pytestmark = [pytest.mark.spark, pytest.mark.slow]
MASTER_TIMEOUT = 5

SOURCE = f'''\
"""Numbers into a bolt, on two workers; the workers give their master {MASTER_TIMEOUT} s."""
from squall import Bolt, Config, Fields, Spout, TopologyBuilder


class Numbers(Spout):
    def open(self, conf, context, collector):
        self.collector, self.i = collector, 0

    def next_tuple(self):
        self.i += 1
        self.collector.emit([self.i], msg_id=self.i)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"))


class Sink(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.ack(tup)


def build_topology():
    builder = TopologyBuilder()
    builder.set_spout("numbers", Numbers(), parallelism=1)
    builder.set_bolt("sink", Sink(), parallelism=2).shuffle_grouping("numbers")
    conf = Config()
    conf.set_num_workers(2)
    conf.set_max_spout_pending(20)
    conf["squall.spark.master.timeout.secs"] = {MASTER_TIMEOUT}
    return conf, builder.create_topology()
'''


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("nimbus-fail-fast")
    home = root / "home"
    # Nimbus would relaunch a silent master (and kill its process group) after 60 s: the
    # workers must not wait for that
    nimbus = NimbusProcess(home, root, name="nimbus", conf={"nimbus.master.timeout.secs": "60"}).start()
    cli = Cli(nimbus.url, home, root)
    try:
        yield nimbus, cli, root
    finally:
        cleanup_topologies(cli, home)
        nimbus.stop()


def listening(address: str) -> bool:
    host, port = address.removeprefix("tcp://").rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
    except OSError:
        return False
    return True


def running(cli: Cli, root: Path, name: str) -> dict:
    path = root / f"{name}.py"
    path.write_text(SOURCE)
    ok(cli("submit", str(path), "--name", name, timeout=240))

    def up():
        info = cli.json("info", name)
        workers = info.get("workers") or []
        return info if len(workers) == 2 and all(w.get("state") == "RUNNING" and w.get("address")
                                                 for w in workers) else None
    info = wait_for(up, 120, f"both workers of {name} running")
    assert all(listening(w["address"]) for w in info["workers"])
    return info


@pytest.mark.timeout(600)
def test_the_workers_of_a_silenced_master_stop_as_orphans_within_the_master_timeout(world):
    nimbus, cli, root = world
    info = running(cli, root, "silenced")
    addresses = [w["address"] for w in info["workers"]]
    pid = info["master"]["pid"]
    os.kill(pid, signal.SIGSTOP)
    silenced = time.monotonic()
    try:
        wait_for(lambda: not any(listening(a) for a in addresses), MASTER_TIMEOUT + 15,
                 "the workers of the silenced master to stop")
        took = time.monotonic() - silenced
        # on their own: Nimbus would have relaunched the master (and killed its process group)
        # only after nimbus.master.timeout.secs, and the master is still stopped
        assert took < nimbus_master_timeout(nimbus), took
        assert pid_alive(pid)
    finally:
        os.kill(pid, signal.SIGCONT)
    ok(cli("kill", "silenced", "--wait", "0", timeout=120))


@pytest.mark.timeout(600)
def test_a_master_fenced_by_a_newer_epoch_stops_its_workers_and_exits(world):
    nimbus, cli, root = world
    info = running(cli, root, "fenced")
    addresses = [w["address"] for w in info["workers"]]
    pid = info["master"]["pid"]
    store = open_store(f"sqlite:{nimbus.home / 'nimbus.sqlite3'}")
    try:
        # a newer launch of the topology took over (as Nimbus's relaunch writes it)
        store.update(K.topology_key("fenced"), lambda rec: {**rec, "epoch": rec["epoch"] + 1})
    finally:
        store.close()
    wait_for(lambda: not any(listening(a) for a in addresses), 60, "the fenced master's workers to stop")
    wait_for(lambda: not pid_alive(pid), 60, "the fenced master to exit")
    ok(cli("kill", "fenced", "--wait", "0", timeout=120))


def nimbus_master_timeout(nimbus: NimbusProcess) -> float:
    return float(nimbus.conf["nimbus.master.timeout.secs"])
