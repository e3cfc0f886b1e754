"""Security review #4: error floods. Error reports are cut to size and throttled per task.

Today's failure: a bolt raising ``ValueError(f"bad record {record}")`` on 20 KB inputs gave
1000 errors of about 40 KB each (message and traceback): one heartbeat of about 39 MiB, a
``taskerrors`` record of 2.3 MiB (ZooKeeper takes at most 1 MiB) and every info read pulled
all of it. Now (squall/runtime/errors.py): message <= 1000 characters, traceback <= 4000,
at most ``topology.max.error.report.per.interval`` (5) errors per task per
``topology.error.throttle.interval.secs`` (10 s), the others counted and the count carried
by the task's next report; at most 100 errors per heartbeat; a stored record <= 512 KiB.
"""

from __future__ import annotations

import json
import logging
import threading
from types import SimpleNamespace

import zmq

from squall import Bolt, LocalCluster, TopologyBuilder
from squall.runtime.errors import ErrorLog
from squall.spark import coordination as co
from squall.spark.worker_main import WorkerSpec, _MasterLink
from squall.store.taskrecords import errors_record
from squall.testing import simulated_time
from tests.integration.components import ListSpout
from tests.integration.test_acking import conf, run_until_idle

RECORD_20K = "x" * 20_000
MESSAGE_CHARS = 1000  # the documented cuts (runtime/errors.py, store/taskrecords.py)
TRACEBACK_CHARS = 4000
RECORD_BYTES = 512 * 1024
HEARTBEAT_BOUND = 1 << 20  # bytes: 100 errors of at most about 5.3 KB each, well under it
ENTRY_BOUND = 6 * 1024  # bytes of JSON of one ASCII error entry


def raise_bad(record: str) -> ValueError:
    """An error raised the common way: its message echoes the input."""
    try:
        raise ValueError(f"bad record {record}")
    except ValueError as e:
        return e


def flooded(tasks: int, per_task: int, record: str = RECORD_20K) -> ErrorLog:
    """An ``ErrorLog`` after ``tasks * per_task`` such errors, all inside one interval."""
    errors = ErrorLog()  # Storm's defaults: 5 per 10 s
    for i in range(tasks * per_task):
        errors.report("parse", i % tasks, raise_bad(record))
    return errors


class _Worker:
    """What the heartbeat reads of a running worker: no tasks, no samples, never stopping."""

    tasks: dict = {}
    tap = None
    stuck: dict = {}
    corrupt_frames = 0
    stopped = threading.Event()

    def transfer_stats(self):
        return {}

    def stop(self, graceful=True):
        pass

    def join(self, timeout):
        return True


class _Transport:
    rejected_frames = 0


def first_heartbeat(errors: ErrorLog) -> tuple[int, dict]:
    """The worker's first heartbeat, as its real link sends it to a real ZeroMQ socket: its
    size in bytes and the message opened as the master opens it."""
    ctx = zmq.Context()
    secret = b"s" * 32
    router = ctx.socket(zmq.ROUTER)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    # the link reads the plan's spout task counts only (how many latency samples each ships)
    plan = SimpleNamespace(component_tasks={})
    spec = WorkerSpec(topology_name="flood", topology=None, conf={}, plan=plan, index=0, launch=1,
                      master_address=f"tcp://127.0.0.1:{port}", heartbeat_secs=0.05, secret=secret)
    link = _MasterLink(ctx, spec, 0, "tcp://127.0.0.1:1", b"n" * 16)
    served = threading.Thread(target=link.serve, args=(_Worker(), _Transport(), errors), daemon=True)
    served.start()
    try:
        assert router.poll(10_000), "no heartbeat within 10 s"
        parts = router.recv_multipart()
        ident, frames = parts[0], parts[1:]
        msg = co.Link(secret, ident, co.TO_WORKER).open(frames)
        assert msg is not None and msg["t"] == co.HEARTBEAT
        router.send_multipart([ident, *co.Link(secret, ident, co.TO_WORKER).seal(co.STOP)])
        served.join(10)
        return sum(len(f) for f in frames), msg
    finally:
        link.close()
        router.close(0)
        ctx.destroy(0)


def test_sec_error_flood_heartbeat_and_stored_record_are_bounded():
    errors = flooded(tasks=200, per_task=5)  # 1000 errors, none over the throttle
    assert errors.total == 1000
    size, beat = first_heartbeat(errors)
    assert size < HEARTBEAT_BOUND, f"heartbeat of {size} bytes"
    assert len(beat["errors"]) == 100
    for e in beat["errors"]:
        assert len(e["message"]) <= MESSAGE_CHARS + 40 and len(e["traceback"]) <= TRACEBACK_CHARS + 40
        assert len(json.dumps(e)) < ENTRY_BOUND
    record = errors_record(1, errors.list())
    assert len(json.dumps(record)) <= RECORD_BYTES


