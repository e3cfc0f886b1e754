"""User metrics and auto task hooks on the Spark runtime (local[3]): they reach the master."""

from __future__ import annotations

import os
import time

import pytest

from squall import Config, TopologyBuilder
from tests.integration.hook_components import MeteredSpout, SummingBolt

pytestmark = [pytest.mark.spark, pytest.mark.slow]
N = 200


@pytest.mark.timeout(180)
def test_user_metrics_and_hook_counts_travel_in_heartbeats(local_cluster):
    b = TopologyBuilder()
    b.set_spout("spout", MeteredSpout(N), 2)
    b.set_bolt("sum", SummingBolt(), 3).shuffle_grouping("spout")
    conf = Config()
    conf.set_num_workers(2)
    conf["topology.auto.task.hooks"] = ["tests.integration.hook_components.CountingHook"]
    local_cluster.submit_topology("metered", conf, b.create_topology())
    try:
        deadline = time.monotonic() + 90
        while True:
            info = local_cluster.get_topology_info("metered")
            seen = info["components"]["sum"]["metrics"].get("seen", {}).get("count")
            if seen == N and info["components"]["spout"]["acked"] == N:
                break
            assert time.monotonic() < deadline, f"user metrics did not arrive: seen={seen}"
            time.sleep(0.2)
    finally:
        local_cluster.kill_topology("metered", wait_secs=0)
    assert all(w["pid"] != os.getpid() for w in info["workers"])  # really other processes
    spout, bolt = info["components"]["spout"], info["components"]["sum"]
    assert spout["metrics"]["emitted"] == {"type": "counter", "count": N}
    assert spout["metrics"]["sizes"]["count"] == N and spout["metrics"]["sizes"]["max"] == N - 1.0
    assert spout["metrics"]["lines"]["count"] == 2 * N
    assert spout["metrics"]["next"]["count"] >= N
    assert [spout["by_task"][t]["metrics"]["emitted"]["count"] for t in spout["tasks"]] == [N // 2] * 2
    assert bolt["metrics"]["total"]["sum"] == sum(range(N))
    assert sorted(bolt["metrics"]["total"]["values"]) == bolt["tasks"]
    assert bolt["metrics"]["broken"]["errors"]
    assert bolt["metrics"]["values"]["count"] == N
    # the auto hook of every bolt task counted its executes into a metric of its own
    assert bolt["metrics"]["hook.executes"]["count"] == N
    assert spout["metrics"]["hook.executes"]["count"] == 0  # spouts have it too: nothing executed
