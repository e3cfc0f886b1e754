"""Storm's DRPC integration tests (DRPCIntegrationTest / drpc_test.clj) on LocalCluster."""

from __future__ import annotations

import time

import pytest

from squall import Config, InvalidTopologyError, LocalCluster, TopologyBuilder
from squall.drpc import (
    DRPCExecutionError,
    DRPCSpout,
    LinearDRPCTopologyBuilder,
    LocalDRPC,
    ReturnResults,
)
from squall.runtime import clock
from tests.drpc.components import (
    TWEETERS_DB,
    AckOnTick,
    CountAggregator,
    CreateTuples,
    EmitFinish,
    ExclamationBolt,
    ExclamationBoltDrpc,
    FailFinishBolt,
    FailingBatch,
    IdBolt,
    NeverAcks,
    NeverAnswers,
    PartialCount,
    expected_reach,
    reach_builder,
)


def conf(workers=2, **extra):
    c = Config()
    c.set_num_workers(workers)
    c.update(extra)
    return c


def test_drpc_flow_with_a_hand_built_topology():
    with LocalDRPC() as drpc, LocalCluster() as cluster:
        b = TopologyBuilder()
        b.set_spout("1", DRPCSpout("test", drpc))
        b.set_bolt("2", ExclamationBolt()).shuffle_grouping("1")
        b.set_bolt("3", ReturnResults()).global_grouping("2")
        cluster.submit_topology("test", conf(1), b.create_topology())
        assert drpc.execute("test", "aaa") == "aaa!!!"
        assert drpc.execute("test", "b") == "b!!!"
        assert drpc.execute("test", "c") == "c!!!"


def test_drpc_builder():
    with LocalDRPC() as drpc, LocalCluster() as cluster:
        builder = LinearDRPCTopologyBuilder("test")
        builder.add_bolt(ExclamationBoltDrpc(), 3)
        cluster.submit_topology("builder-test", conf(), builder.create_local_topology(drpc))
        assert drpc.execute("test", "aaa") == "aaa!!!"
        assert drpc.execute("test", "b") == "b!!!"
        assert drpc.execute("test", "c") == "c!!!"


def test_drpc_coordination():
    with LocalDRPC() as drpc, LocalCluster() as cluster:
        builder = LinearDRPCTopologyBuilder("square")
        builder.add_bolt(CreateTuples(), 3)
        builder.add_bolt(PartialCount(), 3).shuffle_grouping()
        builder.add_bolt(CountAggregator(), 3).fields_grouping("request")
        cluster.submit_topology("squared", conf(), builder.create_local_topology(drpc))
        assert drpc.execute("square", "2") == "4"
        assert drpc.execute("square", "10") == "100"
        assert drpc.execute("square", "1") == "1"
        assert drpc.execute("square", "0") == "0"  # no tuple at all: coordination still finishes


def test_coordination_waits_for_acks_that_come_later():
    with LocalDRPC() as drpc, LocalCluster() as cluster:
        builder = LinearDRPCTopologyBuilder("held")
        builder.add_bolt(CreateTuples(), 2)
        builder.add_bolt(AckOnTick(), 3).shuffle_grouping()
        builder.add_bolt(CountAggregator(), 2).fields_grouping("request")
        cluster.submit_topology("held", conf(), builder.create_local_topology(drpc))
        assert drpc.execute("held", "3") == "9"
        assert drpc.execute("held", "5") == "25"


def test_drpc_coordination_tricky():
    with LocalDRPC() as drpc, LocalCluster() as cluster:
        builder = LinearDRPCTopologyBuilder("tricky")
        builder.add_bolt(IdBolt(), 3)
        builder.add_bolt(IdBolt(), 3).shuffle_grouping()
        builder.add_bolt(EmitFinish(), 3).fields_grouping("request")
        cluster.submit_topology("tricky", conf(), builder.create_local_topology(drpc))
        assert drpc.execute("tricky", "2") == "done"
        assert drpc.execute("tricky", "3") == "done"
        assert drpc.execute("tricky", "4") == "done"


