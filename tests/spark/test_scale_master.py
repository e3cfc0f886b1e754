"""The real topology master against 200 simulated workers (issue 37): what must hold at any size.

The workers are ``benchmarks.scale_sim``'s: the real sealed coordination protocol with
realistic heartbeats, many per process; only launching them as Spark jobs is replaced.
The master's own store beat (``TopologyApp``) writes to a real SQLite store.
"""

from __future__ import annotations

import random
import secrets
import threading
import time

import pytest

from benchmarks.scale import NAME, CountingStore, NoSpark, wait_for
from benchmarks.scale_sim import SimJobs, word_count
from squall.spark import settings as S
from squall.spark.app import TopologyApp
from squall.spark.liveness import PROGRESS, TaskLiveness
from squall.spark.master import TopologyMaster
from squall.spark.placement import placement_record
from squall.store import keys as K
from squall.store import open_store
from squall.store import taskrecords as R
from tests.nimbus.zookeeper_server import ZooKeeperServer

WORKERS = 200

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture
def running(tmp_path):
    topology, conf, plan = word_count(WORKERS, {S.HEARTBEAT_TIMEOUT: 3.0})
    secret = secrets.token_bytes(32)
    master = TopologyMaster(NAME, topology, conf, plan, sc=NoSpark(), secret=secret)
    jobs = SimJobs(NAME, secret, master.address, plan, 1.0, pools=2)
    master.jobs = jobs
    store = CountingStore(open_store(f"sqlite:{tmp_path}/store.db"))
    store.put(K.topology_key(NAME), {"epoch": 1, "name": NAME})
    app = TopologyApp(store, None, NAME, 1)
    beats = threading.Thread(target=app._heartbeat_until_exit, daemon=True)
    try:
        master.start(timeout=200)
        app.master, app.state = master, K.RUNNING
        beats.start()
        yield master, jobs, store, app
    finally:
        app._exit.set()
        if beats.is_alive():
            beats.join(30)
        master.stop()
        jobs.close()
        store.close()


def settled(jobs: SimJobs) -> dict:
    """The simulated workers' counts once no address message arrived for half a second.

    On a loaded machine the workers' processes lag behind the master: counts taken at once
    would leave the start's last messages to the next count.
    """
    last = jobs.stats()
    for _ in range(60):
        time.sleep(0.5)
        now = jobs.stats()
        if now["address_msgs"] == last["address_msgs"]:
            return now
        last = now
    return last


def test_master_at_200_workers_welcomes_notices_deactivates_and_stores_within_limits(running):
    master, jobs, store, app = running
    # every worker welcomed, and started, each in its own slot
    assert master.calls.call(lambda: all(s.current and s.current.started for s in master.registry.slots))
    started = settled(jobs)  # the start's last address messages may still be on their way
    assert started["welcomes"] == WORKERS
    # each worker was told each other's address about once, not the whole map each time (N x N)
    assert started["address_bytes"] <= 100 * WORKERS ** 2, started
    # a deactivate, then an activate, confirmed by every worker
    for active in (False, True):
        master.set_active(active, timeout=60)
        seq = master._active_seq
        behind = master.calls.call(lambda s=seq: [i.worker for i in master.registry.current()
                                                  if i.applied < s])
        assert behind == []
    # a silent worker is noticed (declared dead) and runs again under a new launch
    slot = master.registry.slots[WORKERS // 2]
    launch = slot.launch
    assert wait_for(lambda: master.calls.call(lambda: bool(slot.current.metrics)), 30)  # it has beaten
    jobs.silence(slot.index)
    assert wait_for(lambda: master.calls.call(
        lambda: slot.launch > launch and slot.current is not None and slot.current.started), 60)
    assert slot.restarts == 1 and "no heartbeat" in (slot.last_error or "")
    told = settled(jobs)["address_bytes"] - started["address_bytes"]
    assert told <= 100 * WORKERS, told  # the others learn the one new address
    # the others were never taken for dead meanwhile
    assert sum(s.restarts for s in master.registry.slots) == 1
    # the store's heartbeat, from counters only, says what the whole info says (dead processes' counters too)
    full, brief = master.calls.call(lambda: (master._info(), master._beat_info()))
    assert {**app._summary(full), "uptime_secs": 0} == {**app._summary(brief), "uptime_secs": 0}
    assert placement_record(master.plan, full["workers"]) == placement_record(master.plan, brief["workers"])
    assert brief["errors"] == full["errors"] and len(brief["tasks"]) == len(full["tasks"])
    assert master.registry.carried  # the relaunched worker's first process counts
    # the store got every record kind of a beat, none over half a ZooKeeper node (its limit is 1 MB)
    assert wait_for(lambda: {"masters", "taskbeats", "assignments"} <= set(store.largest), 30)
    time.sleep(2.0)  # beats after the relaunch, with the new assignment
    assert max(store.largest.values()) <= R.RECORD_BYTES, store.largest


@pytest.fixture(params=["sqlite", "zookeeper"])
def store_uri(request, tmp_path):
    if request.param == "sqlite":
        yield f"sqlite:{tmp_path}/store.db"
        return
    server = ZooKeeperServer(tmp_path / "zk")
    server.start()
    yield server.uri("/scale")
    server.stop()


def test_task_records_of_1000_workers_are_stored_in_records_under_the_limit(store_uri):
    # the master's own task report for 1,000 workers of 10 tasks (and an acker) each
    _, _, plan = word_count(1000)
    liveness = TaskLiveness()
    rng = random.Random(1)
    for worker in range(plan.num_workers):
        tasks = {t: plan.task_component[t] for t in plan.worker_tasks(worker)}
        liveness.started(worker, 10_000 + worker, tasks)
        liveness.observe(worker, 10_000 + worker, [
            {"task": t, "component": c, **{k: rng.randint(10**5, 10**7) for k in PROGRESS}}
            for t, c in tasks.items()])
    report = liveness.report()
    store = CountingStore(open_store(store_uri))
    app = TopologyApp(store, None, NAME, 1)
    workers = [{"host": f"host{w % 50}"} for w in range(plan.num_workers)]
    app._store_records({"tasks": report, "errors": []}, placement_record(plan, workers))
    # stored as the application's beat stores it: no record past half the 512 KB target (a
    # ZooKeeper node holds 1 MB), so that entries that grow keep a margin
    assert max(store.largest.values()) <= 512_000 // 2, store.largest
    # and read back whole, by a relaunched master and by Nimbus
    back = R.tasks_from(R.read_beats(store, NAME), time.time())
    assert [t["task"] for t in back] == [t["task"] for t in report]
    assert back[-1]["pid"] == report[-1]["pid"] and back[-1]["emitted"] == report[-1]["emitted"]
    # fewer tasks later (a rebalance): the stale parts are not read
    app._store_records({"tasks": report[:10], "errors": []}, [])
    assert [t["task"] for t in R.tasks_from(R.read_beats(store, NAME), time.time())] == \
        [t["task"] for t in report[:10]]
    # deleted with the topology's other records
    assert store.children(K.taskbeats_key(NAME))
    R.delete_beat_parts(store, NAME)
    assert store.children(K.taskbeats_key(NAME)) == {}
    store.close()
