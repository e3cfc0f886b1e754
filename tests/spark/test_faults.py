"""RELIABILITY rows on the Spark runtime (local[3]): crashes inside user code (C3, S2), kill
bursts (C4), a killed acker (A10). Checked with squall.testing.invariants: every message
acked, none lost, duplicates counted (C2)."""

from __future__ import annotations

import os
import random
import signal
import time

import pytest

from squall.testing.invariants import check
from tests.spark import topo_module as tm

pytestmark = [pytest.mark.spark, pytest.mark.slow]
KEYS, COUNT = 4, 300


def wait_complete(out_dir: str, timeout: float):
    deadline = time.monotonic() + timeout
    report = check(out_dir, KEYS, COUNT)
    while report.unacked and time.monotonic() < deadline:
        time.sleep(0.5)  # real worker processes
        report = check(out_dir, KEYS, COUNT)
    return report


@pytest.mark.timeout(240)
@pytest.mark.parametrize("mode", ["exit", "segfault"])
def test_c3_s2_a_worker_crashing_in_user_code_is_relaunched_and_loses_nothing(local_cluster, tmp_path, mode):
    out = str(tmp_path)
    conf, topology = tm.sequence(out, KEYS, COUNT, crash=mode)
    local_cluster.submit_topology(f"crash-{mode}", conf, topology)
    try:
        report = wait_complete(out, 150)
        info = local_cluster.get_topology_info(f"crash-{mode}")
    finally:
        local_cluster.kill_topology(f"crash-{mode}", wait_secs=0)
    assert os.path.exists(os.path.join(out, f"crashed-{mode}"))  # it really crashed
    assert sum(w["restarts"] for w in info["workers"]) >= 1
    assert report.lost == [] and report.unacked == [], str(report)
    print(report)


@pytest.mark.timeout(300)
def test_c4_a_burst_of_kills_leaves_the_topology_healthy_and_loses_nothing(local_cluster, tmp_path):
    out = str(tmp_path)
    conf, topology = tm.sequence(out, KEYS, COUNT)
    local_cluster.submit_topology("burst", conf, topology)
    rng = random.Random(4)
    kills = 0
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and kills < 6:
            time.sleep(rng.uniform(0.5, 2.0))
            workers = [w for w in local_cluster.get_topology_info("burst")["workers"]
                       if w["state"] == "RUNNING" and w["pid"]]
            if workers:
                os.kill(rng.choice(workers)["pid"], signal.SIGKILL)
                kills += 1
        report = wait_complete(out, 200)
        healthy, deadline = 0, time.monotonic() + 120
        while healthy < 5 and time.monotonic() < deadline:  # 5 healthy polls in a row
            workers = local_cluster.get_topology_info("burst")["workers"]
            healthy = healthy + 1 if all(w["state"] == "RUNNING" for w in workers) else 0
            time.sleep(0.5)
    finally:
        local_cluster.kill_topology("burst", wait_secs=0)
    assert kills >= 3
    assert healthy == 5, "the topology did not become healthy again"
    assert report.lost == [] and report.unacked == [], str(report)
    print(f"{kills} kills: {report}")


@pytest.mark.timeout(240)
def test_a10_an_acker_killed_with_live_roots_times_them_out_and_they_replay(local_cluster, tmp_path):
    out = str(tmp_path)
    # the relay holds each tuple 20 ms and the spout keeps 50 pending, so about 50 roots sit in
    # the acker whenever it is killed (pacing the spout instead left none when trees were fast)
    conf, topology = tm.sequence(out, KEYS, COUNT, ackers=1, hold=0.02)
    local_cluster.submit_topology("acker", conf, topology)
    try:
        info = local_cluster.get_topology_info("acker")
        acker = info["components"]["__acker"]["tasks"][0]
        spout = info["components"]["seq"]["tasks"][0]
        host = next(w for w in info["workers"] if acker in w["tasks"])
        if spout in host["tasks"]:
            pytest.skip("the plan put the spout with the only acker")
        deadline = time.monotonic() + 60
        while check(out, KEYS, COUNT).acked < 50 and time.monotonic() < deadline:
            time.sleep(0.2)
        os.kill(host["pid"], signal.SIGKILL)
        report = wait_complete(out, 150)
    finally:
        local_cluster.kill_topology("acker", wait_secs=0)
    print(f"acker killed: {report}")
    assert report.lost == [] and report.unacked == [], str(report)
    assert report.failed > 0, str(report)  # the roots it held timed out and were replayed
