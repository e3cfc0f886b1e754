"""Per-task liveness (squall.spark.liveness) on simulated time: which task stopped making progress."""

from squall.runtime import clock
from squall.spark.liveness import TaskLiveness


def beat(live, worker, pid, *tasks):
    live.observe(worker, pid, [{"task": t, "component": c, "emitted": e, "executed": x}
                               for t, c, e, x in tasks])


def test_a_task_whose_counters_stop_is_seen_idle_while_its_worker_heartbeats():
    with clock.simulation() as sim:
        live = TaskLiveness()
        start = clock.time_ms() / 1000
        beat(live, 0, 100, (1, "spout", 5, 0), (2, "split", 0, 5))
        sim.advance(3)
        beat(live, 0, 100, (1, "spout", 9, 0), (2, "split", 0, 5))  # split stuck at 5
        sim.advance(2)
        rows = {r["task"]: r for r in live.report()}
        assert rows[1]["idle_secs"] == 2.0 and rows[1]["last_progress"] == start + 3
        assert rows[2]["idle_secs"] == 5.0 and rows[2]["last_progress"] == start
        assert rows[2]["heartbeat_age_secs"] == 2.0 and rows[2]["last_heartbeat"] == start + 3
        assert (rows[1]["emitted"], rows[2]["executed"], rows[2]["component"], rows[2]["worker"]) == (
            9, 5, "split", 0)


def test_a_restarted_process_counts_as_progress_and_tasks_stay_sorted():
    with clock.simulation() as sim:
        live = TaskLiveness()
        beat(live, 1, 100, (4, "count", 0, 7), (3, "count", 0, 1))
        sim.advance(10)
        beat(live, 1, 200, (4, "count", 0, 7), (3, "count", 0, 1))  # same counters, new pid
        rows = [(r["task"], r["idle_secs"], r["pid"]) for r in live.report()]
        assert rows == [(3, 0.0, 200), (4, 0.0, 200)]


def test_start_time_is_when_the_process_started_the_task_and_a_new_process_restarts_it():
    with clock.simulation() as sim:
        live = TaskLiveness()
        t0 = clock.time_ms() / 1000
        live.started(0, 100, {1: "spout"})
        sim.advance(5)
        beat(live, 0, 100, (1, "spout", 3, 0))
        assert live.report()[0]["start_time"] == t0
        sim.advance(5)
        beat(live, 0, 300, (1, "spout", 0, 0))  # relaunched: its first heartbeat starts it
        assert live.report()[0]["start_time"] == t0 + 10


def test_a_relaunched_master_restores_the_stored_heartbeats_with_their_ages():
    from squall.store.taskrecords import beats_record, tasks_from

    with clock.simulation() as sim:
        old = TaskLiveness()
        t0 = clock.time_ms() / 1000
        old.started(0, 100, {1: "spout"})
        beat(old, 0, 100, (1, "spout", 7, 0))
        stored = beats_record(1, old.report(), t0)
        sim.advance(30)  # the master died; its successor starts
        new = TaskLiveness()
        new.restore(tasks_from(stored, clock.time_ms() / 1000))
        row = new.report()[0]
        assert (row["task"], row["pid"], row["emitted"], row["start_time"], row["last_heartbeat"]) == (
            1, 100, 7, t0, t0)
        assert row["heartbeat_age_secs"] == 30.0
        beat(new, 0, 400, (1, "spout", 0, 0))  # the new process's first heartbeat replaces it
        assert (new.report()[0]["pid"], new.report()[0]["start_time"]) == (400, t0 + 30)
