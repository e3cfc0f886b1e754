"""Rescaling a spout under exactly-once on LocalCluster: what the connectors' tests share."""

from __future__ import annotations

import threading
from typing import Any

from squall import LocalCluster
from squall.runtime.checkpoint import CHECKPOINT_STREAM


def hold_commits(cluster: LocalCluster, name: str, component: str) -> threading.Event:
    """From now on ``component``'s tasks drop every COMMIT they receive (set: one was dropped).

    The checkpoint's record says COMMITTING, and the spout tasks never call ``ack`` for its
    records, so their source commits (Kafka's group offsets) lag the checkpoint: a rebalance
    then must take the offsets from the positions, not from the source.
    """
    dropped = threading.Event()
    running = cluster._get(name)
    for w in running.workers:
        for task_id in running.plan.component_tasks[component]:
            task = w.tasks.get(task_id)
            if task is None:
                continue
            original = task.on_checkpoint

            def on_checkpoint(tup: Any, original: Any = original) -> None:
                if tup.stream == CHECKPOINT_STREAM and tup.values[1] == "COMMIT":
                    dropped.set()
                    return
                original(tup)

            task.on_checkpoint = on_checkpoint
    return dropped
