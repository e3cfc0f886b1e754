"""The topology page at 1,000 workers (issue 37): what the master hands Nimbus, and where it folds.

The master's registry is filled as 1,000 workers' heartbeats would fill it
(``benchmarks.scale_sim.task_metrics``: 10 user tasks and an acker each, with histograms,
streams and latency samples); no sockets to workers.
"""

from __future__ import annotations

import json
import random
import threading
import time

from benchmarks.scale import NAME, NoSpark
from benchmarks.scale_sim import task_metrics, word_count
from squall.nimbus.history import ALL_TIME, MetricHistory
from squall.nimbus.stormapi import TopologyView, topology_page
from squall.nimbus.structure import redact, structure
from squall.spark import master_info
from squall.spark.app import TopologyApp
from squall.spark.master import TopologyMaster

LIMIT = 2_000_000  # bytes: issue 37's target for the topology page at 1,000 workers


def filled_master(workers: int) -> TopologyMaster:
    topology, conf, plan = word_count(workers)
    master = TopologyMaster(NAME, topology, conf, plan, sc=NoSpark())
    rng = random.Random(7)
    for w in range(workers):
        master.registry.launched(w)
        master.registry.register({"worker": w, "launch": 1, "attempt": 0, "pid": 1000 + w, "host": "h",
                                  "address": f"tcp://127.0.0.1:{20000 + w}"}, b"w%d" % w)
        inc = master.registry.slots[w].current
        inc.started, inc.metrics = True, task_metrics(plan, w, rng)
        master.liveness.observe(w, inc.pid, inc.metrics)
    return master


def page(info: dict, master: TopologyMaster, now: float) -> dict:
    got = json.loads(json.dumps(info))  # as Nimbus receives it
    got.update(id=f"{NAME}-1-1", master_uptime_secs=0, uptime_secs=0)
    for worker in got["workers"]:
        worker["uptime_secs"] = 0  # the two infos are taken a moment apart
    return topology_page(TopologyView(got, structure(master.topology), redact(master.conf), MetricHistory(),
                                      now), ALL_TIME)


def test_the_topology_pages_info_at_1000_workers_is_under_2_mb_and_the_page_keeps_its_fields():
    master = filled_master(1000)
    try:
        app = TopologyApp(None, None, NAME, 1)  # type: ignore[arg-type]  # no store read here
        app.master = master
        whole = app._routes()[("GET", "/info")]({})
        brief = app._routes()[("GET", "/info/components")]({})
        # what Nimbus fetches for the topology page: components and workers, no per-task detail
        assert len(json.dumps(brief)) <= LIMIT, len(json.dumps(brief))
        assert not any("by_task" in c for c in brief["components"].values()) and "tasks" not in brief
        # the page built from it is the page built from the whole info, Storm's fields and all
        now = time.time()
        from_brief, from_whole = page(brief, master, now), page(whole, master, now)
        assert from_brief == from_whole
        assert len(json.dumps(from_brief)) <= LIMIT
        assert from_brief["workers"][3]["componentNumTasks"] == {"count": 4, "spout": 2, "split": 4}
    finally:
        master.links.close()


def test_the_master_folds_every_tasks_metrics_off_its_loop_thread(monkeypatch):
    master = filled_master(20)
    folded_on = []
    real = master_info.topology_info

    def spy(*args, **kwargs):
        folded_on.append(threading.current_thread())
        return real(*args, **kwargs)
    monkeypatch.setattr(master_info, "topology_info", spy)
    master._thread.start()  # the loop, with no worker to launch
    try:
        info = master.info()
        assert len(info["tasks"]) == len(master.plan.task_component) - 20  # each worker's own system task
        # the loop thread only took a snapshot: heartbeats are not held up behind the fold
        assert folded_on and master._thread not in folded_on
    finally:
        master._running = False
        master._thread.join(5)
        master.links.close()


def test_the_task_records_are_stored_every_5_s_and_the_master_beat_every_second(tmp_path):
    from benchmarks.scale import CountingStore
    from squall.store import keys as K
    from squall.store import open_store
    from squall.testing import simulated_time

    master = filled_master(20)
    reports = []
    entries = master.liveness.entries  # the loop's copy of every task's entry, for the report
    master.liveness.entries = lambda: (reports.append(1), entries())[1]  # type: ignore[method-assign]
    store = CountingStore(open_store(f"sqlite:{tmp_path}/store.db"))
    store.put(K.topology_key(NAME), {"epoch": 1, "name": NAME})
    app = TopologyApp(store, None, NAME, 1)  # type: ignore[arg-type]
    app.master = master
    wrote = []
    store._wrote = lambda key, value: wrote.append(key)  # type: ignore[method-assign]
    try:
        with simulated_time() as clock:
            for _ in range(10):  # ten beats, a second apart
                app._beat("RUNNING")
                clock.advance(1.0)
        # the master's own record every beat (Nimbus's liveness check reads it) ...
        assert wrote.count(K.master_key(NAME)) == 10
        # ... each task's heartbeat record (read only while no master answers) every 5 s
        assert wrote.count(K.taskbeats_key(NAME)) == 2, wrote
        assert len(reports) == 2  # and the 12,000-entry report is not built in between
    finally:
        master.links.close()
        store.close()


