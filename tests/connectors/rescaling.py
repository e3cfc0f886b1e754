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


def hold_acks(cluster: LocalCluster, name: str, component: str) -> None:
    """From now on ``component``'s tasks never pass a committed record's ``ack`` to the spout.

    The checkpoints commit as usual, but the sources' own commits (file progress, group
    offsets) stay behind them: where a task starts after a live rescale must then come from
    the checkpointed positions (``merge_positions``), not from the source.
    """
    running = cluster._get(name)
    for w in running.workers:
        for task_id in running.plan.component_tasks[component]:
            task = w.tasks.get(task_id)
            if task is not None:
                task.ack_committed = lambda msg_id: None


def rescale_live(cluster: LocalCluster, name: str, component: str, moves: list[int], ready: Any,
                 step: Any, deadline: float) -> list[dict]:
    """Rebalance ``component`` to each of ``moves`` in turn, live, each once ``ready(done)``
    (moves done so far) holds and the previous move is over, with its tasks' acks held
    (``hold_acks``); ``step()`` advances the cluster. The ``rescale`` record of each move."""
    import time

    todo, records = list(moves), []
    while time.monotonic() < deadline:
        record = cluster.get_topology_info(name)["rescale"]
        if records and records[-1] is None:
            if record["status"] != "running":
                records[-1] = record
        elif todo and ready(len(records)):
            hold_acks(cluster, name, component)
            cluster.rebalance(name, parallelism={component: todo.pop(0)})
            records.append(None)
        elif not todo and ready(len(moves) + 1):
            break
        step()
    return records
