"""A rebalance through Nimbus that changes an exactly-once spout's task count is checked up
front (issue 38): a spout without ``merge_positions`` is refused with one line naming it, as
LocalCluster and SparkCluster refuse it, before the topology master is asked (which then
failed every checkpoint until rebalanced back). A Nimbus object on a real SQLite store and
blob store, no master launched (no Spark)."""

from __future__ import annotations

import cloudpickle
import pytest

from squall import TopologyBuilder
from squall.nimbus.errors import Conflict, InvalidRequest
from squall.store import keys as K
from tests.integration.eo_components import ListSpout, PartitionedSpout, Sink
from tests.nimbus.test_uptime import nimbus

NAME = "eo"
TID = "eo-1700000000-a1b2c3"
EO = {"topology.guarantee": "exactly_once", "topology.state.checkpoint.interval.ms": 200,
      "topology.workers": 2}


def submitted(root, spout, conf: dict):
    n = nimbus(root, lead=True)
    b = TopologyBuilder()
    b.set_spout("source", spout, 2)
    b.set_bolt("sink", Sink(), 1).shuffle_grouping("source")
    n.blobs.write(TID, 1, code=b"PK", topology=cloudpickle.dumps(b.create_topology()), conf=conf)
    n.store.put(K.topology_key(NAME), {
        "name": NAME, "id": TID, "secret": "0" * 64, "status": K.ACTIVE, "version": 1,
        "versions": [1], "epoch": 1, "num_workers": 2, "upgrade": None, "spark_master": "local[2]",
        "submitted": n.now(), "state": K.RUNNING})
    return n


def test_a_spout_that_cannot_merge_positions_is_refused_in_one_line_naming_it(tmp_path):
    n = submitted(tmp_path, ListSpout(["a b"], NAME), EO)
    try:
        with pytest.raises(InvalidRequest) as e:
            n.rebalance(NAME, {"parallelism": {"source": 3}})
        text = str(e.value)
        assert "'source'" in text and "merge_positions" in text and "\n" not in text, text
        assert n.store.get(K.topology_key(NAME))["status"] == K.ACTIVE  # nothing changed
    finally:
        n.election.stop()
        n.store.close()


@pytest.mark.parametrize("spout, conf, parallelism", [
    (PartitionedSpout(["a b"], NAME), EO, {"source": 3}),   # it merges its positions
    (ListSpout(["a b"], NAME), {"topology.workers": 2}, {"source": 3}),  # at-least-once
    (ListSpout(["a b"], NAME), EO, {"sink": 3}),  # the spout keeps its task count
], ids=["merges", "at-least-once", "a-bolt"])
def test_what_needs_no_merge_goes_on_to_the_master(tmp_path, spout, conf, parallelism):
    n = submitted(tmp_path, spout, conf)
    try:
        with pytest.raises(Conflict, match="master"):  # no master runs here
            n.rebalance(NAME, {"parallelism": parallelism})
    finally:
        n.election.stop()
        n.store.close()
