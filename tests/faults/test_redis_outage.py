"""Stateful topologies on a real Redis: kill and resubmit, and Redis stopped mid-run."""

import time
from collections import Counter

import pytest

from squall import LocalCluster
from tests.integration.components import RECORD
from tests.integration.test_stateful import SENTENCES, committed_counts, conf, expected, topology
from tests.redis_server import RedisServer
from tests.waiting import wait_for


@pytest.fixture
def redis(tmp_path):
    # append-only with fsync: a restarted server comes back with what it had committed
    server = RedisServer(tmp_path / "redis", ("--appendonly", "yes", "--appendfsync", "always"))
    server.start()
    yield server
    server.stop()


def redis_conf(server, **extra):
    return conf({"topology.state.provider": "squall.state.redis.RedisStateProvider",
                 "topology.state.provider.config": {"host": server.host, "port": server.port,
                                                    "timeout": 1}}, **extra)


def test_redis_state_keeps_exact_counts_across_kill_and_resubmit(redis):
    c = redis_conf(redis)
    sentences = SENTENCES * 30
    for run in (1, 2):
        RECORD.clear()
        with LocalCluster() as cluster:
            cluster.submit_topology("rwc", c, topology(sentences))
            assert wait_for(lambda: len(RECORD["spout.acked"]) >= len(sentences), timeout=30)
            cluster.kill_topology("rwc")
        assert committed_counts(c, "rwc") == expected(sentences * run)


def test_redis_stopped_mid_run_fails_tuples_reports_and_recovers(redis):
    # a few tuples in flight per spout task, so that emitting spans the outage
    c = redis_conf(redis, **{"topology.message.timeout.secs": 3, "topology.max.spout.pending": 10})
    sentences = SENTENCES * 200
    with LocalCluster() as cluster:
        cluster.submit_topology("outage", c, topology(sentences))
        assert wait_for(lambda: len(RECORD["spout.acked"]) >= 50, timeout=20)
        redis.stop()
        # while Redis is down nothing commits, so nothing more is acked; errors are reported
        assert wait_for(lambda: any("unavailable" in e["message"]
                                    for e in cluster.get_topology_info("outage")["errors"]), timeout=10)
        # past the message timeout, held tuples are failed (replayed later); on a loaded
        # machine that can take longer than the timeout itself
        assert wait_for(lambda: RECORD["spout.failed"], timeout=30), \
            "tuples held during the outage should have been failed"
        acked_while_down = len(RECORD["spout.acked"])
        time.sleep(1)  # Redis is really down: nothing can commit, so nothing is acked
        assert len(RECORD["spout.acked"]) == acked_while_down
        redis.start()
        assert wait_for(lambda: len({m for _, m in RECORD["spout.acked"]}) == len(sentences), timeout=60)
        cluster.kill_topology("outage")
    counts = committed_counts(c, "outage")
    want = expected(sentences)
    # at-least-once: every word at least as often as sent; replays after a commit whose
    # acks were lost may count a sentence twice
    assert all(counts[w] >= n for w, n in want.items()), Counter(want) - counts
    acked = Counter(m for _, m in RECORD["spout.acked"])
    assert set(acked) == set(range(len(sentences)))
