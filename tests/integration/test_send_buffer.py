"""The send buffer: frames a worker queues for a peer that takes none are bounded (issue 41).

A peer that stops taking frames (its loop stalled, as a SIGSTOPped process) fills the
transport's queue to it; what the worker's bolts make after that waits in the worker's own
queue per peer (``Transfer._unsent``). At ``topology.executor.send.buffer.size`` tuples'
worth of frames the worker's bolts wait and the topology's spouts stop, so that queue stays
bounded; when the peer comes back every tree completes.
"""

import threading
import time
from collections import Counter

from squall import Fields, LocalCluster, TopologyBuilder
from squall.testing import simulated_time
from tests.integration.components import RECORD, CountBolt, ListSpout, SplitBolt
from tests.integration.test_acking import conf

WORDS = 20  # words per sentence: the split bolt sends 20 tuples per tuple it takes
SMALL = {
    "topology.executor.receive.buffer.size": 100,
    "topology.executor.send.buffer.size": 40,  # 4 frames of 10 tuples per peer
    "squall.transfer.batch.size": 10,
    "squall.chaining": False,  # the split bolt has a queue of its own to drain
    "topology.message.timeout.secs": 600,
}
BOUND = 4


def sentences(n):
    return [[" ".join(f"w{(i + k) % 50}" for k in range(WORDS))] for i in range(n)]


def steady(worker, read, timeout=30.0):
    """``read()`` on ``worker``'s loop, once its work stopped changing between answers."""
    deadline = time.monotonic() + timeout
    last = None
    same = 0
    while time.monotonic() < deadline:
        now = worker.query(lambda: (worker.work_done, read()), timeout=10)
        same = same + 1 if now == last else 0
        if same >= 5:
            return now[1]
        last = now
        time.sleep(0.01)  # let the loop run rounds between two looks
    raise TimeoutError(f"worker {worker.index} kept working for {timeout}s: {last}")


def test_a_stalled_peer_leaves_at_most_the_send_buffer_queued_and_nothing_is_lost():
    items = sentences(400)
    b = TopologyBuilder()
    # tasks are dealt to the workers in order of component name: a and c in one, b in the other
    b.set_spout("a_spout", ListSpout(items), 1)
    b.set_bolt("c_split", SplitBolt(), 1).shuffle_grouping("a_spout")
    b.set_bolt("b_count", CountBolt(), 1).fields_grouping("c_split", Fields("word"))
    gate = threading.Event()
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("t", conf(2, **SMALL), b.create_topology())
        workers = cluster.workers("t")
        where = {t: w for w in workers for t in w.tasks}
        comp = {t: w.tasks[t].component for w in workers for t in w.tasks}
        home = {c: where[t] for t, c in comp.items()}
        sender, stalled = home["c_split"], home["b_count"]
        assert sender is home["a_spout"] and sender is not stalled
        stalled.call(gate.wait)  # the peer's loop stops, as a SIGSTOPped process's
        try:
            queued, batched, throttled = steady(sender, lambda: (
                len(sender._unsent[stalled.index]), sender._peers[stalled.index].count,
                sender.throttled))
        finally:
            gate.set()
        assert queued <= BOUND, f"{queued} frames queued for the stalled peer, bound {BOUND}"
        # the bolts stop at the bound: what one slice of 16 input tuples made waits unframed
        assert batched <= 16 * WORDS + SMALL["squall.transfer.batch.size"], batched
        assert throttled
        cluster.wait_quiet(timeout=60)
        info = cluster.get_topology_info("t")
    assert len(set(RECORD["spout.acked"])) == len(items)
    assert RECORD["spout.failed"] == []
    counts = Counter()
    for _task, partial in RECORD["count.cleanup"]:
        counts.update(partial)
    assert sum(counts.values()) == len(items) * WORDS
    stats = {w["worker"]: w["transfer"] for w in info["workers"]}
    assert stats[sender.index]["unsent_peak"] <= BOUND
    assert stats[sender.index]["held_rounds"] > 0


def test_a_worker_at_its_bound_stops_the_spouts_of_the_other_workers():
    # a_spout in worker 0 feeds c_split in worker 1, which feeds b_count in worker 2: worker
    # 1's own spouts are none, so only its word to worker 0 stops what keeps coming
    items = sentences(400)
    b = TopologyBuilder()
    b.set_spout("a_spout", ListSpout(items), 1)
    b.set_bolt("b_count", CountBolt(), 1).fields_grouping("c_split", Fields("word"))
    b.set_bolt("c_split", SplitBolt(), 1).shuffle_grouping("a_spout")
    gate = threading.Event()
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("t", conf(3, **SMALL), b.create_topology())
        workers = cluster.workers("t")
        home = {w.tasks[t].component: w for w in workers for t in w.tasks}
        source, middle, stalled = home["a_spout"], home["c_split"], home["b_count"]
        assert len({source, middle, stalled}) == 3
        stalled.call(gate.wait)
        try:
            queued, batched = steady(middle, lambda: (
                len(middle._unsent[stalled.index]), middle._peers[stalled.index].count))
            assert queued <= BOUND, f"{queued} frames queued for the stalled peer, bound {BOUND}"
            assert batched <= 16 * WORDS + SMALL["squall.transfer.batch.size"], batched
            pressured, throttled = steady(source, lambda: (source.pressured(), source.throttled))
            assert pressured == [middle.index] and throttled
        finally:
            gate.set()
        cluster.wait_quiet(timeout=60)
        info = cluster.get_topology_info("t")
        assert source.pressured() == []  # the word that the bound is left reached it
    assert len(set(RECORD["spout.acked"])) == len(items)
    assert RECORD["spout.failed"] == []
    stats = {w["worker"]: w["transfer"] for w in info["workers"]}
    assert stats[middle.index]["unsent_peak"] <= BOUND


def test_two_workers_held_by_each_other_both_go_on_and_every_tree_is_acked():
    # both workers split and count, and half the words of each cross to the other: with one
    # stalled, then both taking frames again, each reaches its bound with the other's
    # frames filling its queues; acker messages ride the same frames
    items = sentences(1000)
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout(items), 2)
    b.set_bolt("split", SplitBolt(), 2).local_or_shuffle_grouping("spout")
    b.set_bolt("count", CountBolt(), 2).fields_grouping("split", Fields("word"))
    gate = threading.Event()
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("t", conf(2, **SMALL), b.create_topology())
        first, second = cluster.workers("t")
        second.call(gate.wait)
        try:
            steady(first, lambda: first.held)
        finally:
            gate.set()
        cluster.wait_quiet(timeout=60)
        info = cluster.get_topology_info("t")
    assert len(set(RECORD["spout.acked"])) == len(items)
    assert RECORD["spout.failed"] == []
    counts = Counter()
    for _task, partial in RECORD["count.cleanup"]:
        counts.update(partial)
    assert sum(counts.values()) == len(items) * WORDS
    stats = [w["transfer"] for w in info["workers"]]
    assert all(s["held_rounds"] > 0 for s in stats), stats
    assert all(s["unsent_peak"] <= BOUND for s in stats), stats
    # what let them go on: a worker held with its queues full took frames past capacity
    assert sum(s["overflow_rounds"] for s in stats) > 0, stats
