"""Redis Streams in and out against a real redis-server: acks, restarts, kills, dead letters."""

import json
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest
import redis

from squall import Config, LocalCluster, TopologyBuilder
from squall.connectors.redis import RedisStreamBolt, RedisStreamSpout
from squall.connectors.reliable import DEAD_LETTER_STREAM
from tests.connectors.components import Upper
from tests.connectors.redis_topology import build
from tests.redis_server import RedisServer


def wait_for(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def fill(client, n, stream="in", start=0):
    pipe = client.pipeline()
    for i in range(start, start + n):
        pipe.xadd(stream, {"n": str(i), "text": f"entry {i}"})
    pipe.execute()


def outputs(client, stream="out"):
    return Counter(int(fields["n"]) for _, fields in client.xrange(stream))


def pending(client, stream="in", group="g"):
    return client.xpending(stream, group)["pending"]


def conf(**extra):
    c = Config()
    c.set_num_workers(2)
    c.update(extra)
    return c


def test_a_stream_in_comes_out_exactly_and_every_entry_is_acked_in_the_group(redis_server, redis_client):
    fill(redis_client, 300)
    lag = opened(RedisStreamSpout("in", "g", ("n",), port=redis_server.port)).lag
    with LocalCluster() as cluster:
        cluster.submit_topology("pipe", conf(), build(redis_server.port))
        assert wait_for(lambda: sum(outputs(redis_client).values()) >= 300)
        assert wait_for(lambda: pending(redis_client) == 0)
        assert lag() == 0
        fill(redis_client, 5, start=300)  # entries added later are read too
        assert wait_for(lambda: sum(outputs(redis_client).values()) >= 305)
        assert wait_for(lambda: lag() == 0)
    assert outputs(redis_client) == Counter(range(305))
    texts = {int(f["n"]): f["text"] for _, f in redis_client.xrange("out")}
    assert texts[0] == "ENTRY 0" and texts[304] == "ENTRY 304"


def test_lag_is_a_gauge_in_topology_info(redis_server, redis_client):
    fill(redis_client, 200)

    def lag(cluster):
        return cluster.get_topology_info("pipe")["components"]["in"]["metrics"].get("lag", {})

    with LocalCluster() as cluster:
        cluster.submit_topology("pipe", conf(), build(redis_server.port, delay=0.01))
        # measured while entries are waiting, then 0 once every entry is acked
        assert wait_for(lambda: (lag(cluster).get("sum") or 0) > 0)
        assert wait_for(lambda: pending(redis_client) == 0 and sum(outputs(redis_client).values()) >= 200)
        assert wait_for(lambda: lag(cluster).get("sum") == 0)
        tasks = cluster.get_topology_info("pipe")["components"]["in"]["tasks"]
        assert set(lag(cluster)["values"]) == set(tasks)


def test_lag_counts_unread_and_pending_entries(redis_server, redis_client):
    spout = opened(RedisStreamSpout("in", "g", ("n", "text"), port=redis_server.port, batch=4))
    fill(redis_client, 10)
    assert spout.next_message() == (redis_client.xrange("in")[0][0], ["0", "entry 0"])
    assert spout.lag() == 10  # 4 read (pending), 6 unread
    spout.on_done(redis_client.xrange("in")[0][0])
    spout._flush_acks()
    assert spout.lag() == 9


def opened(spout):
    spout.open({}, Context(), None)
    return spout


class Context:
    component_id = "in"

    def get_this_task_index(self):
        return 0


def test_a_restart_replays_exactly_the_entries_left_unacked(redis_server, redis_client):
    # run 1 holds (never acks) the odd entries below 20; the rest complete and are XACKed
    fill(redis_client, 60)
    held = frozenset(range(1, 20, 2))
    b = TopologyBuilder()
    b.set_spout("in", RedisStreamSpout("in", group="g", fields=("n", "text"), port=redis_server.port), 2)
    b.set_bolt("upper", Upper(hold=held), 2).shuffle_grouping("in")
    b.set_bolt("out", RedisStreamBolt("out", port=redis_server.port)).shuffle_grouping("upper")
    with LocalCluster() as cluster:
        cluster.submit_topology("pipe", conf(), b.create_topology())
        assert wait_for(lambda: sum(outputs(redis_client).values()) >= 50)
        assert wait_for(lambda: pending(redis_client) == len(held))
        cluster.kill_topology("pipe")
    assert sorted(outputs(redis_client)) == [n for n in range(60) if n not in held]
    # run 2: the same consumers find their pending entries and replay only those
    with LocalCluster() as cluster:
        cluster.submit_topology("pipe", conf(), build(redis_server.port))
        assert wait_for(lambda: sum(outputs(redis_client).values()) >= 60)
        assert wait_for(lambda: pending(redis_client) == 0)
        time.sleep(0.2)
    assert outputs(redis_client) == Counter(range(60))  # exact: nothing lost, nothing twice


def test_entries_left_pending_by_a_dead_consumer_are_claimed(redis_server, redis_client):
    fill(redis_client, 40)
    redis_client.xgroup_create("in", "g", id="0")
    ghost = redis_client.xreadgroup("g", "ghost", {"in": ">"}, count=15)  # read, then died
    assert len(ghost[0][1]) == 15
    # the ghost died an hour ago: its entries are idle far past claim_idle_secs, while the live
    # consumers' entries (acked within milliseconds, or seconds on a loaded machine) never are
    ids = [entry_id for entry_id, _ in ghost[0][1]]
    redis_client.xclaim("in", "g", "ghost", 0, ids, idle=3_600_000)
    with LocalCluster() as cluster:
        cluster.submit_topology("pipe", conf(), build(redis_server.port, claim_idle_secs=30,
                                                      claim_interval_secs=0.1))
        assert wait_for(lambda: sum(outputs(redis_client).values()) >= 40)
        assert wait_for(lambda: pending(redis_client) == 0)
    assert outputs(redis_client) == Counter(range(40))
    consumers = {c["name"]: c["pending"] for c in redis_client.xinfo_consumers("in", "g")}
    assert consumers["ghost"] == 0


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_sigkill_mid_run_then_restart_loses_nothing(redis_server, redis_client, subprocess_env):
    # C1 on a Redis source: the whole topology process is SIGKILLed mid-stream (no close, no
    # flush); a second run completes it. At-least-once: every entry out, duplicates counted.
    n = 2000
    fill(redis_client, n)
    cmd = [sys.executable, "-m", "tests.connectors.redis_topology", str(redis_server.port)]
    proc = subprocess.Popen(cmd, env=subprocess_env, stdout=subprocess.PIPE)
    try:
        assert wait_for(lambda: sum(outputs(redis_client).values()) >= 300, timeout=60)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    first = sum(outputs(redis_client).values())
    assert first < n, "the kill came too late to test anything"
    assert pending(redis_client) > 0  # entries in flight when the process died
    with LocalCluster() as cluster:
        cluster.submit_topology("pipe", conf(), build(redis_server.port))
        assert wait_for(lambda: set(outputs(redis_client)) == set(range(n)), timeout=60)
        assert wait_for(lambda: pending(redis_client) == 0)
    out = outputs(redis_client)
    duplicates = sum(c - 1 for c in out.values())
    print(f"after SIGKILL at {first}/{n} written: {duplicates} duplicates")
    assert set(out) == set(range(n))
    # only trees in flight at the kill can repeat: bounded by what the spouts had pending
    assert duplicates <= 2 * 2 * 50 + 2 * 20


def test_a_poison_entry_goes_to_a_dead_letter_stream_and_is_acked(redis_server, redis_client):
    fill(redis_client, 20)
    b = TopologyBuilder()
    spout = RedisStreamSpout("in", group="g", fields=("n", "text"), port=redis_server.port)
    spout.max_retries = 1
    b.set_spout("in", spout)
    b.set_bolt("upper", Upper(bad="7"), 2).shuffle_grouping("in")
    b.set_bolt("out", RedisStreamBolt("out", port=redis_server.port)).shuffle_grouping("upper")
    b.set_bolt("dead", RedisStreamBolt("dead", port=redis_server.port)).shuffle_grouping(
        "in", stream=DEAD_LETTER_STREAM)
    with LocalCluster() as cluster:
        cluster.submit_topology("pipe", conf(), b.create_topology())
        assert wait_for(lambda: redis_client.xlen("dead") == 1 and pending(redis_client) == 0)
    assert outputs(redis_client) == Counter(n for n in range(20) if n != 7)
    [(_, letter)] = redis_client.xrange("dead")
    entry_id = redis_client.xrange("in")[7][0]
    assert letter["msg_id"] == entry_id
    assert json.loads(letter["values"]) == ["7", "entry 7"]
    assert letter["reason"] == "error" and letter["attempts"] == "2"
    assert "ValueError: bad entry 7" in letter["error"] and letter["component"] == "upper"


def test_redis_stopped_mid_run_fails_writes_reports_and_loses_nothing(tmp_path):
    # an append-only server keeps what it acknowledged: restarted, the group's pending
    # entries are still there and the spouts replay them; the bolts' failed writes replay too
    server = RedisServer(tmp_path / "aof", ("--appendonly", "yes", "--appendfsync", "always"))
    server.start()
    try:
        client = redis.Redis(host=server.host, port=server.port, decode_responses=True)
        fill(client, 200)
        c = conf(**{"topology.max.spout.pending": 10, "topology.message.timeout.secs": 3})
        with LocalCluster() as cluster:
            cluster.submit_topology("pipe", c, build(server.port, delay=0.005))
            assert wait_for(lambda: sum(outputs(client).values()) >= 20)
            server.stop()
            time.sleep(1.0)
            server.start()
            assert wait_for(lambda: set(outputs(client)) == set(range(200)), timeout=60)
            assert wait_for(lambda: pending(client) == 0)
            info = cluster.get_topology_info("pipe")
        assert any("ConnectionError" in e["message"] for e in info["errors"])
        client.close()
    finally:
        server.stop()


@pytest.mark.parametrize("kwargs, message", [
    ({"stream": "", "group": "g", "fields": ("a",)}, "needs a stream and a group"),
    ({"stream": "s", "group": "g", "fields": ()}, "fields must name at least one entry field"),
])
def test_bad_arguments_are_one_line_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RedisStreamSpout(**kwargs)


def test_in_a_stateful_topology_a_rollback_leaves_the_output_stream_exact(redis_server, redis_client):
    from tests.connectors.components import RECORD, SentenceTally

    fill(redis_client, 300)
    b = TopologyBuilder()
    b.set_spout("entries", RedisStreamSpout("in", "g", ("n", "text"), port=redis_server.port), 2)
    b.set_bolt("upper", Upper(), 2).shuffle_grouping("entries")
    b.set_bolt("tally", SentenceTally(fail_prepare_after=150)).shuffle_grouping("entries")
    b.set_bolt("out", RedisStreamBolt("out", port=redis_server.port), 2).shuffle_grouping("upper")
    c = conf()
    c["topology.state.checkpoint.interval.ms"] = 200
    # exactly-once: with at-least-once's checkpoints an entry may fall in a committed
    # transaction at "out" and the rolled-back one at tally, and be written twice
    c["topology.guarantee"] = "exactly_once"
    with LocalCluster() as cluster:
        cluster.submit_topology("aligned-redis", c, b.create_topology())
        assert wait_for(lambda: set(outputs(redis_client)) == set(range(300))
                        and pending(redis_client) == 0, timeout=60)
    assert RECORD["tally.failed"] and RECORD["tally.rollback"], "no rollback happened"
    out = outputs(redis_client)
    assert set(out) == set(range(300))
    duplicates = {n: k for n, k in out.items() if k > 1}
    assert not duplicates, f"{len(duplicates)} entries written twice, e.g. {list(duplicates)[:5]}"
    assert not redis_client.keys("out:_squall_txn:*:tx:*"), "staged entries left behind"
    [entry] = [f for _, f in redis_client.xrange("out") if f["n"] == "7"]
    assert entry["text"] == "ENTRY 7"


def test_staged_transactions_publish_once_and_recovery_discards_the_uncommitted(redis_server):
    from squall.connectors.redis_txn import StreamTxnStaging

    client = redis.Redis(port=redis_server.port)
    s = StreamTxnStaging(client, "out", "sink-0", maxlen=None)
    s.add({"n": "1"})
    s.add({"n": "2"})
    assert s.seal(5) and not s.seal(6)  # nothing open for 6
    s.add({"n": "3"})
    assert client.xlen("out") == 0  # nothing visible before the commit
    assert s.publish(5) == 2 and s.publish(5) == 0  # a replayed commit appends nothing
    s.seal(6)
    s.add({"n": "4"})
    assert StreamTxnStaging(client, "out", "sink-0", None).recover(committed=5) == (0, [6])
    assert [f[b"n"] for _, f in client.xrange("out")] == [b"1", b"2"]
    assert client.keys("out:_squall_txn:*") == []
    s.add({"n": "5"})
    s.seal(6)
    assert s.recover(committed=6) == (1, [])
    assert [f[b"n"] for _, f in client.xrange("out")] == [b"1", b"2", b"5"]
    client.close()