def test_drpc_fail_finish():
    with LocalDRPC() as drpc, LocalCluster() as cluster:
        builder = LinearDRPCTopologyBuilder("fail2")
        builder.add_bolt(FailFinishBolt(), 3)
        cluster.submit_topology("fail2", conf(), builder.create_local_topology(drpc))
        with pytest.raises(DRPCExecutionError) as info:
            drpc.execute("fail2", "2")
        assert info.value.type == "FAILED_REQUEST"
        assert "tuple tree failed" in str(info.value)


def test_a_tuple_tree_that_times_out_fails_the_request_with_the_reason():
    with LocalDRPC() as drpc, LocalCluster() as cluster:
        builder = LinearDRPCTopologyBuilder("held")
        builder.add_bolt(NeverAcks(), 1)
        cluster.submit_topology("held", conf(1, **{"topology.message.timeout.secs": 1}),
                                builder.create_local_topology(drpc))
        start = time.monotonic()
        with pytest.raises(DRPCExecutionError) as info:
            drpc.execute("held", "x")  # drpc.request.timeout.secs is 600: the tree's timeout wins
        assert time.monotonic() - start < 10
    assert info.value.type == "FAILED_REQUEST"
    assert "failed or timed out in topology 'held'" in str(info.value)


def test_batch_bolt_failing_in_finish_batch_fails_the_request_fast():
    with LocalDRPC() as drpc, LocalCluster() as cluster:
        builder = LinearDRPCTopologyBuilder("nope")
        builder.add_bolt(IdBolt(), 2)
        builder.add_bolt(FailingBatch(), 2).fields_grouping("request")
        cluster.submit_topology("nope", conf(**{"topology.message.timeout.secs": 30}),
                                builder.create_local_topology(drpc))
        start = time.monotonic()
        with pytest.raises(DRPCExecutionError, match="failed"):
            drpc.execute("nope", "x")
        assert time.monotonic() - start < 10  # failed, not timed out


def test_reach_answers_correctly_for_every_url():
    with LocalDRPC() as drpc, LocalCluster() as cluster:
        cluster.submit_topology("reach", conf(3), reach_builder().create_local_topology(drpc))
        for url in [*TWEETERS_DB, "unknown.com/nothing"]:
            assert drpc.execute("reach", url) == str(expected_reach(url))
    assert expected_reach("foo.com/blog/1") == 16


def test_concurrent_requests_each_get_their_own_answer():
    import concurrent.futures

    with LocalDRPC() as drpc, LocalCluster() as cluster:
        cluster.submit_topology("reach", conf(2), reach_builder().create_local_topology(drpc))
        urls = list(TWEETERS_DB) * 5
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda u: drpc.execute("reach", u), urls))
    assert answers == [str(expected_reach(u)) for u in urls]


def test_request_timeout_from_the_topology_conf_on_simulated_time():
    with clock.simulation() as sim, LocalDRPC() as drpc, LocalCluster() as cluster:
        builder = LinearDRPCTopologyBuilder("slow")
        builder.add_bolt(NeverAnswers(), 1)
        cluster.submit_topology("slow", conf(1, **{"drpc.request.timeout.secs": 5}),
                                builder.create_local_topology(drpc))
        import threading

        box = {}

        def call():
            try:
                box["result"] = drpc.execute("slow", "x")
            except DRPCExecutionError as e:
                box["error"] = e

        t = threading.Thread(target=call)
        t.start()
        time.sleep(0.3)
        sim.advance(4)
        time.sleep(0.3)
        assert t.is_alive()  # 4 s: not yet
        sim.advance(2)
        t.join(5)
        assert not t.is_alive()
    assert box["error"].type == "SERVER_TIMEOUT"
    assert "no result within 5 s" in str(box["error"])


def test_bad_linear_topologies_are_refused_with_the_reason():
    empty = LinearDRPCTopologyBuilder("f")
    with pytest.raises(InvalidTopologyError, match="no bolts"):
        empty.create_remote_topology()
    b = LinearDRPCTopologyBuilder("f")
    b.add_bolt(CreateTuples())  # its one stream has one field
    with pytest.raises(InvalidTopologyError, match="exactly two fields"):
        b.create_remote_topology()
    with pytest.raises(InvalidTopologyError, match="Bolt, BasicBolt or BatchBolt"):
        LinearDRPCTopologyBuilder("f").add_bolt(object())
