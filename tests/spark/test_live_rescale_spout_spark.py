"""A spout rescaled live on Spark (local[3]), issue 38: its tasks hand over riding one checkpoint.

A ``FileSpout`` over six files (2 tasks) -> ``CountFirst`` (a ``StatefulBolt`` counting each
line in Redis state) on three worker processes under exactly-once; the spout is rebalanced
2 -> 3 -> 2 while it reads. Each move rides one checkpoint (``spark.live_move.rescale_spout``):
the old tasks stage their positions at ``PREPARE(T)``, commit and close at ``COMMIT(T)``, the
new ones take the merged position at the next barrier. No worker process restarts, and every
line is counted once.

With a worker process SIGKILLed at a random moment of each move, the move ends live, failed
(the old tasks go on; it is asked again) or in a restart under the new plan, and every line
is still counted once. ``SQUALL_FAULT_SEEDS``: how many seeds (unset: 2; ``all``: 10).

A ``KafkaSpout`` on a real broker (Tansu) moves 2 -> 3 -> 2 the same way, every record once.
At-least-once, the spout's old tasks drain instead (``spark.live_move.drain_spout``): they
stop emitting, every pending tree is acked or failed, then the new tasks start; no line is
lost, with a worker process SIGKILLed during the drain or just after it (a spout task added
by the move times out its trees as the first ones do). ``SQUALL_FAULT_SEEDS`` for these two
loops: unset 2 seeds, ``all`` 8.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time

import pytest

from squall import Config, Fields, TopologyBuilder
from squall.connectors.files import FileSpout
from tests.connectors.test_seekable_rescale import CountFirst, check_once
from tests.fault_seeds import fault_seeds as shared_fault_seeds
from tests.integration.test_stateful import committed_counts
from tests.kafka_broker import KafkaBroker
from tests.redis_server import RedisServer
from tests.spark.test_at_least_once_file_faults import figures, lost_message

pytestmark = [pytest.mark.spark, pytest.mark.slow]
NAME = "spout-live-spark"
FILES, LINES = 6, 300


@pytest.fixture(scope="module")
def redis(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("sspout-redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = KafkaBroker(tmp_path_factory.mktemp("sspout-broker"))
    b.start()
    try:
        yield b
    finally:
        b.stop()


def _pids(info: dict) -> dict:
    return {w["worker"]: (w["pid"], w["launch"], w["restarts"]) for w in info["workers"]}


def _topology(tmp_path, redis_port: int, guarantee: str = "exactly_once") -> tuple[Config, object, set[str]]:
    src = tmp_path / "in"
    src.mkdir()
    for f in range(FILES):
        (src / f"f{f}.txt").write_text("".join(f"{f}:{i}\n" for i in range(LINES)), encoding="utf-8")
    want = {f"{f}:{i}" for f in range(FILES) for i in range(LINES)}
    b = TopologyBuilder()
    b.set_spout("source", FileSpout(str(src), "*.txt", progress=str(tmp_path / "progress"),
                                    commit_interval_secs=0.2, poll_secs=0.1, read_bytes=64), 2)
    b.set_bolt("sink", CountFirst(), 2).fields_grouping("source", Fields("line"))
    conf = Config()
    conf.set_num_workers(3)
    conf.set_max_spout_pending(20)  # slow enough that the moves happen while lines wait
    conf.update({"topology.guarantee": guarantee, "topology.state.checkpoint.interval.ms": 300,
                 "topology.message.timeout.secs": 10,
                 "topology.state.provider": "squall.state.redis.RedisStateProvider",
                 "topology.state.provider.config": {"host": "127.0.0.1", "port": redis_port}})
    return conf, b.create_topology(), want


@pytest.mark.timeout(300)
def test_an_exactly_once_file_spout_moves_2_3_2_live_on_spark_counting_every_line_once(
        local_cluster, redis, tmp_path):
    conf, topology, want = _topology(tmp_path, redis.port)
    local_cluster.submit_topology(NAME, conf, topology)

    def counted() -> int:
        return len(committed_counts(conf, NAME, "sink"))

    def errors() -> list[str]:
        return [e["message"][:200] for e in local_cluster.get_topology_info(NAME)["errors"]][-5:]

    records = []
    try:
        before = local_cluster.get_topology_info(NAME)
        for share, n in ((0.2, 3), (0.5, 2)):
            deadline = time.monotonic() + 90
            while counted() < share * len(want):
                assert time.monotonic() < deadline, f"{counted()} lines counted; {errors()}"
                time.sleep(0.1)
            local_cluster.rebalance(NAME, parallelism={"source": n})
            info = local_cluster.get_topology_info(NAME)
            records.append(info["rescale"])
            assert (info["rescale"]["status"], info["rescale"]["live"], info["rescale"]["reason"]) \
                == ("done", True, None), info["rescale"]
            assert len(info["components"]["source"]["tasks"]) == n
            assert _pids(info) == _pids(before)  # no worker process restarted
        deadline = time.monotonic() + 120
        while counted() < len(want) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2.0)  # a later checkpoint would commit a line twice, if one were read twice
        got = committed_counts(conf, NAME, "sink")
        info = local_cluster.get_topology_info(NAME)
    finally:
        local_cluster.kill_topology(NAME, wait_secs=0)
    print(f"moves: {[(r['components'], r['pause_ms']) for r in records]}")
    assert [r["components"] for r in records] == [{"source": [2, 3]}, {"source": [3, 2]}]
    assert _pids(info) == _pids(before)
    check_once(dict(got), want, errors=[e["message"][:200] for e in info["errors"]][-5:])


@pytest.mark.timeout(300)
def test_an_at_least_once_file_spout_moves_2_3_2_live_on_spark_losing_no_line(local_cluster, redis, tmp_path):
    # the old tasks stop reading and drain (every pending tree acked or failed), then the new
    # ones start: FileSpout commits no line past an unacked one, so a line failed while its
    # task drains is read again by the file's new owner
    name = "spout-alo-spark"
    conf, topology, want = _topology(tmp_path, redis.port, "at_least_once")
    local_cluster.submit_topology(name, conf, topology)

    def counted() -> int:
        return len(committed_counts(conf, name, "sink"))

    def errors() -> list[str]:
        return [e["message"][:200] for e in local_cluster.get_topology_info(name)["errors"]][-5:]

    records = []
    try:
        before = local_cluster.get_topology_info(name)
        for share, n in ((0.2, 3), (0.5, 2)):
            deadline = time.monotonic() + 90
            while counted() < share * len(want):
                assert time.monotonic() < deadline, f"{counted()} lines counted; {errors()}"
                time.sleep(0.1)
            local_cluster.rebalance(name, parallelism={"source": n})
            info = local_cluster.get_topology_info(name)
            records.append(info["rescale"])
            assert (info["rescale"]["status"], info["rescale"]["live"], info["rescale"]["reason"]) \
                == ("done", True, None), info["rescale"]
            assert len(info["components"]["source"]["tasks"]) == n
            assert _pids(info) == _pids(before)  # no worker process restarted
        deadline = time.monotonic() + 120
        while counted() < len(want) and time.monotonic() < deadline:
            time.sleep(0.2)
        got = committed_counts(conf, name, "sink")
        info = local_cluster.get_topology_info(name)
    finally:
        local_cluster.kill_topology(name, wait_secs=0)
    print(f"moves: {[(r['components'], r['pause_ms']) for r in records]}; "
          f"{sum(got.values()) - len(got)} lines counted more than once")
    assert [r["components"] for r in records] == [{"source": [2, 3]}, {"source": [3, 2]}]
    assert _pids(info) == _pids(before)
    assert set(got) <= want, sorted(set(got) - want)[:5]
    assert not want - set(got), (f"{len(want - set(got))} lines lost, e.g. {sorted(want - set(got))[:5]}; "
                                 f"{[e['message'][:200] for e in info['errors']][-5:]}")
    assert min(got.values()) >= 1


def _rescale_2_3_2(cluster, name: str, counted, total: int) -> tuple[list[dict], dict]:
    """Rebalance ``source`` to 3 once a fifth of ``total`` is counted, back to 2 at half; each
    move live with no worker process restarted. The records and the info from before."""
    records = []
    before = cluster.get_topology_info(name)
    for share, n in ((0.2, 3), (0.5, 2)):
        deadline = time.monotonic() + 90
        while counted() < share * total:
            errors = [e["message"][:200] for e in cluster.get_topology_info(name)["errors"]][-5:]
            assert time.monotonic() < deadline, f"{counted()} counted; {errors}"
            time.sleep(0.1)
        cluster.rebalance(name, parallelism={"source": n})
        info = cluster.get_topology_info(name)
        records.append(info["rescale"])
        assert (info["rescale"]["status"], info["rescale"]["live"], info["rescale"]["reason"]) \
            == ("done", True, None), info["rescale"]
        assert len(info["components"]["source"]["tasks"]) == n
        assert _pids(info) == _pids(before)  # no worker process restarted
    return records, before


@pytest.mark.timeout(300)
def test_an_exactly_once_kafka_spout_moves_2_3_2_live_on_spark_counting_every_record_once(
        local_cluster, redis, broker, tmp_path):
    # records produced all along over 5 partitions; each move rides one checkpoint and the new
    # tasks take each partition at the offset the old tasks committed at it (merge_positions)
    from squall.connectors.kafka import KafkaSpout, KafkaSpoutConfig
    from tests.connectors.kafka.test_kafka_exactly_once import KeyTranslator, produce_slowly

    name, partitions, n = "kafka-live-spark", 5, 600
    broker.create_topic("in", partitions)
    config = KafkaSpoutConfig(broker.bootstrap, ["in"], group_id=name, record_translator=KeyTranslator(),
                              partition_refresh_period_ms=300, offset_commit_period_ms=200)
    b = TopologyBuilder()
    b.set_spout("source", KafkaSpout(config), 2)
    b.set_bolt("sink", CountFirst(), 2).fields_grouping("source", Fields("key"))
    conf, _, _ = _topology(tmp_path, redis.port)
    want = {f"in:{p}:{o}" for p in range(partitions) for o in range(n // partitions)}
    local_cluster.submit_topology(name, conf, b.create_topology())
    producer = produce_slowly(broker, "in", n, partitions, 8.0)

    def counted() -> int:
        return len(committed_counts(conf, name, "sink"))

    try:
        records, before = _rescale_2_3_2(local_cluster, name, counted, len(want))
        producer.join()
        deadline = time.monotonic() + 120
        while counted() < len(want) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2.0)  # a later checkpoint would commit a record twice, if one were read twice
        got = committed_counts(conf, name, "sink")
        info = local_cluster.get_topology_info(name)
    finally:
        local_cluster.kill_topology(name, wait_secs=0)
    print(f"moves: {[(r['components'], r['pause_ms']) for r in records]}")
    assert [r["components"] for r in records] == [{"source": [2, 3]}, {"source": [3, 2]}]
    assert _pids(info) == _pids(before)
    check_once(dict(got), want, errors=[e["message"][:200] for e in info["errors"]][-5:])


def fault_seeds() -> range:
    return shared_fault_seeds(10)


def _move_under_kill(cluster, name: str, n: int, rng: random.Random, outcome: list) -> None:
    """Rebalance ``source`` to ``n`` with a worker SIGKILLed 0 to 1.2 s after asking; a failed
    move (the old tasks go on) is asked again, as a user would."""
    from squall.spark.live_move import StepError

    victims = sorted(w["pid"] for w in cluster.get_topology_info(name)["workers"] if w.get("pid"))
    victim, delay = rng.choice(victims), rng.uniform(0.0, 1.2)

    def kill() -> None:
        time.sleep(delay)
        try:
            os.kill(victim, signal.SIGKILL)
        except ProcessLookupError:
            pass
    killer = threading.Thread(target=kill, daemon=True)
    killer.start()
    for _ in range(5):
        try:
            cluster.rebalance(name, parallelism={"source": n})
        except StepError as e:
            outcome.append(f"failed ({e})")
            time.sleep(0.5)
            continue
        rec = cluster.get_topology_info(name)["rescale"]
        outcome.append(f"kill at {delay:.2f}s: {'live' if rec['live'] else 'restart'}"
                       + ("" if rec["live"] else f" ({rec['reason']})"))
        break
    killer.join()


@pytest.mark.timeout(400)
@pytest.mark.parametrize("seed", fault_seeds())
def test_a_spout_move_under_a_worker_sigkill_counts_every_line_once(local_cluster, redis, tmp_path, seed):
    rng = random.Random(seed)
    name = f"spout-fault-{seed}"
    conf, topology, want = _topology(tmp_path, redis.port)
    local_cluster.submit_topology(name, conf, topology)

    def counted() -> int:
        return len(committed_counts(conf, name, "sink"))

    outcome: list[str] = []
    try:
        for share, n in ((rng.uniform(0.1, 0.3), 3), (rng.uniform(0.45, 0.65), 2)):
            deadline = time.monotonic() + 150
            while counted() < share * len(want):
                assert time.monotonic() < deadline, f"{counted()} lines counted; {outcome}"
                time.sleep(0.1)
            _move_under_kill(local_cluster, name, n, rng, outcome)
        deadline = time.monotonic() + 180
        while counted() < len(want) and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(2.0)
        got = committed_counts(conf, name, "sink")
        info = local_cluster.get_topology_info(name)
    finally:
        local_cluster.kill_topology(name, wait_secs=0)
    print(f"seed {seed}: moves {outcome}; {len(got)} of {len(want)} lines")
    assert len(info["components"]["source"]["tasks"]) == 2
    check_once(dict(got), want, errors=[e["message"][:200] for e in info["errors"]][-5:])


def drain_seeds() -> range:
    """The at-least-once drain's seeds: ``SQUALL_FAULT_SEEDS`` (a count, or ``all``: 8; unset: 2)."""
    return shared_fault_seeds(8)


