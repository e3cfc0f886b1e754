"""The topology page at 1,000 workers (issue 37): what the master hands Nimbus, and where it folds.

The master's registry is filled as 1,000 workers' heartbeats would fill it
(``benchmarks.scale_sim.task_metrics``: 10 user tasks and an acker each, with histograms,
streams and latency samples); no sockets to workers.
"""

from __future__ import annotations

import json
import math
import random
import threading
import time

from benchmarks.scale import NAME, NoSpark, wait_for
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


def published(master: TopologyMaster, folds: int) -> None:
    """Wait (real time, bounded) until the pages' thread has made ``folds`` folds."""
    assert wait_for(lambda: master.pages.folds >= folds, 30.0), (master.pages.folds, folds)


def test_the_pages_are_served_a_published_fold_and_a_request_never_folds_on_its_own_thread(monkeypatch):
    from squall.runtime import info as info_module
    from squall.spark import master as master_module
    from squall.testing import simulated_time

    folded_on = []
    real = info_module.aggregate

    def spy(*args, **kwargs):
        folded_on.append(threading.current_thread())
        return real(*args, **kwargs)
    monkeypatch.setattr(info_module, "aggregate", spy)
    monkeypatch.setattr(master_module, "PAGES_EVERY", math.inf, raising=False)  # only the folds asked for
    with simulated_time() as clock:
        master = filled_master(20)
        interval = master._heartbeat  # squall.spark.worker.heartbeat.secs: 1 s by default
        master._thread.start()  # the loop, with no worker to launch
        try:
            first = master.info(per_task=False)  # nothing published yet: it waits for a fold
            # ... made on the pages' thread: neither the request's nor the loop's
            assert folded_on and threading.current_thread() not in folded_on
            assert master._thread not in folded_on
            for _ in range(4):  # requests within one heartbeat interval: that fold serves them all
                clock.advance(interval / 5)
                again = master.info(per_task=False)
            assert master.pages.folds == 1
            snap = master.calls.call(lambda: master._snapshot_brief()[0])
            assert settled(again) == settled({**master_info.fold(snap, per_task=False), **{
                k: again[k] for k in ("placement_notes", "rescale")}})
            folded_on.clear()

            # a heartbeat: worker 0's tasks emitted 1,000 more each; and a deactivate
            def beat() -> None:
                inc = master.registry.slots[0].current
                inc.metrics = [{**d, "emitted": d["emitted"] + 1000} for d in inc.metrics]
                master.status = "INACTIVE"
                master.errors.append({"component": "spout", "task": 3, "error": "boom", "time_ms": 0})
            master.calls.call(beat)
            within = master.info(per_task=False)
            # within the interval the figures are the published fold's ...
            assert {c: {**f, "errors": 0} for c, f in within["components"].items()} == {
                c: {**f, "errors": 0} for c, f in first["components"].items()}
            # ... but the status, the workers and the errors are read now
            assert within["status"] == "INACTIVE" and within["errors"][-1]["error"] == "boom"
            assert within["components"]["spout"]["errors"] == first["components"]["spout"]["errors"] + 1
            clock.advance(interval / 5)  # one interval after the fold
            stale = master.info(per_task=False)  # served at once: the last fold's figures ...
            assert stale["components"]["spout"]["emitted"] == first["components"]["spout"]["emitted"]
            published(master, 2)  # ... and a fold asked for, for the next request
            after = master.info(per_task=False)
            spout = after["components"]["spout"]["emitted"]
            assert spout == first["components"]["spout"]["emitted"] + 1000 * sum(
                1 for d in master.registry.slots[0].current.metrics if d["component"] == "spout")
            snap = master.calls.call(lambda: master._snapshot_brief()[0])
            assert settled({k: after[k] for k in snap if k in after}) == settled(
                {k: v for k, v in master_info.fold(snap, per_task=False).items() if k in snap})
            # the whole info (the component page's, /metrics'): folded with per-task figures on
            # the pages' thread, then served from that fold within the interval; the topology
            # page read right after it never shows older figures than it did
            folded_on.clear()
            master.calls.call(beat)
            whole = master.info()
            clock.advance(interval / 5)
            master.info()
            assert master.pages.folds == 3
            later = master.info(per_task=False)
            assert later["components"]["spout"]["emitted"] == whole["components"]["spout"]["emitted"] > spout
            assert whole["components"]["spout"]["by_task"] and "by_task" not in later["components"]["spout"]
            assert folded_on and threading.current_thread() not in folded_on
        finally:
            master._running = False
            master._thread.join(5)
            master._close()


