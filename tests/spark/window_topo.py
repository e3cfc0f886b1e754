"""A stateful windowed bolt whose windows leave the worker processes through files."""

from __future__ import annotations

import json
import os
from pathlib import Path

from squall import Config, Count, Fields, StatefulWindowedBolt, TopologyBuilder
from tests.spark.topo_module import SentenceSpout


class WindowFileBolt(StatefulWindowedBolt):
    """Appends each window's sentence ids to ``windows-<task>-<pid>.txt``; sums them in state."""

    def __init__(self, out_dir: str) -> None:
        super().__init__()
        self.out_dir = out_dir

    def prepare(self, conf, context, collector) -> None:
        path = os.path.join(self.out_dir, f"windows-{context.task_id}-{os.getpid()}.txt")
        self.out = open(path, "a")  # noqa: SIM115

    def init_state(self, state) -> None:
        self.state = state

    def execute(self, window) -> None:
        ids = [t["id"] for t in window.get()]
        self.state.put("windows", self.state.get("windows", 0) + 1)
        self.out.write(json.dumps(ids) + "\n")
        self.out.flush()


def stateful_windows(n: int, out_dir: str, state_dir: str, persistent: bool, rate: float = 0.0,
                     timeout: float = 5.0):
    """(conf, topology): sentences in tumbling windows of 20, kept by a stateful windowed bolt."""
    bolt = WindowFileBolt(out_dir).with_tumbling_window(Count(20))
    bolt = bolt.with_persistence() if persistent else bolt.with_message_id_field("id")
    builder = TopologyBuilder()
    builder.set_spout("sentences", SentenceSpout(n, out_dir, rate), parallelism=1)
    builder.set_bolt("window", bolt, parallelism=2).fields_grouping("sentences", Fields("id"))
    conf = Config()
    conf.set_num_workers(2)
    conf.set_message_timeout_secs(timeout)
    conf.set_max_spout_pending(256)
    conf["topology.state.checkpoint.interval.ms"] = 300
    conf["topology.state.provider"] = "squall.state.local.LocalStateProvider"
    conf["topology.state.provider.config"] = {"path": state_dir}
    return conf, builder.create_topology()


def windowed_ids(out_dir: str) -> list[list[int]]:
    """Every window written, from every process."""
    out = []
    for f in Path(out_dir).glob("windows-*.txt"):
        for line in f.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a line cut short by SIGKILL
    return out