@pytest.mark.timeout(400)
@pytest.mark.parametrize("seed", drain_seeds())
def test_an_at_least_once_spout_drain_under_a_worker_sigkill_loses_no_line(local_cluster, redis, tmp_path,
                                                                           seed):
    # a worker process SIGKILLed 0 to 1.2 s into each drain: the move ends live, or in a
    # restart under the new plan; either way every line is counted at least once
    rng = random.Random(100 + seed)
    name = f"spout-alo-fault-{seed}"
    conf, topology, want = _topology(tmp_path, redis.port, "at_least_once")
    local_cluster.submit_topology(name, conf, topology)

    def counted() -> int:
        return len(committed_counts(conf, name, "sink"))

    outcome: list[str] = []
    try:
        for share, n in ((rng.uniform(0.1, 0.3), 3), (rng.uniform(0.45, 0.65), 2)):
            deadline = time.monotonic() + 150
            while counted() < share * len(want):
                assert time.monotonic() < deadline, f"{counted()} lines counted; {outcome}"
                time.sleep(0.1)
            _move_under_kill(local_cluster, name, n, rng, outcome)
        deadline = time.monotonic() + 180
        while counted() < len(want) and time.monotonic() < deadline:
            time.sleep(0.5)
        got = committed_counts(conf, name, "sink")
        info = local_cluster.get_topology_info(name)
    finally:
        local_cluster.kill_topology(name, wait_secs=0)
    print(f"seed {seed}: moves {outcome}; {len(got)} of {len(want)} lines, "
          f"{sum(got.values()) - len(got)} counted more than once")
    assert len(info["components"]["source"]["tasks"]) == 2
    assert set(got) <= want
    restarts = {w["worker"]: w["restarts"] for w in info["workers"]}
    assert not want - set(got), lost_message(got, want, [*outcome, f"restarts {restarts}", figures(info)],
                                             [e["message"][:200] for e in info["errors"]][-5:],
                                             tmp_path / "progress")


