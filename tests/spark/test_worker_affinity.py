"""``squall.spark.worker.cpu.pin`` on a local master: each worker's whole process on one core."""

from __future__ import annotations

import os

import pytest

from tests.spark import helpers
from tests.spark import topo_module as tm

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def masks(pid: int) -> dict[int, set[int]]:
    """Each thread of ``pid`` -> the cores it may run on."""
    return {int(t): os.sched_getaffinity(int(t)) for t in os.listdir(f"/proc/{pid}/task")}


def run_and_read_masks(cluster, name: str, out: str, pin: bool | None) -> dict[int, dict[int, set[int]]]:
    n = 200
    os.makedirs(out)
    conf, topology = tm.wordcount(n, out)
    if pin is not None:
        conf["squall.spark.worker.cpu.pin"] = pin
    cluster.submit_topology(name, conf, topology)
    try:
        helpers.wait_all_acked(out, n, timeout=60)
        info = cluster.get_topology_info(name)
        return {w["worker"]: masks(w["pid"]) for w in info["workers"]}
    finally:
        cluster.kill_topology(name, wait_secs=0)


@pytest.mark.timeout(240)
def test_pinned_workers_run_every_thread_on_their_own_core(local_cluster, tmp_path):
    cores = sorted(os.sched_getaffinity(0))
    pinned = run_and_read_masks(local_cluster, "pinned", str(tmp_path / "on"), True)
    for index, threads in pinned.items():
        assert len(threads) > 2  # the loop, ZeroMQ's I/O thread, the Spark task's thread
        assert set(map(frozenset, threads.values())) == {frozenset({cores[index % len(cores)]})}
    unpinned = run_and_read_masks(local_cluster, "unpinned", str(tmp_path / "off"), False)
    for threads in unpinned.values():
        assert set(map(frozenset, threads.values())) == {frozenset(cores)}
