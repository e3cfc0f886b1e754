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
