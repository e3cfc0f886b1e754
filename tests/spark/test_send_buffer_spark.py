"""The send buffer on Spark: a SIGSTOPped worker, real ZeroMQ links (issue 41 item 10).

The frames a worker queues for a peer that takes none stay at the send buffer's bound
(``topology.executor.send.buffer.size`` in frames), the topology's spouts stop, and once
the peer runs again every sentence is acked and counted once.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from tests.spark import helpers
from tests.spark import topo_module as tm

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _transfer(cluster, name: str, worker: int) -> dict:
    info = cluster.get_topology_info(name)
    return next(w for w in info["workers"] if w["worker"] == worker).get("transfer") or {}


@pytest.mark.timeout(300)
def test_a_sigstopped_worker_leaves_at_most_the_send_buffer_queued_for_it(local_cluster, tmp_path):
    n = 3000
    out = str(tmp_path)
    conf, topology = tm.wordcount(n, out, timeout=120)
    conf.update({"topology.executor.send.buffer.size": 40, "squall.transfer.batch.size": 10,
                 "topology.executor.receive.buffer.size": 200, "topology.max.spout.pending": 3000,
                 "squall.spark.worker.heartbeat.timeout.secs": 120})
    local_cluster.submit_topology("wc-sb", conf, topology)
    frozen = None
    try:
        info = local_cluster.get_topology_info("wc-sb")
        spout_task = info["components"]["sentences"]["tasks"][0]
        sender = next(w for w in info["workers"] if spout_task in w["tasks"])["worker"]
        victim = next(w for w in info["workers"] if spout_task not in w["tasks"])
        helpers.wait_acked_at_least(out, 100, timeout=60)
        frozen = victim["pid"]
        os.kill(frozen, signal.SIGSTOP)  # alive but silent: its ZeroMQ queues fill
        helpers.wait_until(lambda: (_transfer(local_cluster, "wc-sb", sender)
                                    .get("held_rounds") or 0) > 0, 60, "the sender held")
        time.sleep(3)  # stopped for a while: the sender's queue must not grow meanwhile
        held = _transfer(local_cluster, "wc-sb", sender)
        # not ``unsent == send_bound``: the stopped peer's kernel buffers still take a few
        # frames now and then (under load, 1 of 4 was seen waiting); the bound is the peak
        assert held["unsent_peak"] <= held["send_bound"] == 4, held
        assert held["held_rounds"] > 0, held
        os.kill(frozen, signal.SIGCONT)
        frozen = None
        acked = helpers.wait_all_acked(out, n, timeout=120)
        after = _transfer(local_cluster, "wc-sb", sender)
    finally:
        if frozen is not None:
            os.kill(frozen, signal.SIGCONT)
        local_cluster.kill_topology("wc-sb", wait_secs=0)
    assert acked == set(range(n))
    assert tm.read_results(out)[1] == tm.expected_counts(n)
    assert after["unsent_peak"] <= after["send_bound"], after
