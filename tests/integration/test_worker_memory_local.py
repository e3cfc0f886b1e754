"""Issue 41 item 8 on LocalCluster: its workers are threads of one process, so a worker's memory
limit does not apply there (docs/scheduler.md, "A worker's memory limit"). A limit far below any
process (1 MB) stops nothing, and every tuple is processed. Passes on the code before the limit
too: it pins down what LocalCluster does, not a fault."""

from collections import Counter

import pytest

from squall import Config, LocalCluster, TopologyBuilder
from squall.testing import simulated_time
from tests.integration import chain_components as cc
from tests.integration.chain_components import Tally
from tests.integration.components import ListSpout

ITEMS = 200


@pytest.fixture(autouse=True)
def _clear():
    cc.SEEN.clear()
    yield
    cc.SEEN.clear()


def test_a_memory_limit_does_not_apply_to_local_cluster_worker_threads():
    b = TopologyBuilder()
    b.set_spout("in", ListSpout([[i] for i in range(ITEMS)], replay=False), 2)
    b.set_bolt("tally", Tally(), 2).shuffle_grouping("in").set_memory_load(1)
    conf = Config()
    conf.update({"topology.workers": 2, "topology.worker.max.heap.size.mb": 1})
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("t", conf, b.create_topology())
        cluster.advance_time(1)
        cluster.wait_quiet()
        info = cluster.get_topology_info("t")
    assert sum(Counter(cc.SEEN["tally"]).values()) == ITEMS
    assert len(info["workers"]) == 2
    assert all(not w.get("memory_stops") and w.get("memory_limit_mb") is None for w in info["workers"])
