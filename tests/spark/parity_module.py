"""Components of the Spark parity test (issue 10 items 4, 5): where each sentence was split.

As in ``topo_module``, results leave Spark's Python workers through files in ``out_dir``.
"""

from __future__ import annotations

import os
from pathlib import Path

from squall import Config, Fields, TopologyBuilder
from tests.spark import topo_module as tm


class WhereSplit(tm.SplitBolt):
    """``tm.SplitBolt`` that also writes ``<source task> <this task> <same worker 0/1>`` per input."""

    def __init__(self, out_dir: str) -> None:
        self.out_dir = out_dir

    def prepare(self, conf, context, collector) -> None:
        super().prepare(conf, context, collector)
        self.task = context.task_id
        self.local = set(context.worker_tasks)
        path = os.path.join(self.out_dir, f"split-{context.task_id}-{os.getpid()}.txt")
        self.where = open(path, "a")  # noqa: SIM115

    def execute(self, tup) -> None:
        self.where.write(f"{tup.task} {self.task} {int(tup.task in self.local)}\n")
        self.where.flush()
        super().execute(tup)


class TaskCount(tm.CountBolt):
    """``tm.CountBolt``, its files named by task so a test sees which task counted a word."""


def wordcount(n: int, out_dir: str, *, disable_load_aware: bool) -> tuple[Config, object]:
    """sentences (1) -> split (2 executors, topology.tasks 4, shuffle) -> count (partial key)."""
    builder = TopologyBuilder()
    builder.set_spout("sentences", tm.SentenceSpout(n, out_dir), parallelism=1)
    builder.set_bolt("split", WhereSplit(out_dir), parallelism=2) \
        .add_configuration("topology.tasks", 4).shuffle_grouping("sentences")
    builder.set_bolt("count", TaskCount(out_dir), parallelism=3) \
        .partial_key_grouping("split", Fields("word"))
    conf = Config()
    conf.set_num_workers(2)
    conf.set_message_timeout_secs(30)
    conf.set_max_spout_pending(64)
    conf["topology.disable.loadaware.messaging"] = disable_load_aware
    return conf, builder.create_topology()


def read_splits(out_dir: str) -> list[tuple[int, int, bool]]:
    """(source task, split task, same worker) per sentence split."""
    out = []
    for f in Path(out_dir).glob("split-*.txt"):
        for line in f.read_text().splitlines():
            src, task, local = (int(x) for x in line.split())
            out.append((src, task, bool(local)))
    return out


def words_by_task(out_dir: str) -> dict[str, set[int]]:
    """word -> the count tasks that counted it."""
    out: dict[str, set[int]] = {}
    for f in Path(out_dir).glob("count-*.txt"):
        task = int(f.name.split("-")[1])
        for line in f.read_text().splitlines():
            parts = line.split()
            if len(parts) == 3:
                out.setdefault(parts[2], set()).add(task)
    return out

