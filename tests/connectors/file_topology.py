"""Files in -> a line sink on disk, run by a child process that the test SIGKILLs mid-run:
``python -m tests.connectors.file_topology IN PROGRESS OUT``."""

from __future__ import annotations

import sys
import time

from squall import Config, LocalCluster, TopologyBuilder
from squall.connectors.files import FileSpout
from tests.connectors.components import LineSink


def build(directory, progress, out, delay=0.0, hold=frozenset(), **spout_args):
    b = TopologyBuilder()
    b.set_spout("files", FileSpout(directory, "*.txt", progress=progress, poll_secs=0.05,
                                   commit_interval_secs=0.1, **spout_args), 2)
    b.set_bolt("sink", LineSink(out, hold=hold, delay=delay), 2).shuffle_grouping("files")
    return b.create_topology()


def main() -> None:
    directory, progress, out = sys.argv[1:4]
    conf = Config()
    conf.set_num_workers(2)
    conf.set_max_spout_pending(50)
    with LocalCluster() as cluster:
        cluster.submit_topology("files", conf, build(directory, progress, out, delay=0.001))
        time.sleep(600)  # until killed


if __name__ == "__main__":
    main()
