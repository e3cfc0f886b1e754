"""KafkaSpout rescaled under exactly-once on LocalCluster against a real broker (Tansu), on
simulated time (issue 38 item 3): through a rebalance that changes the spout's task count,
each partition's committed offset follows the partition to the task that reads it now, so
every record is counted once."""

from __future__ import annotations

import threading
import time

import pytest

from squall import LocalCluster, TopologyBuilder
from squall.connectors.kafka import KafkaSpout, KafkaSpoutConfig
from squall.state import memory
from squall.testing import simulated_time
from tests.connectors.kafka.test_kafka_exactly_once import (
    NAME,
    STEP,
    KeySink,
    KeyTranslator,
    eo_conf,
    produce_slowly,
    sink_state,
)
from tests.connectors.rescaling import hold_commits, rescale_live

PARTITIONS = 5
RECORDS = 600


def test_merge_positions_gives_every_task_every_partition_at_its_highest_offset():
    old = [[["in", 0, 7], ["in", 2, 3]], None, [["in", 1, 4], ["in", 2, 5]]]
    for index in range(2):
        assert KafkaSpout.merge_positions(old, index, 2) == [["in", 0, 7], ["in", 1, 4], ["in", 2, 5]]
    assert KafkaSpout.merge_positions([None, None], 0, 3) == []


@pytest.mark.parametrize("moves", [(3, 2), (2, 3)], ids=["2-3-2", "3-2-3"])
def test_a_rescaled_kafka_spout_counts_every_record_once(kafka_broker, moves):
    # records produced all along; the spout goes from its first task count to moves[0] and
    # then to moves[1] while they fly, each move once records are committed in the sink
    kafka_broker.create_topic("in", PARTITIONS)
    memory.clear()
    KeySink.SEEN = {}
    config = KafkaSpoutConfig(kafka_broker.bootstrap, ["in"], group_id="g",
                              record_translator=KeyTranslator(), partition_refresh_period_ms=300,
                              offset_commit_period_ms=200)
    b = TopologyBuilder()
    b.set_spout("source", KafkaSpout(config), 5 - moves[0])
    b.set_bolt("sink", KeySink(), 1).shuffle_grouping("source")
    c = eo_conf(**{"topology.state.checkpoint.interval.ms": 300})
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology(NAME, c, b.create_topology())
        producer = produce_slowly(kafka_broker, "in", RECORDS, PARTITIONS, 6.0)
        deadline = time.monotonic() + 120  # the broker's clients need real time
        todo = list(moves)
        held: threading.Event | None = None
        while len(sink_state()) < RECORDS and time.monotonic() < deadline:
            if held is not None and held.is_set():
                cluster.advance_time(STEP, increment=STEP, quiet_timeout=0.3)  # every task's
                cluster.rebalance(NAME, parallelism={"source": todo.pop(0)})
                held = None
            elif held is None and todo and len(sink_state()) >= RECORDS * (len(moves) - len(todo) + 1) // 4:
                held = hold_commits(cluster, NAME, "source")
            cluster.advance_time(STEP, increment=STEP, quiet_timeout=0.3)
            time.sleep(0.02)
        producer.join()
        cluster.advance_time(5, increment=0.5, quiet_timeout=2)  # later checkpoints commit too
        errors = [e["message"] for e in cluster.get_topology_info(NAME)["errors"]]
        cluster.kill_topology(NAME)
    assert not todo, f"the rebalances did not all happen: {len(sink_state())} counted; {errors}"
    got = sink_state()
    want = {f"in:{p}:{o}" for p in range(PARTITIONS) for o in range(RECORDS // PARTITIONS)}
    assert set(got) == want, (sorted(want - set(got))[:10], sorted(set(got) - want)[:10], errors)
    assert sorted(k for k, n in got.items() if n > 1) == [], errors


@pytest.mark.parametrize("first, moves", [(2, (3, 2)), (3, (2, 3))], ids=["2-3-2", "3-2-3"])
def test_a_kafka_spout_rescales_live_counting_every_record_once(kafka_broker, first, moves):
    # each move live, riding a checkpoint, with the spout's acks held so its group offsets lag
    # the checkpoints: the new tasks start from the merged positions. Workers and the sink's
    # task stay the same objects
    kafka_broker.create_topic("in", PARTITIONS)
    memory.clear()
    KeySink.SEEN = {}
    config = KafkaSpoutConfig(kafka_broker.bootstrap, ["in"], group_id="g",
                              record_translator=KeyTranslator(), partition_refresh_period_ms=300,
                              offset_commit_period_ms=200)
    b = TopologyBuilder()
    b.set_spout("source", KafkaSpout(config), first)
    b.set_bolt("sink", KeySink(), 1).shuffle_grouping("source")
    c = eo_conf(**{"topology.state.checkpoint.interval.ms": 300})
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology(NAME, c, b.create_topology())
        workers = cluster.workers(NAME)
        sink = [(w, t, task) for w in workers for t, task in w.tasks.items() if task.component == "sink"]
        producer = produce_slowly(kafka_broker, "in", RECORDS, PARTITIONS, 6.0)

        def step() -> None:
            cluster.advance_time(STEP, increment=STEP, quiet_timeout=0.3)
            time.sleep(0.02)  # the broker's clients need real time

        records = rescale_live(cluster, NAME, "source", list(moves),
                               lambda done: len(sink_state()) >= RECORDS * (done + 1) // 4,
                               step, time.monotonic() + 120)
        producer.join()
        cluster.advance_time(5, increment=0.5, quiet_timeout=2)  # later checkpoints commit too
        assert cluster.workers(NAME) == workers and all(w.tasks[t] is task for w, t, task in sink)
        info = cluster.get_topology_info(NAME)
        errors = [e["message"] for e in info["errors"]]
        assert len(info["components"]["source"]["tasks"]) == moves[-1]
        cluster.kill_topology(NAME)
    assert [(r and r["status"], r and r["live"], r and r["reason"]) for r in records] \
        == [("done", True, None)] * 2, (records, errors)
    got = sink_state()
    want = {f"in:{p}:{o}" for p in range(PARTITIONS) for o in range(RECORDS // PARTITIONS)}
    assert set(got) == want, (sorted(want - set(got))[:10], sorted(set(got) - want)[:10], errors)
    assert sorted(k for k, n in got.items() if n > 1) == [], errors
