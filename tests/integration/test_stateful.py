"""Stateful bolts on LocalCluster: checkpoints, recovery, faults in each phase, rescaling."""

import time
from collections import Counter

import pytest

from squall import Config, Fields, LocalCluster, TopologyBuilder
from squall.runtime.checkpoint import CHECKPOINT_SPOUT
from squall.runtime.stateful import component_items
from squall.state import load_provider
from squall.testing import tracked_topology
from tests.integration.components import FAULTS, RECORD, ListSpout, SplitBolt, StatefulCount
from tests.redis_server import RedisServer

SENTENCES = [["the cow jumped over the moon"], ["an apple a day keeps the doctor away"],
             ["four score and seven years ago"], ["snow white and the seven dwarfs"],
             ["i am at two with nature"]]


def expected(sentences):
    return Counter(w for (s,) in sentences for w in s.split())


def topology(sentences, counters=2):
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout(sentences), 2)
    b.set_bolt("split", SplitBolt(), 2).shuffle_grouping("spout")
    b.set_bolt("count", StatefulCount(), counters).fields_grouping("split", Fields("word"))
    return b.create_topology()


def conf(provider=None, workers=2, **extra):
    c = Config()
    c.set_num_workers(workers)
    c.update({"topology.state.checkpoint.interval.ms": 100, "topology.message.timeout.secs": 5})
    if provider:
        c.update(provider)
    c.update(extra)
    return c


def committed_counts(c, name, component="count"):
    """Read every task's committed state straight from the store."""
    total = Counter()
    for _, key, value in component_items(load_provider(c), c, name, component):
        assert key not in total, f"{key!r} kept by two namespaces"
        total[key] = value
    return total


def run_until_acked(cluster, name, c, sentences, n_acked):
    # a stateful bolt's acks wait for the checkpoint that commits them: wait for the trees
    tracked_topology(cluster, name, c, topology(sentences)).wait_idle(timeout=60, trees=True)
    assert len(RECORD["spout.acked"]) >= n_acked, (
        f"acked {len(RECORD['spout.acked'])} of {n_acked}; errors: "
        f"{[e['message'] for e in cluster.get_topology_info(name)['errors']]}"
    )


@pytest.fixture(params=["memory", "local", "redis", "user"])
def provider(request, tmp_path):
    if request.param == "memory":
        from squall.state import memory

        memory.clear()
        yield {"topology.state.provider": "squall.state.memory.InMemoryStateProvider"}
    elif request.param == "local":
        yield {"topology.state.provider": "squall.state.local.LocalStateProvider",
               "topology.state.provider.config": {"path": str(tmp_path / "state")}}
    elif request.param == "user":  # written from docs/state.md only (issue 31)
        yield {"topology.state.provider": "tests.state.dict_provider.DictStateProvider",
               "topology.state.provider.config": {"path": str(tmp_path / "dict-state")}}
    else:
        server = RedisServer(tmp_path / "redis")
        server.start()
        yield {"topology.state.provider": "squall.state.redis.RedisStateProvider",
               "topology.state.provider.config": {"host": server.host, "port": server.port}}
        server.stop()


def test_stateful_word_count_commits_exact_counts_and_keeps_them_across_resubmit(provider):
    c = conf(provider)
    sentences = SENTENCES * 40
    with LocalCluster() as cluster:
        run_until_acked(cluster, "swc", c, sentences, len(sentences))
        cluster.kill_topology("swc")
    assert committed_counts(c, "swc") == expected(sentences)
    assert RECORD["spout.failed"] == []
    RECORD.clear()
    with LocalCluster() as cluster:  # same name again: the counts go on from the commit
        run_until_acked(cluster, "swc", c, sentences, len(sentences))
        cluster.kill_topology("swc")
    assert committed_counts(c, "swc") == expected(sentences * 2)


def test_the_checkpoint_spout_record_survives_and_recovery_starts_from_it(provider):
    c = conf(provider)
    with LocalCluster() as cluster:
        run_until_acked(cluster, "rec", c, SENTENCES, len(SENTENCES))
        cluster.kill_topology("rec")
    state = load_provider(c).new_state(f"rec/{CHECKPOINT_SPOUT}", c, None)
    txid, phase = state.get("txstate")
    assert txid >= 1 and phase in ("COMMITTED", "PREPARING", "COMMITTING")


@pytest.mark.parametrize("hook", ["pre_prepare", "pre_commit", "pre_rollback"])
def test_a_fault_in_each_phase_recovers_to_exact_counts(hook):
    c = conf({"topology.state.provider": "squall.state.memory.InMemoryStateProvider"})
    from squall.state import memory

    memory.clear()
    FAULTS[hook] = 1
    if hook == "pre_rollback":
        FAULTS["pre_prepare"] = 1  # a failed prepare makes the spout roll back
    sentences = SENTENCES * 20
    with LocalCluster() as cluster:
        run_until_acked(cluster, f"fault-{hook}", c, sentences, len(sentences))
        errors = cluster.get_topology_info(f"fault-{hook}")["errors"]
        cluster.kill_topology(f"fault-{hook}")
    assert hook in RECORD["faults"]
    assert any(f"injected fault in {hook}" in e["message"] for e in errors)
    counts = committed_counts(c, f"fault-{hook}")
    # held acks: every committed count was acked once, every rolled back tuple replayed
    assert counts == expected(sentences)


def test_tuples_before_init_state_are_buffered_and_counted():
    c = conf({"topology.state.provider": "squall.state.memory.InMemoryStateProvider"},
             **{"topology.state.checkpoint.interval.ms": 1500})
    from squall.state import memory

    memory.clear()
    with LocalCluster() as cluster:
        run_until_acked(cluster, "buffered", c, SENTENCES, len(SENTENCES))
        cluster.kill_topology("buffered")
    assert committed_counts(c, "buffered") == expected(SENTENCES)
    assert len(RECORD["stateful.init"]) == 2


@pytest.mark.parametrize("how", ["live", "restart"])
def test_rebalancing_a_stateful_component_from_2_to_4_tasks_keeps_every_key(provider, how):
    c = conf(provider)
    first = SENTENCES * 10
    with LocalCluster() as cluster:
        run_until_acked(cluster, "grow", c, first, len(first))
        if how == "live":  # key groups move at a checkpoint: nothing restarts
            cluster.rebalance("grow", parallelism={"count": 4})
            deadline = time.monotonic() + 60
            while cluster.get_topology_info("grow")["rescale"]["status"] == "running":
                assert time.monotonic() < deadline, "the move did not end"
                cluster.wait_quiet(timeout=0.2, names=["grow"], raise_on_timeout=False)
            rec = cluster.get_topology_info("grow")["rescale"]
            assert (rec["status"], rec["live"]) == ("done", True), rec
        else:  # a worker count change restarts: the restarted spouts emit their lists again
            cluster.rebalance("grow", num_workers=3, parallelism={"count": 4})
            assert cluster.get_topology_info("grow")["rescale"]["live"] is False
        assert len(cluster.get_topology_info("grow")["components"]["count"]["tasks"]) == 4
        cluster.wait_quiet(timeout=60, names=["grow"], trees=True)
        rounds = 1 if how == "live" else 2
        assert len(RECORD["spout.acked"]) >= rounds * len(first)
        cluster.kill_topology("grow")
    counts = committed_counts(c, "grow")
    assert counts == expected(first * rounds)
