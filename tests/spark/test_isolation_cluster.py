"""Isolated hosts across the topologies of one ``SparkCluster`` (issue 41 item 9).

On ``local[3]`` every worker runs on this host: ``gold`` isolates it, so ``silver`` (whose
own configuration says nothing of isolation) is refused while gold runs, and gold is
refused while silver runs, each in one line naming the host and the other topology.
"""

from __future__ import annotations

import pytest

from squall import Bolt, Config, Fields, Spout, TopologyBuilder
from squall.scheduler import SchedulingError
from squall.spark.placement import worker_host

pytestmark = [pytest.mark.spark, pytest.mark.slow]


class Numbers(Spout):
    def open(self, conf, context, collector):
        self.collector, self.i = collector, 0

    def next_tuple(self):
        self.i += 1
        self.collector.emit([self.i])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"))


class Drop(Bolt):
    def execute(self, tup):
        pass


def topology():
    b = TopologyBuilder()
    b.set_spout("numbers", Numbers(), parallelism=1)
    b.set_bolt("drop", Drop(), parallelism=1).shuffle_grouping("numbers")
    return b.create_topology()


def conf(isolate: bool = False) -> Config:
    c = Config()
    c.set_num_workers(1)
    if isolate:
        c["squall.scheduler.isolation"] = {worker_host(): ["gold"]}
    return c


@pytest.mark.timeout(300)
def test_isolated_hosts_hold_across_the_topologies_of_a_cluster(local_cluster):
    host = worker_host()
    local_cluster.submit_topology("gold", conf(isolate=True), topology())
    try:
        with pytest.raises(SchedulingError, match=f"host {host} is isolated for topology 'gold'"):
            local_cluster.submit_topology("silver", conf(), topology())
    finally:
        local_cluster.kill_topology("gold", wait_secs=0)
    local_cluster.submit_topology("silver", conf(), topology())
    try:
        with pytest.raises(SchedulingError, match=f"host {host}, isolated for 'gold' .* runs workers of "
                                                  f"topology 'silver'"):
            local_cluster.submit_topology("gold", conf(isolate=True), topology())
    finally:
        local_cluster.kill_topology("silver", wait_secs=0)