def test_sec_error_flood_stored_record_is_bounded_whatever_the_entries_hold():
    # entries of an older worker, or of any origin: uncut, and non-ASCII (6 bytes each in JSON)
    raw = [{"component": "c", "task": 1, "time": 0.0, "message": "é" * 20_000, "traceback": "ü" * 20_000}
           for _ in range(1000)]
    record = errors_record(1, raw)
    assert 0 < len(record["errors"]) and len(json.dumps(record)) <= RECORD_BYTES


def test_sec_error_flood_one_task_reports_five_per_interval():
    with simulated_time() as clock:
        errors = flooded(tasks=1, per_task=1000)
        assert (errors.total, errors.suppressed) == (5, 995)
        clock.advance(10.5)
        errors.report("parse", 0, raise_bad("again"))
    last = errors.list()[-1]
    assert last["suppressed"] == 995 and "995 earlier error(s)" in last["message"]
    assert errors.total == 6


def test_sec_error_flood_storms_report_error_test():
    """Storm's ReportErrorTest.testReport (storm-client), on simulated time: interval 10 s,
    4 per interval; the 5th is dropped, so is one 9 s later, and one 11 s later is reported."""
    with simulated_time() as clock:
        report = ErrorLog.from_conf({"topology.error.throttle.interval.secs": 10,
                                     "topology.max.error.report.per.interval": 4})
        for i in range(1, 5):
            report.report("component", 1, RuntimeException(f"ERROR-{i}"))
            assert report.total == i
        report.report("component", 1, RuntimeException("ERROR-5"))  # too fast: not reported
        assert report.total == 4
        clock.advance(9)
        report.report("component", 1, RuntimeException("ERROR-6"))
        assert report.total == 4
        clock.advance(2)
        report.report("component", 1, RuntimeException("ERROR-7"))
        assert report.total == 5
    assert [e["message"].split(" [")[0] for e in report.list()] == [
        f"RuntimeException: ERROR-{i}" for i in (1, 2, 3, 4, 7)]
    assert report.list()[-1]["suppressed"] == 2 and report.suppressed == 2


def test_sec_error_flood_throttle_is_per_task():
    with simulated_time():
        errors = ErrorLog()
        for task in (1, 2):
            for _ in range(7):
                errors.report("c", task, RuntimeException("x"))
    assert [e["task"] for e in errors.list()] == [1] * 5 + [2] * 5 and errors.suppressed == 4


def test_sec_error_flood_dropped_errors_are_still_logged_on_one_line(caplog):
    with simulated_time(), caplog.at_level(logging.ERROR, logger="squall.errors"):
        flooded(tasks=1, per_task=7)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 7 and sum("not reported" in m for m in lines) == 2
    assert all(len(m) < MESSAGE_CHARS + TRACEBACK_CHARS + 200 for m in lines)


class RuntimeException(Exception):  # noqa: N818 - Storm's test's name
    pass


class Picky(Bolt):
    """Raises on every input, echoing it (20 KB)."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        raise ValueError(f"bad record {tup.values[0]}")

    def declare_output_fields(self, declarer):
        pass


def test_sec_error_flood_local_cluster_applies_the_topologys_throttle():
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([[f"{i}:{RECORD_20K}"] for i in range(40)], replay=False))
    b.set_bolt("picky", Picky()).shuffle_grouping("spout")
    c = conf(workers=1, **{"topology.error.throttle.interval.secs": 3600,
                           "topology.max.error.report.per.interval": 3})
    with LocalCluster() as cluster:
        info = run_until_idle(cluster, b.create_topology(), c, "flood").info()
        cluster.kill_topology("flood")
    errors = [e for e in info["errors"] if e["component"] == "picky"]
    assert len(errors) == 3
    assert all(len(e["message"]) <= MESSAGE_CHARS + 40 for e in errors)


def test_sec_error_flood_counts_for_metrics_and_summaries_carry_no_error_texts():
    """Nimbus's ``/metrics`` and summaries read ``/info/brief`` from the master: the errors
    without message and traceback, enough to count them per component."""
    from squall.spark.app import TopologyApp

    errors = flooded(tasks=200, per_task=5)

    class _App:  # the part of TopologyApp that brief_info calls
        def info(self, body):
            return {"name": "flood", "errors": errors.list(), "components": {}}

    full = _App().info({})
    brief = TopologyApp.brief_info(_App(), {})
    assert [(e["component"], e["task"]) for e in brief["errors"]] == [
        (e["component"], e["task"]) for e in full["errors"]]
    assert not any("message" in e or "traceback" in e for e in brief["errors"])
    assert len(json.dumps(brief)) < len(json.dumps(full)) / 20


def test_sec_error_flood_a_bad_throttle_setting_falls_back_to_storms_default():
    with simulated_time():
        errors = ErrorLog.from_conf({"topology.max.error.report.per.interval": "many",
                                     "topology.error.throttle.interval.secs": -1})
        for _ in range(7):
            errors.report("c", 1, RuntimeException("x"))
    assert (errors.total, errors.suppressed) == (5, 2)
