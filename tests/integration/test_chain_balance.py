"""Issue 41 item 7: a shuffle the user asked to keep balanced is not chained.

With ``topology.disable.loadaware.messaging: True`` every shuffle is balanced over all its
target tasks (docs/groupings.md): each emitting task cycles through them in an order
reshuffled every cycle, so the counts one emitter sends to the targets differ by at most one.
That bound is exact, not statistical: it cannot flake. Chaining (on by default) would send
each spout task's stream to its partner task alone.
"""

from collections import Counter

import pytest

from squall import Config, LocalCluster, TopologyBuilder
from squall.testing import simulated_time
from tests.integration import chain_components as cc
from tests.integration.chain_components import Tally
from tests.integration.components import ListSpout

TASKS = 4
ITEMS = 4 * 101  # 101 per spout task: not a multiple of the targets, so ceil and floor differ


@pytest.fixture(autouse=True)
def _clear():
    cc.SEEN.clear()
    yield
    cc.SEEN.clear()


def run(workers, **extra):
    b = TopologyBuilder()
    b.set_spout("in", ListSpout([[i] for i in range(ITEMS)], replay=False), TASKS)
    b.set_bolt("tally", Tally(), TASKS).shuffle_grouping("in")
    conf = Config()
    conf.update({"topology.workers": workers, **extra})
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("t", conf, b.create_topology())
        cluster.advance_time(1)
        cluster.wait_quiet()
        info = cluster.get_topology_info("t")
    return info, Counter(cc.SEEN["tally"])


@pytest.mark.parametrize("workers", [1, 2])
def test_a_balanced_shuffle_is_not_chained_and_each_target_gets_its_share(workers):
    info, received = run(workers, **{"topology.disable.loadaware.messaging": True})
    spouts, bolts = info["components"]["in"]["tasks"], info["components"]["tally"]["tasks"]
    assert sum(received.values()) == ITEMS
    per_emitter = ITEMS // TASKS
    for s in spouts:
        counts = [received[(b, s)] for b in bolts]
        # balanced per emitter: every target gets floor or ceil of its share (a bound that holds
        # for every run: cycles through the targets, never a random draw)
        assert sum(counts) == per_emitter
        assert max(counts) - min(counts) <= 1, (s, counts)
        assert min(counts) == per_emitter // TASKS
    assert info["chains"] == []


def test_a_shuffle_left_load_aware_is_still_chained():
    info, received = run(1)
    assert info["chains"] == [["in", "tally"]]
    assert sum(received.values()) == ITEMS