def test_the_store_beats_sums_and_task_report_are_made_off_the_loop_thread(monkeypatch):
    from squall.spark import master as master_module

    master = filled_master(20)
    made_on = []
    for module, name in ((master_module, "beat_fold"), (master_module, "report_of")):
        real = getattr(module, name)

        def spy(*args, _real=real, **kwargs):
            made_on.append(threading.current_thread())
            return _real(*args, **kwargs)
        monkeypatch.setattr(module, name, spy)
    master._thread.start()  # the loop, with no worker to launch
    try:
        info = master.beat_info(tasks=True)
        assert len(info["tasks"]) == len(master.plan.task_component) - 20  # each worker's own system task
        # every second at 1,000 workers: the loop only takes references and copies
        assert len(made_on) == 2 and master._thread not in made_on
    finally:
        master._running = False
        master._thread.join(5)
        master.links.close()


def settled(info: dict) -> dict:
    """``info`` without what moves between two takes of the same state (uptimes, on real time)."""
    got = json.loads(json.dumps(info))
    got["uptime_secs"] = 0
    for worker in got["workers"]:
        worker["uptime_secs"] = 0
    return got


def test_the_topology_pages_figures_are_folded_once_per_heartbeat_interval_and_a_later_request_sees_new_ones(
        monkeypatch):
    from squall.runtime import info as info_module
    from squall.runtime.plan import SYSTEM
    from squall.testing import simulated_time

    folds = []
    real = info_module.aggregate

    def spy(*args, **kwargs):
        folds.append(1)
        return real(*args, **kwargs)
    monkeypatch.setattr(info_module, "aggregate", spy)
    with simulated_time() as clock:
        master = filled_master(20)
        components = sum(1 for c in master.plan.component_tasks if c != SYSTEM)
        interval = master._heartbeat  # squall.spark.worker.heartbeat.secs: 1 s by default
        master._thread.start()  # the loop, with no worker to launch
        try:
            first = master.info(per_task=False)
            for _ in range(4):  # requests within one heartbeat interval: one fold serves them all
                clock.advance(interval / 5)
                again = master.info(per_task=False)
            assert len(folds) == components, len(folds) // components
            # the cached answer is today's fold of the same state
            snap = master.calls.call(lambda: master._snapshot_brief()[0])
            fresh = master_info.fold(snap, per_task=False)
            folded = len(folds)  # the requests' fold and this fresh one
            assert settled({k: again[k] for k in fresh}) == settled(fresh)

            # a heartbeat: worker 0's tasks emitted 1,000 more each; and a deactivate
            def beat() -> None:
                inc = master.registry.slots[0].current
                inc.metrics = [{**d, "emitted": d["emitted"] + 1000} for d in inc.metrics]
                master.status = "INACTIVE"
                master.errors.append({"component": "spout", "task": 3, "error": "boom", "time_ms": 0})
            master.calls.call(beat)
            within = master.info(per_task=False)
            # within the interval the figures are the last fold's (at most one interval old) ...
            assert {c: {**f, "errors": 0} for c, f in within["components"].items()} == {
                c: {**f, "errors": 0} for c, f in first["components"].items()}
            # ... but the status, the workers and the errors are read now
            assert within["status"] == "INACTIVE" and within["errors"][-1]["error"] == "boom"
            assert within["components"]["spout"]["errors"] == first["components"]["spout"]["errors"] + 1
            clock.advance(interval / 5)  # one interval after the fold
            after = master.info(per_task=False)
            assert len(folds) == folded + components  # folded again, once
            spout = after["components"]["spout"]["emitted"]
            assert spout == first["components"]["spout"]["emitted"] + 1000 * sum(
                1 for d in master.registry.slots[0].current.metrics if d["component"] == "spout")
            snap = master.calls.call(lambda: master._snapshot_brief()[0])
            assert settled({k: after[k] for k in fresh}) == settled(master_info.fold(snap, per_task=False))
            # the whole info (the component page's) is folded fresh, and the topology page
            # read right after it never shows older figures than it did
            master.calls.call(beat)
            whole = master.info()
            later = master.info(per_task=False)
            assert later["components"]["spout"]["emitted"] == whole["components"]["spout"]["emitted"] > spout
        finally:
            master._running = False
            master._thread.join(5)
            master.links.close()
