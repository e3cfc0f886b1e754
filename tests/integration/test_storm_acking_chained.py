"""Storm's acking integration tests (TopologyIntegrationTest, ported in test_storm_topology.py)
run again with the bolts fused into chains.

Storm's bolts here are rich bolts: each is subclassed with ``chainable = True`` so that the
planner fuses it, and every test first checks that the chains it expects were formed. The
assertions are Storm's, unchanged: chaining must not change what a spout is told, nor when.
"""

from __future__ import annotations

from squall import Fields, LocalCluster, TopologyBuilder
from squall.testing import FeederSpout, simulated_time, tracked_topology
from tests.integration.test_storm_topology import (
    AckBolt,
    AckCounter,
    AckEveryOtherBolt,
    AggBolt,
    BranchingBolt,
    DupAnchorBolt,
    IdentityBolt,
    ResetTimeoutBolt,
)


class ChainedAckBolt(AckBolt):
    chainable = True


class ChainedAckEveryOther(AckEveryOtherBolt):
    chainable = True


class ChainedAgg(AggBolt):
    chainable = True


class ChainedBranching(BranchingBolt):
    chainable = True


class ChainedDupAnchor(DupAnchorBolt):
    chainable = True


class ChainedIdentity(IdentityBolt):
    chainable = True


class ChainedResetTimeout(ResetTimeoutBolt):
    chainable = True


def test_timeout_chained():
    feeder = FeederSpout(Fields("field1"))
    b = TopologyBuilder()
    b.set_spout("1", feeder)
    b.set_bolt("2", ChainedAckEveryOther()).shuffle_grouping("1")  # Storm: global (one task alike)
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("timeout-tester", {"topology.message.timeout.secs": 10}, b.create_topology())
        assert cluster.get_topology_info("timeout-tester")["chains"] == [["1", "2"]]
        cluster.advance_time(11)
        feeder.feed(["a"], 1)
        feeder.feed(["b"], 2)
        feeder.feed(["c"], 3)
        cluster.advance_time(9)
        assert sorted(feeder.acked) == [1, 3]
        assert 2 not in feeder.failed
        cluster.advance_time(12)
        assert feeder.failed == [2]


def test_reset_timeout_chained():
    feeder = FeederSpout(Fields("field1"))
    b = TopologyBuilder()
    b.set_spout("1", feeder)
    b.set_bolt("2", ChainedResetTimeout()).shuffle_grouping("1")
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("reset-timeout-tester", {"topology.message.timeout.secs": 10},
                                b.create_topology())
        assert cluster.get_topology_info("reset-timeout-tester")["chains"] == [["1", "2"]]
        feeder.feed(["a"], 1)
        feeder.feed(["b"], 2)
        cluster.advance_time(9)
        feeder.feed(["c"], 3)
        cluster.wait_quiet()
        assert 3 in feeder.acked
        cluster.advance_time(9)
        feeder.feed(["d"], 4)
        cluster.wait_quiet()
        assert 4 in feeder.acked
        cluster.advance_time(2)
        assert feeder.failed == [2]
        feeder.feed(["e"], 5)
        cluster.wait_quiet()
        assert 5 in feeder.acked
        assert 1 not in feeder.failed
        assert 1 in feeder.acked


def test_acking_chained():
    feeder1, feeder2, feeder3 = AckCounter("num"), AckCounter("num"), AckCounter("num")
    b = TopologyBuilder()
    b.set_spout("1", feeder1.spout)
    b.set_spout("2", feeder2.spout)
    b.set_spout("3", feeder3.spout)
    b.set_bolt("4", ChainedBranching(2)).shuffle_grouping("1")
    b.set_bolt("5", ChainedBranching(4)).shuffle_grouping("2")
    b.set_bolt("6", ChainedBranching(1)).shuffle_grouping("3")
    b.set_bolt("7", ChainedAgg(3)).shuffle_grouping("4").shuffle_grouping("5").shuffle_grouping("6")
    b.set_bolt("8", ChainedBranching(2)).shuffle_grouping("7")
    b.set_bolt("9", ChainedAckBolt()).shuffle_grouping("8")
    with simulated_time(), LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "acking-test1", {}, b.create_topology())
        assert tracked.info()["chains"] == [["1", "4"], ["2", "5"], ["3", "6"], ["7", "8", "9"]]
        cluster.advance_time(11)
        feeder1.feed([1])
        tracked.wait_idle()
        feeder1.assert_num_acks(0)
        feeder2.feed([1])
        tracked.wait_idle()
        feeder1.assert_num_acks(1)
        feeder2.assert_num_acks(1)
        feeder1.feed([1])
        tracked.wait_idle()
        feeder1.assert_num_acks(0)
        feeder1.feed([1])
        tracked.wait_idle()
        feeder1.assert_num_acks(1)
        feeder3.feed([1])
        tracked.wait_idle()
        feeder1.assert_num_acks(0)
        feeder3.assert_num_acks(0)
        feeder2.feed([1])
        tracked.wait_idle()
        feeder1.assert_num_acks(1)
        feeder2.assert_num_acks(1)
        feeder3.assert_num_acks(1)


def test_ack_branching_chained():
    # Storm's test-ack-branching: the spout feeds two bolts, so neither is fused with it; the
    # join's downstream is, and the outcome must not change
    feeder = AckCounter("num")
    b = TopologyBuilder()
    b.set_spout("1", feeder.spout)
    b.set_bolt("2", ChainedIdentity()).shuffle_grouping("1")
    b.set_bolt("3", ChainedIdentity()).shuffle_grouping("1")
    b.set_bolt("4", AggBolt(4)).shuffle_grouping("2").shuffle_grouping("3")
    b.set_bolt("5", ChainedAckBolt()).shuffle_grouping("4")
    with simulated_time(), LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "test-acking2", {}, b.create_topology())
        assert tracked.info()["chains"] == [["4", "5"]]
        cluster.advance_time(11)
        feeder.feed([1])
        tracked.wait_idle()
        feeder.assert_num_acks(0)
        feeder.feed([1])
        tracked.wait_idle()
        feeder.assert_num_acks(2)


def test_acking_self_anchor_chained():
    feeder = AckCounter("num")
    b = TopologyBuilder()
    b.set_spout("1", feeder.spout)
    b.set_bolt("2", ChainedDupAnchor()).shuffle_grouping("1")
    b.set_bolt("3", ChainedAckBolt()).shuffle_grouping("2")
    with simulated_time(), LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "test", {}, b.create_topology())
        assert tracked.info()["chains"] == [["1", "2", "3"]]
        cluster.advance_time(11)
        feeder.feed([1])
        tracked.wait_idle()
        feeder.assert_num_acks(1)
        feeder.feed([1])
        feeder.feed([1])
        feeder.feed([1])
        tracked.wait_idle()
        feeder.assert_num_acks(3)