def test_a_brief_fold_newer_than_the_whole_one_makes_the_whole_info_fold_again():
    from squall.testing import simulated_time

    with simulated_time():  # no request's figures age: only the pages' own folds move them
        master = filled_master(4)
        master.pages.every = 0.05  # real seconds between the folds nobody asks for (brief ones)
        try:
            whole = master.info()  # folded with per-task figures, and young for the whole test
            inc = master.registry.slots[0].current
            inc.metrics = [{**d, "emitted": d["emitted"] + 1000} for d in inc.metrics]
            published(master, master.pages.folds + 2)  # a brief fold after the change, at least
            page = master.info(per_task=False)
            again = master.info()  # the whole fold is young, but older than the page's
            assert again["components"]["spout"]["emitted"] == page["components"]["spout"]["emitted"] > \
                whole["components"]["spout"]["emitted"]
        finally:
            master._close()


def test_a_snapshot_lists_each_workers_tasks_from_the_plan_once_not_at_every_snapshot(monkeypatch):
    from squall.runtime.plan import TaskPlan
    from squall.spark.placement import placement_record

    master = filled_master(20)
    calls = []
    real = TaskPlan.worker_tasks

    def spy(self, worker):
        calls.append(worker)
        return real(self, worker)
    monkeypatch.setattr(TaskPlan, "worker_tasks", spy)
    try:
        for _ in range(3):  # three store beats (each a snapshot on the loop thread, and the placement)
            snap = master._snapshot_brief()[0]
            record = placement_record(master.plan, snap["workers"])
        assert len(calls) <= 20, len(calls)
        assert [w["tasks"] for w in snap["workers"]] == [real(master.plan, w) for w in range(20)]
        user = [[t for t in real(master.plan, w) if master.plan.task_component[t] != "__system"]
                for w in range(20)]
        assert [sorted(int(t) for t in r["tasks"]) for r in record] == user
    finally:
        master._close()


def test_the_loop_looks_for_silent_workers_at_most_every_judge_interval_not_at_every_pass():
    from squall.spark import master as master_module

    master = filled_master(20)
    looks = []
    dead = master.registry.dead
    master.registry.dead = lambda: (looks.append(1), dead())[1]  # type: ignore[method-assign]
    now = [100.0]
    master.registry.clock = lambda: now[0]
    try:
        for _ in range(50):  # 50 passes within one JUDGE_EVERY (0.1 s)
            master._supervise(judge=True)
            now[0] += 0.001
        assert len(looks) == 1, len(looks)
        now[0] += getattr(master_module, "JUDGE_EVERY", 0.1)
        master._supervise(judge=True)
        assert len(looks) == 2
    finally:
        master._close()


def test_the_store_beats_sums_count_the_dead_processes_and_equal_the_whole_infos():
    master = filled_master(20)
    try:
        inc = master.registry.slots[3].current
        master.registry.restart(3)  # its counters are carried to its next process
        assert master.registry.carried
        beat = master._beat_info(tasks=False)
        whole = master._info()
        for comp, figures in beat["components"].items():
            for key in master_info.SUMMED:
                assert figures[key] == whole["components"][comp][key], (comp, key)
        live = [d for i in master.registry.current() for d in i.metrics]
        assert beat["components"]["spout"]["emitted"] == sum(
            d["emitted"] for d in [*live, *inc.metrics] if d["component"] == "spout")
    finally:
        master._close()


