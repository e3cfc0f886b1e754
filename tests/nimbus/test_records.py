"""JStorm's records in the store (issue 31): task start times and heartbeats, task errors and
the assignment outlive the topology master.

A bolt reports one error per task and process. SIGKILL the topology master: while no master answers,
``squall info --tasks``, ``squall errors`` and the Storm UI REST API still show every task's
start time and last heartbeat and the errors reported before, from the store; once Nimbus
has relaunched the master, the old errors are still listed beside the new ones, and the
stored assignment (each worker's host and tasks) is the one from before the kill.
"""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.request
from pathlib import Path

import pytest

from squall.store import open_store
from squall.store.keys import task_errors_key, taskbeats_key
from squall.store.taskrecords import errors_from, tasks_from
from tests.nimbus.harness import Cli, NimbusProcess, cleanup_topologies, wait_for
from tests.nimbus.test_lifecycle import ok

pytestmark = [pytest.mark.spark, pytest.mark.slow]
NAME = "records"

SOURCE = '''\
"""A topology whose bolt reports one error per process."""
import os

from squall import Bolt, Config, Fields, Spout, TopologyBuilder


class Numbers(Spout):
    def open(self, conf, context, collector):
        self.collector, self.i = collector, 0

    def next_tuple(self):
        self.i += 1
        self.collector.emit([self.i], msg_id=self.i)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"))


class Complain(Bolt):
    def prepare(self, conf, context, collector):
        self.collector, self.told = collector, False

    def execute(self, tup):
        if not self.told:
            self.told = True
            self.collector.report_error(RuntimeError(f"complaint from pid {os.getpid()}"))
        self.collector.ack(tup)


def build_topology():
    builder = TopologyBuilder()
    builder.set_spout("numbers", Numbers(), parallelism=1)
    builder.set_bolt("complain", Complain(), parallelism=2).shuffle_grouping("numbers")
    conf = Config()
    conf.set_num_workers(2)
    conf.set_max_spout_pending(20)
    conf["squall.use.old.assignment"] = True
    return conf, builder.create_topology()
'''


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("nimbus-records")
    home = root / "home"
    nimbus = NimbusProcess(home, root, name="nimbus").start()
    cli = Cli(nimbus.url, home, root)
    try:
        yield nimbus, cli, root
    finally:
        cleanup_topologies(cli, home)
        nimbus.stop()


def component_errors(nimbus: NimbusProcess, topology_id: str) -> list[str]:
    """The component page's errors, as the UI reads them (with the token: errors are private)."""
    token = (nimbus.home / "nimbus.token").read_text().strip()
    req = urllib.request.Request(f"{nimbus.url}/api/v1/topology/{topology_id}/component/complain",
                                 headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return [e["message"] for e in json.load(resp)["componentErrors"]]


def workers_of(assignment: dict) -> list[tuple]:
    return [(w["worker"], w["host"], sorted(w["tasks"].items())) for w in assignment["workers"]]


@pytest.mark.timeout(600)
def test_task_records_errors_and_assignment_survive_a_master_relaunch(world):
    nimbus, cli, root = world
    path = Path(root / "records_topology.py")
    path.write_text(SOURCE)
    ok(cli("submit", str(path), "--name", NAME, timeout=240))

    def settled():
        info = cli.json("info", NAME)
        complain = [t for t in info["tasks"] if t["component"] == "complain"]
        told = [e for e in info["errors"] if "complaint from pid" in e["message"]]
        return info if len(complain) == 2 and told and info.get("assignment") else None
    before = wait_for(settled, 120, "both complain tasks heartbeating and an error reported")
    old_errors = sorted(e["message"] for e in before["errors"])
    started = {t["task"]: t["start_time"] for t in before["tasks"]}
    assert all(started.values()), before["tasks"]
    assignment = before["assignment"]
    assert assignment["epoch"] == before["epoch"]
    assert sorted(int(t) for w in assignment["workers"] for t in w["tasks"]) == sorted(
        t for c in before["components"].values() for t in c["tasks"])

    # the master writes its records once a second: kill it only once the store holds what it showed
    store = open_store(f"sqlite:{nimbus.home / 'nimbus.sqlite3'}")

    def stored() -> bool:
        beats = tasks_from(store.get(taskbeats_key(NAME)), time.time())
        errors = errors_from(store.get(task_errors_key(NAME)))
        return sorted(e["message"] for e in errors) == old_errors and \
            {t["task"]: t["start_time"] for t in beats} == started
    wait_for(stored, 30, "the master to write its task records to the store")
    store.close()
    os.kill(before["master"]["pid"], signal.SIGKILL)
    killed = time.time()
    # no master answers now: what the store holds
    down = cli.json("info", NAME)
    assert down["workers"] == [] and down["components"] == {}, "a master answered"
    assert sorted(e["message"] for e in down["errors"]) == old_errors
    assert {t["task"]: t["start_time"] for t in down["tasks"]} == started
    assert all(t["last_heartbeat"] <= killed for t in down["tasks"])
    table = ok(cli("info", NAME, "--tasks"))
    assert "STARTED" in table
    for task in started:
        assert any(line.split()[:1] == [str(task)] for line in table.splitlines()), table
    errors_out = ok(cli("errors", NAME))
    assert all(m in errors_out for m in old_errors), errors_out
    assert sorted(component_errors(nimbus, before["id"])) == old_errors  # the Storm UI REST API

    def relaunched():
        info = cli.json("info", NAME)
        return info if info["epoch"] > before["epoch"] and info["master"]["state"] == "RUNNING" \
            and info["workers"] and (info.get("assignment") or {}).get("epoch") == info["epoch"] else None
    after = wait_for(relaunched, 240, "Nimbus to relaunch the topology master")
    messages = [e["message"] for e in after["errors"]]
    assert all(m in messages for m in old_errors), messages
    assert workers_of(after["assignment"]) == workers_of(assignment)
    ui = component_errors(nimbus, after["id"])
    assert all(m in ui for m in old_errors), ui

    def restarted():
        tasks = cli.json("info", NAME)["tasks"]
        return tasks if all(t["start_time"] > killed for t in tasks) else None
    tasks = wait_for(restarted, 60, "every task's start time to be its new process's")
    assert {t["task"] for t in tasks} == set(started)
