"""DRPC with workers on Spark (local[3]): the reach example through a ``squall drpc`` server."""

from __future__ import annotations

import pytest

from squall import Config
from squall.drpc import DRPCClient, DRPCExecutionError, DRPCServer, LinearDRPCTopologyBuilder
from tests.drpc.components import TWEETERS_DB, FailFinishBolt, expected_reach, reach_builder

pytestmark = [pytest.mark.spark, pytest.mark.slow]
TOKEN = "spark-drpc-test-token"


@pytest.mark.timeout(240)
def test_reach_and_a_failing_function_through_the_server(local_cluster):
    with DRPCServer(TOKEN, port=0) as srv:
        conf = Config()
        conf.set_num_workers(1)  # two topologies on local[3]: one slot each
        conf.update({"drpc.servers": ["127.0.0.1"], "drpc.port": srv.port, "squall.drpc.token": TOKEN})
        fails = LinearDRPCTopologyBuilder("fails")
        fails.add_bolt(FailFinishBolt(), 2)
        local_cluster.submit_topology("reach", conf, reach_builder().create_remote_topology())
        local_cluster.submit_topology("fails", conf, fails.create_remote_topology())
        try:
            client = DRPCClient("127.0.0.1", srv.port, token=TOKEN)
            for url in TWEETERS_DB:
                assert client.execute("reach", url, timeout=60) == str(expected_reach(url))
            with pytest.raises(DRPCExecutionError) as info:
                client.execute("fails", "x", timeout=60)
            assert info.value.type == "FAILED_REQUEST"
        finally:
            local_cluster.kill_topology("reach", wait_secs=0)
            local_cluster.kill_topology("fails", wait_secs=0)
