"""Exactly-once on a cluster of several processes needs state that outlives a worker: the
in-memory provider is refused at submit in one line naming the setting (RELIABILITY E26);
LocalCluster, one process, keeps it."""

from __future__ import annotations

import pytest

from squall import Config, LocalCluster
from squall.api.errors import InvalidTopologyError
from squall.runtime.exactly_once_checks import check_durable_state
from squall.state import memory
from squall.testing import simulated_time
from tests.integration import test_exactly_once as eo


def conf(**extra) -> dict:
    c = Config()
    c.update({"topology.guarantee": "exactly_once", "topology.workers": 2, **extra})
    return dict(c)


@pytest.mark.parametrize("provider", [None, "squall.state.memory.InMemoryStateProvider",
                                      "org.apache.storm.state.InMemoryKeyValueStateProvider"])
def test_in_memory_state_is_refused_for_exactly_once_on_a_multi_process_cluster(provider):
    extra = {} if provider is None else {"topology.state.provider": provider}
    with pytest.raises(InvalidTopologyError) as e:
        check_durable_state(conf(**extra), "SparkCluster")
    message = str(e.value)
    assert "\n" not in message and "SparkCluster" in message
    assert "set topology.state.provider to squall.state.redis.RedisStateProvider" in message


def test_durable_state_one_worker_or_at_least_once_pass():
    check_durable_state(conf(**{"topology.state.provider": "squall.state.redis.RedisStateProvider"}),
                        "SparkCluster")
    check_durable_state(conf(**{"topology.workers": 1}), "SparkCluster")
    check_durable_state(conf(**{"topology.guarantee": "at_least_once"}), "SparkCluster")


def test_local_cluster_keeps_in_memory_state_for_exactly_once():
    memory.clear()
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology(eo.NAME, eo.conf("exactly_once"), eo.build(["a b"]))
        cluster.kill_topology(eo.NAME)


def test_the_refusal_of_an_unaligned_sink_names_sinks_that_work():
    with pytest.raises(InvalidTopologyError) as e:
        _unaligned()
    assert "RedisStreamBolt" in str(e.value) and "\n" not in str(e.value)


def _unaligned() -> None:
    from squall import TopologyBuilder

    class Unaligned(eo.Sink):
        follows_checkpoints = False

    b = TopologyBuilder()
    b.set_spout("source", eo.ListSpout(["a"], eo.NAME))
    b.set_bolt("out", Unaligned()).shuffle_grouping("source")
    eo.submit(b.create_topology())