@pytest.mark.timeout(400)
@pytest.mark.parametrize("seed", drain_seeds())
def test_a_worker_sigkilled_after_live_at_least_once_drains_loses_no_line(local_cluster, redis, tmp_path,
                                                                          seed):
    # what seed 4 of the loop above once went through (both moves live, both kills after
    # them, 4 lines lost): each move live, then a worker process (mostly one hosting a spout
    # task) SIGKILLed 0 to 1.5 s after it and relaunched under the moved plan
    rng = random.Random(200 + seed)
    name = f"spout-alo-after-{seed}"
    conf, topology, want = _topology(tmp_path, redis.port, "at_least_once")
    local_cluster.submit_topology(name, conf, topology)

    def counted() -> int:
        return len(committed_counts(conf, name, "sink"))

    outcome: list[str] = []
    try:
        for share, n in ((rng.uniform(0.1, 0.3), 3), (rng.uniform(0.45, 0.65), 2)):
            deadline = time.monotonic() + 150
            while counted() < share * len(want):
                assert time.monotonic() < deadline, f"{counted()} lines counted; {outcome}"
                time.sleep(0.1)
            local_cluster.rebalance(name, parallelism={"source": n})
            info = local_cluster.get_topology_info(name)
            rec = info["rescale"]
            time.sleep(rng.uniform(0.0, 1.5))
            spouts = set(info["components"]["source"]["tasks"])
            pids = {w["worker"]: w["pid"] for w in info["workers"] if w.get("pid")}
            readers = sorted(w["worker"] for w in info["workers"]
                             if w.get("pid") and spouts & set(w["tasks"]))
            worker = rng.choice(readers if readers and rng.random() < 0.7 else sorted(pids))
            try:
                os.kill(pids[worker], signal.SIGKILL)
            except ProcessLookupError:
                pass
            outcome.append(f"{'live' if rec['live'] else 'restart'} {rec['components']}, then SIGKILL "
                           f"worker {worker}{' (spout)' if worker in readers else ''} at {counted()} lines")
        deadline = time.monotonic() + 180
        while counted() < len(want) and time.monotonic() < deadline:
            time.sleep(0.5)
        got = committed_counts(conf, name, "sink")
        info = local_cluster.get_topology_info(name)
    finally:
        local_cluster.kill_topology(name, wait_secs=0)
    print(f"seed {seed}: {outcome}; {len(got)} of {len(want)} lines, "
          f"{sum(got.values()) - len(got)} counted more than once")
    assert len(info["components"]["source"]["tasks"]) == 2
    assert set(got) <= want
    restarts = {w["worker"]: w["restarts"] for w in info["workers"]}
    assert not want - set(got), lost_message(got, want, [*outcome, f"restarts {restarts}", figures(info)],
                                             [e["message"][:200] for e in info["errors"]][-5:],
                                             tmp_path / "progress")