def test_the_task_records_are_split_as_entry_by_entry_with_a_json_dump_per_group_not_per_task(monkeypatch):
    from squall.store import taskrecords

    rng = random.Random(3)
    tasks = [{"task": t, "component": "c" * rng.randrange(1, 300), "worker": t // 10} for t in range(10_000)]

    def entry_by_entry() -> list[list[str]]:  # the split every part size is checked against
        parts: list[list[str]] = [[]]
        size = 0
        for t in tasks:
            entry = {k: v for k, v in t.items() if k not in taskrecords.AGES}
            entry_bytes = len(json.dumps(entry)) + len(str(t["task"])) + 6
            if size + entry_bytes > taskrecords.BEATS_PART_BYTES - 200 and parts[-1]:
                parts.append([])
                size = 0
            parts[-1].append(str(t["task"]))
            size += entry_bytes
        return parts
    expected = entry_by_entry()
    dumps = []
    real = json.dumps
    monkeypatch.setattr(taskrecords.json, "dumps", lambda *a, **k: (dumps.append(1), real(*a, **k))[1])
    parts = taskrecords.beats_records(1, tasks, 0.0)
    monkeypatch.undo()
    assert [list(p["tasks"]) for p in parts] == expected
    assert all(len(json.dumps(p)) <= taskrecords.BEATS_PART_BYTES for p in parts)
    assert len(dumps) <= len(tasks) // 10, len(dumps)  # one per group, and per entry only where a part ends


def test_a_link_sets_its_keyed_hash_up_once_not_for_every_message_it_tags_or_checks(monkeypatch):
    from squall.spark import coordination as co

    made = []
    real = co.hashlib.blake2b
    monkeypatch.setattr(co.hashlib, "blake2b", lambda *a, **k: (made.append(1), real(*a, **k))[1])
    ident = b"wc/0/1/0/9"
    worker, master = co.Link(b"k" * 32, ident, co.TO_MASTER), co.Link(b"k" * 32, ident, co.TO_WORKER)
    made.clear()
    for i in range(100):
        beat = worker.seal(co.HEARTBEAT, metrics=[], errors=[], samples=[i])
        assert master.scan_heartbeat(beat) == ([], [i])
        assert worker.open(master.seal(co.ACK))["t"] == co.ACK
    forged = worker.seal(co.HEARTBEAT, metrics=[], errors=[], samples=[])
    assert master.scan_heartbeat([b"x" * len(forged[0]), forged[1]]) is None  # the tag still checked
    assert co.Link(b"j" * 32, ident, co.TO_WORKER).open(worker.seal(co.ACK)) is None  # and its key
    assert len(made) <= 2 + 2, len(made)  # the last Link's own two


def beats_through(master: TopologyMaster, rounds: int, rng: random.Random) -> None:
    """``rounds`` heartbeats of every worker of a ``filled_master``, read and handled as the loop does."""
    from benchmarks.scale_sim import task_metrics
    from squall.spark import coordination as co

    senders = []
    for slot in master.registry.slots:
        ident = slot.current.identity
        master.links._links[ident] = co.Link(master.secret, ident, co.TO_WORKER)
        metrics = task_metrics(master.plan, slot.index, rng)
        senders.append((ident, co.Link(master.secret, ident, co.TO_MASTER), metrics))
    for _ in range(rounds):
        for ident, link, metrics in senders:
            for d in metrics:
                d["emitted"] += 1000
            beat = link.seal(co.HEARTBEAT, metrics=metrics, errors=[], samples=[], stuck=[])
            master._heartbeat_arrived(ident, beat)
        while master._beats:
            master._handle_beats()


def test_the_drivers_collector_runs_a_few_times_not_hundreds_while_the_master_handles_heartbeats_and_folds():
    import gc

    from squall.spark.app import tune_gc

    saved = gc.get_threshold()
    collections = []

    def count(phase: str, info: dict) -> None:
        if phase == "start":
            collections.append(info["generation"])
    master = filled_master(200)
    try:
        tune_gc()  # what the driver's main does
        gc.collect()
        gc.callbacks.append(count)
        # heartbeats, whole folds and store beats: their objects, kept for a second or more, are
        # what a collection moves to the old generation, where each full collection walks them
        # all (at 1,000 workers, several full collections a second with Python's thresholds)
        beats_through(master, 5, random.Random(9))
        for _ in range(3):
            master._info()
        for _ in range(5):
            master._beat_info()
        gc.callbacks.remove(count)
        assert len(collections) <= 3, (len(collections), collections.count(2))
    finally:
        if count in gc.callbacks:
            gc.callbacks.remove(count)
        gc.set_threshold(*saved)
        master._close()
