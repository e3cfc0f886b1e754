"""A worker's memory limit on Spark (issue 41, item 8): a bolt that allocates without bound gets its
worker stopped for memory, the info record and ``squall info`` say so, the worker is relaunched,
and every message of the acked spout is processed (replayed), none lost."""

from __future__ import annotations

import argparse
import os
import time

import pytest

from squall.testing.invariants import check
from tests.spark import memory_topology as mt

pytestmark = [pytest.mark.spark, pytest.mark.slow]
KEYS, COUNT = 4, 300
# small slots and base, so the limit sits close above an idle worker (71-103 MB measured)
SLOT_MB, BASE_MB, ASK_MB = 32, 100, 64


def memory_stopped(info: dict) -> list[dict]:
    return [w for w in info["workers"] if w.get("memory_stops")]


@pytest.mark.timeout(300)
def test_a_bolt_allocating_without_bound_gets_its_worker_stopped_for_memory_and_relaunched(
        local_cluster, tmp_path, monkeypatch, capsys):
    out = str(tmp_path)
    conf, topology = mt.hog_topology(out, KEYS, COUNT, ask_mb=ASK_MB)
    conf["squall.scheduler.memory.slot.mb"] = SLOT_MB
    conf["squall.spark.worker.memory.base.mb"] = BASE_MB
    local_cluster.submit_topology("hog", conf, topology)
    try:
        info = local_cluster.get_topology_info("hog")
        deadline = time.monotonic() + 90
        while not memory_stopped(info) and time.monotonic() < deadline:
            time.sleep(0.5)
            info = local_cluster.get_topology_info("hog")
        stopped = memory_stopped(info)
        rss = [(w["worker"], w.get("rss_mb")) for w in info["workers"]]
        assert stopped, f"no worker was stopped for memory: {rss}"
        report = check(out, KEYS, COUNT)
        deadline = time.monotonic() + 150
        while report.unacked and time.monotonic() < deadline:
            time.sleep(0.5)
            report = check(out, KEYS, COUNT)
        deadline = time.monotonic() + 60
        info = local_cluster.get_topology_info("hog")
        while any(w["state"] != "RUNNING" for w in info["workers"]) and time.monotonic() < deadline:
            time.sleep(0.5)
            info = local_cluster.get_topology_info("hog")
    finally:
        local_cluster.kill_topology("hog", wait_secs=0)
    hog_pid = int(open(os.path.join(out, "hogged")).read())
    (worker,) = memory_stopped(info)
    # one hog task and one of every other component (or the spout): the limit is their asks + the base
    tasks = [info_component(info, t) for t in worker["tasks"]]
    expected = BASE_MB + sum(ASK_MB if c == "hog" else SLOT_MB for c in tasks if c != "__system")
    assert worker["memory_limit_mb"] == expected
    assert worker["memory_stops"] == 1
    assert worker["memory_stop"].startswith("stopped for memory: RSS ")
    assert worker["memory_stop"].endswith(f"over its limit of {expected} MB")
    rss = float(worker["memory_stop"].split("RSS ")[1].split(" MB")[0])
    assert expected < rss < 2 * expected  # caught by the RSS check, before the rlimit backstop
    assert worker["last_error"] == worker["memory_stop"]
    assert worker["restarts"] >= 1 and worker["state"] == "RUNNING" and worker["pid"] != hog_pid
    # every message processed and acked, the one the hog held too (replayed: by its timeout, or
    # by the spout's next process when the spout was in the stopped worker)
    assert report.lost == [] and report.unacked == [], str(report)
    # squall info shows it
    from squall.cli.commands import info as info_cmd

    class Client:
        def get(self, path):
            return {**info, "master": {}, "version": 1}
    monkeypatch.setattr(info_cmd, "client", lambda args: Client())
    info_cmd.run(argparse.Namespace(name="hog", json=False, conf=False, tasks=False))
    printed = capsys.readouterr().out
    assert f"memory: worker {worker['worker']} stopped 1 time(s) over its limit; last: stopped for memory" \
        in printed
    print(f"{worker['memory_stop']}; {report}")


def info_component(info: dict, task: int) -> str:
    return next(c for c, f in info["components"].items() if task in f["tasks"]) \
        if any(task in f["tasks"] for f in info["components"].values()) else "__system"
