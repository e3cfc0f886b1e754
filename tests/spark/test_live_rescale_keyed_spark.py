"""Live rescale of a keyed stateful bolt on Spark (local[3]), issue 38's Spark targets.

The exactly-once word count of ``eo_topology`` (a seekable source (2) -> split (2) -> count
(a ``StatefulBolt`` by fields grouping, Redis state, submitted with 4 tasks) -> a Redis
stream sink) on three worker processes has its count bolt rescaled 4 -> 12 -> 4 while it
runs: each move rides one checkpoint (``spark.live_keyed``), no worker process restarts
(pids and launch counts unchanged), and the committed counts and the sink equal the source.

The fault loop: in each seeded run a worker process is SIGKILLed at a random moment of each
of the two moves; the move ends live, failed (the old routing stays, it is asked again) or in
a restart under the new plan, and exactly-once holds: nothing lost, nothing duplicated, the
counts equal the source's. ``SQUALL_FAULT_SEEDS``: how many of the 20 seeds (unset: 2), or
``all`` (``make faults``).
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections import Counter

import pytest

from squall.testing.invariants import check
from tests.fault_seeds import fault_seeds as shared_fault_seeds
from tests.integration.test_stateful import committed_counts
from tests.redis_server import RedisServer
from tests.spark import eo_topology as eo
from tests.spark.test_exactly_once_faults import stream_pairs

pytestmark = [pytest.mark.spark, pytest.mark.slow]
N = 1500  # sentences: 6000 words
RATE = 100.0  # sentences per second per spout task (2 tasks): about 7.5 s of stream
ALL_SEEDS = 20
DEFAULT_SEEDS = 2  # make test; make faults runs all 20


def fault_seeds() -> range:
    """The seeds to run (``tests.fault_seeds``; unset: ``DEFAULT_SEEDS``)."""
    return shared_fault_seeds(ALL_SEEDS, DEFAULT_SEEDS)


@pytest.fixture(scope="module")
def redis(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("kspark-redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _pids(info: dict) -> dict:
    return {w["worker"]: (w["pid"], w["launch"], w["restarts"]) for w in info["workers"]}


class KeyedRun:
    """One submitted word count with ``count`` at 4 tasks on 3 workers."""

    def __init__(self, cluster, redis: RedisServer, out, name: str) -> None:
        self.cluster, self.redis, self.out, self.name = cluster, redis, out, name
        self.conf, topology = eo.wordcount(N, str(out), redis.port, name, guarantee="exactly_once",
                                           rate=RATE, workers=3, counts=4)
        cluster.submit_topology(name, self.conf, topology)

    def abandon(self) -> None:
        """Kill the topology after a failed check (before the fixtures' servers stop)."""
        try:
            self.cluster.kill_topology(self.name, wait_secs=0)
        except Exception:  # noqa: BLE001 - the failure itself is what the test reports
            pass

    def words_acked(self) -> int:
        return len(set(eo.read_pairs(str(self.out), "acked")))

    def wait_acked(self, words: int, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while self.words_acked() < words:
            assert time.monotonic() < deadline, f"{self.name}: {self.words_acked()} words acked"
            time.sleep(0.05)

    def finish(self, timeout: float = 150.0, quiet: float = 25.0):
        """Wait until the sink and counts stop changing; kill; (invariants report, counts)."""
        total = N * eo.WORDS_PER
        deadline = time.monotonic() + timeout
        last, changed = None, time.monotonic()
        try:
            while True:
                now = (self.words_acked(), len(stream_pairs(self.redis, self.name)),
                       sum(committed_counts(self.conf, self.name).values()))
                if now == last and (min(now) >= total or time.monotonic() - changed > quiet):
                    break
                assert time.monotonic() < deadline, (
                    f"{self.name}: words acked, in the sink, counted: {now} of {total}; "
                    f"errors: {self.errors()}")
                if now != last:
                    last, changed = now, time.monotonic()
                time.sleep(1.0)
        finally:
            self.last_info = self.cluster.get_topology_info(self.name)
            self.cluster.kill_topology(self.name, wait_secs=0)
        seen = self.out / "seen-0-sink.txt"
        seen.write_text("".join(f"{p} {i}\n" for p, i in stream_pairs(self.redis, self.name)))
        return check(str(self.out), eo.WORDS_PER, N), Counter(committed_counts(self.conf, self.name))

    def errors(self) -> list[str]:
        return [e["message"][:200] for e in self.cluster.get_topology_info(self.name)["errors"]][-5:]


def assert_exact(report, counts: Counter) -> None:
    """Nothing lost, unacked, duplicated or failed, and the counts are the source's."""
    assert report.lost == [] and report.unacked == [], str(report)
    assert report.duplicates == 0, str(report)
    assert report.failed == 0, f"spout fail called in exactly-once mode: {report}"
    assert dict(counts) == eo.expected_counts(N), (
        f"committed counts minus the source's: {dict(counts - Counter(eo.expected_counts(N)))}, "
        f"missing: {dict(Counter(eo.expected_counts(N)) - counts)}")


@pytest.mark.timeout(300)
def test_a_keyed_count_moves_4_12_4_live_on_spark_exactly_once(local_cluster, redis, tmp_path):
    run = KeyedRun(local_cluster, redis, tmp_path, "kg-live")
    before = local_cluster.get_topology_info("kg-live")
    old_tasks = before["components"]["count"]["tasks"]
    records = []
    try:
        for share, n in ((0.2, 12), (0.5, 4)):
            run.wait_acked(int(share * N * eo.WORDS_PER))
            local_cluster.rebalance("kg-live", parallelism={"count": n})
            info = local_cluster.get_topology_info("kg-live")
            rec = info["rescale"]
            records.append(rec)
            assert (rec["status"], rec["live"], rec["reason"]) == ("done", True, None), rec
            assert len(info["components"]["count"]["tasks"]) == n
            assert rec["moved_key_groups"] > 0, rec
            # the workers' own count of the state handed over: the sums of the counts alone
            # would come out right even if no key group's state had moved to its new owner
            assert rec["moved_bytes"] > 0, rec
            assert _pids(info) == _pids(before)  # no worker process restarted
    except BaseException:
        run.abandon()
        raise
    report, counts = run.finish()
    assert run.last_info["components"]["count"]["tasks"] == old_tasks
    assert _pids(run.last_info) == _pids(before)
    figures = [(r["components"], r["moved_key_groups"], r["moved_bytes"], r["pause_ms"]) for r in records]
    print(f"moves: {figures}; {report}")
    assert_exact(report, counts)


def _move(cluster, name: str, n: int, rng: random.Random, outcome: list) -> None:
    """Rebalance ``count`` to ``n`` with a worker SIGKILLed at a random moment of the move;
    a failed move (the old routing stays) is asked again, as a user would."""
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
    began = time.monotonic()
    for _ in range(5):
        try:
            cluster.rebalance(name, parallelism={"count": n})
        except StepError as e:
            outcome.append(f"failed ({e})")
            time.sleep(0.5)
            continue
        rec = cluster.get_topology_info(name)["rescale"]
        took = time.monotonic() - began
        outcome.append(f"kill at {delay:.2f}s, {'live' if rec['live'] else 'restart'} after {took:.2f}s"
                       + ("" if rec["live"] else f" ({rec['reason']})"))
        break
    killer.join()


@pytest.mark.timeout(400)
@pytest.mark.parametrize("seed", fault_seeds())
def test_a_keyed_move_under_a_worker_sigkill_loses_and_repeats_nothing(local_cluster, redis, tmp_path, seed):
    rng = random.Random(seed)
    name = f"kg-fault-{seed}"
    run = KeyedRun(local_cluster, redis, tmp_path, name)
    outcome: list[str] = []
    try:
        for share, n in ((rng.uniform(0.1, 0.3), 12), (rng.uniform(0.45, 0.65), 4)):
            run.wait_acked(int(share * N * eo.WORDS_PER), timeout=150)
            _move(local_cluster, name, n, rng, outcome)
    except BaseException:
        run.abandon()
        raise
    report, counts = run.finish(timeout=240)
    print(f"seed {seed}: moves {outcome}; {report}")
    assert len(run.last_info["components"]["count"]["tasks"]) == 4
    assert_exact(report, counts)
