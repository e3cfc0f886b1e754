"""A Redis stream in -> upper-case -> Redis stream out topology, run by a child process that
the test SIGKILLs mid-run: ``python -m tests.connectors.redis_topology PORT``."""

from __future__ import annotations

import sys
import time

from squall import Config, LocalCluster, TopologyBuilder
from squall.connectors.redis import RedisStreamBolt, RedisStreamSpout
from tests.connectors.components import Upper


def build(port: int, delay: float = 0.0, **spout_args):
    b = TopologyBuilder()
    b.set_spout("in", RedisStreamSpout("in", group="g", fields=("n", "text"), port=port,
                                       batch=20, **spout_args), 2)
    b.set_bolt("upper", Upper(delay=delay), 2).shuffle_grouping("in")
    b.set_bolt("out", RedisStreamBolt("out", port=port), 2).shuffle_grouping("upper")
    return b.create_topology()


def main() -> None:
    port = int(sys.argv[1])
    conf = Config()
    conf.set_num_workers(2)
    conf.set_max_spout_pending(50)
    with LocalCluster() as cluster:
        cluster.submit_topology("redis-pipe", conf, build(port, delay=0.002))
        print("running", flush=True)
        time.sleep(600)  # until killed


if __name__ == "__main__":
    main()
