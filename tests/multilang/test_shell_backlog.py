"""Issue 41 item 2: a ShellBolt's backlog is bounded and seen by backpressure.

A pystorm bolt slower than its spout: the ShellBolt holds at most
``topology.shellbolt.max.pending`` tuples (in its subprocess or waiting to be written), the
rest waits in its task's receive queue, the spouts are throttled, and every tuple is acked
once. The subprocess runs in real time; the test checks bounds, never speed.
"""

from __future__ import annotations

import threading
from collections import Counter

from squall import Config, Fields, LocalCluster, TopologyBuilder
from squall.multilang import ShellBolt
from tests.integration.components import RECORD, CountBolt, ListSpout
from tests.multilang.helpers import PYTHON, RESOURCES, wait_for

ITEMS = 1500
MAX_PENDING = 20
BUFFER = 128  # topology.executor.receive.buffer.size: backpressure's high mark is 80% of it
SPOUT_BATCH = 64  # topology.spout.max.batch.size: what a spout may add in the round it is gated


def test_a_slow_shell_bolt_holds_at_most_max_pending_throttles_the_spouts_and_loses_nothing():
    RECORD.clear()
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([[f"w{i}"] for i in range(ITEMS)]), 1)
    slow = ShellBolt([PYTHON, "pystorm_split.py"], resources=RESOURCES,
                     outputs={"default": Fields("word")}, env={"SPLIT_DELAY": "0.001"})
    b.set_bolt("split", slow, 1).shuffle_grouping("spout")
    b.set_bolt("count", CountBolt(), 1).shuffle_grouping("split")
    conf = Config()
    conf.update({"topology.workers": 1, "topology.shellbolt.max.pending": MAX_PENDING,
                 "topology.executor.receive.buffer.size": BUFFER,
                 "topology.spout.max.batch.size": SPOUT_BATCH})
    seen = {"held": 0, "queued": 0, "throttled": False}
    done = threading.Event()
    with LocalCluster() as cluster:
        cluster.submit_topology("ml", conf, b.create_topology())
        (worker,) = cluster.workers("ml")
        (task,) = [t for t in worker.tasks.values() if t.component == "split"]

        def watch():
            while not done.wait(0.002):  # samples what a real subprocess lets pile up
                bolt = task.bolt  # its own maps, so the test reads the same before the change
                seen["held"] = max(seen["held"], len(bolt._inputs) + len(bolt._backlog))
                seen["queued"] = max(seen["queued"], len(task.inbox))
                seen["throttled"] = seen["throttled"] or worker.throttled

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            assert wait_for(lambda: len(RECORD["spout.acked"]) >= ITEMS, timeout=90)
        finally:
            done.set()
            watcher.join()
        max_in_flight = max(RECORD["spout.max_in_flight"])
    assert seen["held"] <= MAX_PENDING, seen  # memory bounded: the bolt's own backlog
    assert task.bolt.held_input() == 0 and task.held_input() == 0
    assert seen["queued"] <= BUFFER + SPOUT_BATCH, seen  # ... and its task's queue
    assert seen["throttled"], seen  # the spouts were held back
    # every tree in flight is in a queue or the subprocess: far fewer than the input
    assert max_in_flight <= 2 * (BUFFER + SPOUT_BATCH) + MAX_PENDING, max_in_flight
    # nothing lost, nothing twice
    assert sorted(m for _, m in RECORD["spout.acked"]) == list(range(ITEMS))
    assert RECORD["spout.failed"] == []
    assert Counter(w for _, w in RECORD["count.seen"]) == Counter(f"w{i}" for i in range(ITEMS))
