"""A stateful topology writing Parquet through the checkpoint-aligned ``DataFrameWriterBolt``,
run by a child process that the test SIGKILLs mid-run:
``python -m tests.connectors.aligned_topology SRC PROGRESS OUT STATE``."""

from __future__ import annotations

import sys
import time

from squall import Config, LocalCluster, TopologyBuilder
from squall.connectors.spark import DataFrameSpout, DataFrameWriterBolt
from tests.connectors.components import SentenceTally, SplitWords


def build(src: str, progress: str, out: str, engine: str = "auto", tally_fails_after=None,
          delay: float = 0.0, tally_from: str = "rows"):
    """rows -> split -> write, and a stateful tally fed by ``tally_from`` (rows or split).

    Fed by split, tally and write take each checkpoint behind the same split output, so a
    sentence falls in one transaction at both, also at-least-once.
    """
    b = TopologyBuilder()
    b.set_spout("rows", DataFrameSpout(src, progress=progress, commit_interval_secs=0.1,
                                       fields=("id", "sentence"), engine=engine), 2)
    b.set_bolt("split", SplitWords(delay=delay), 2).shuffle_grouping("rows")
    b.set_bolt("tally", SentenceTally(tally_fails_after)).shuffle_grouping(tally_from)
    b.set_bolt("write", DataFrameWriterBolt(out, batch_rows=500, flush_secs=0.2, partition_by=["pos"],
                                            engine=engine), 2).shuffle_grouping("split")
    return b.create_topology()


def config(state: str | None = None, interval_ms: int = 300, pending: int = 2000,
           guarantee: str = "at_least_once") -> Config:
    c = Config()
    c["topology.guarantee"] = guarantee
    c.set_num_workers(2)
    c.set_max_spout_pending(pending)
    c.set_message_timeout_secs(30)
    c["squall.connectors.spark.master"] = "local[2]"
    c["topology.state.checkpoint.interval.ms"] = interval_ms
    if state is not None:
        c["topology.state.provider"] = "squall.state.local.LocalStateProvider"
        c["topology.state.provider.config"] = {"path": state}
    return c


def main() -> None:
    src, progress, out, state = sys.argv[1:5]
    with LocalCluster() as cluster:
        cluster.submit_topology("aligned", config(state, pending=200),
                                build(src, progress, out, delay=0.002))
        time.sleep(600)  # until killed


if __name__ == "__main__":
    main()
