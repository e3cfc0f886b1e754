"""``benchmarks.spread``: the knobs it turns between submissions, and what it reads of /proc."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import time

import pytest

from benchmarks import spread


def test_hash_seed_choices_give_the_workers_variable():
    assert spread.worker_env("inherit") == {}
    assert spread.worker_env("fixed") == {"PYTHONHASHSEED": "0"}
    assert spread.worker_env("random") == {"PYTHONHASHSEED": "random"}
    assert spread.worker_env("1234") == {"PYTHONHASHSEED": "1234"}
    for bad in ("-1", "4294967296", "salted"):
        with pytest.raises(ValueError, match="--hash-seed"):
            spread.worker_env(bad)


def test_allocator_variables_are_passed_on():
    env = spread.worker_env("inherit", malloc_arena_max=2, pythonmalloc="malloc")
    assert env == {"MALLOC_ARENA_MAX": "2", "PYTHONMALLOC": "malloc"}


def test_pin_plan_puts_each_worker_on_its_own_core_and_wraps():
    assert spread.pin_plan({0: 100, 1: 101}, [0, 1]) == {100: {0}, 101: {1}}
    assert spread.pin_plan({0: 100, 1: 101, 2: 102}, [2, 3]) == {100: {2}, 101: {3}, 102: {2}}
    with pytest.raises(ValueError, match="no cores"):
        spread.pin_plan({0: 100}, [])


def test_pin_sets_every_thread_of_the_process():
    # a process with a second thread: sched_setaffinity(pid) alone would leave it unpinned
    code = "import threading, time; threading.Thread(target=time.sleep, args=(30,)).start(); time.sleep(30)"
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 10
        while len(spread.threads(proc.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        tids = spread.threads(proc.pid)
        assert len(tids) >= 2
        core = min(os.sched_getaffinity(0))
        assert spread.pin(proc.pid, {core}) == len(tids)
        assert {tid: os.sched_getaffinity(tid) for tid in tids} == {tid: {core} for tid in tids}
    finally:
        proc.kill()
        proc.wait()


def test_parse_stat_counts_fields_from_the_last_parenthesis():
    fields = ["S"] + ["0"] * 10 + ["250", "50"] + ["0"] * 23 + ["1"] + ["0"] * 5
    comm, cpu, core = spread.parse_stat("42 (ZMQbg/IO (0) x) " + " ".join(fields))
    assert (comm, core) == ("ZMQbg/IO (0) x", 1)
    assert cpu == pytest.approx(300 / spread.CLK_TCK)


def test_this_process_reads_as_on_an_allowed_core_with_its_seed():
    stat = spread.read_stat(f"/proc/{os.getpid()}/stat")
    assert stat is not None
    _, cpu, core = stat
    assert core in range(os.cpu_count() or 1) and cpu > 0
    assert spread.hash_seed_of(os.getpid()) == os.environ.get("PYTHONHASHSEED", "unset")


class _Context:
    task_id = 1

    def get_this_component_tasks(self):
        return [1]


def test_gc_off_turns_the_workers_cycle_collector_off(tmp_path):
    assert gc.isenabled()
    try:
        spread.GcSpout(str(tmp_path), "default").open({}, _Context(), None)
        assert gc.isenabled()
        spread.GcSpout(str(tmp_path), "off").open({}, _Context(), None)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_spread_is_max_over_min():
    assert spread.spread([150.0, 180.0, 160.0]) == pytest.approx(1.2)
    assert spread.spread([1.0]) != spread.spread([1.0])  # nan: one value has no spread


def test_bad_arguments_are_refused(capsys):
    with pytest.raises(SystemExit):
        spread.main(["--hash-seed", "salted"])
    assert "--hash-seed must be" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        spread.main(["--runs", "0"])


def test_busiest_thread_is_the_one_that_spins():
    # the main thread sleeps, a second one spins: --pin loops must find the second
    code = ("import threading, time\n"
            "def spin():\n    while True: pass\n"
            "threading.Thread(target=spin, daemon=True).start(); time.sleep(30)")
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 10
        while len(spread.threads(proc.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        busiest = spread.busiest_thread(proc.pid, 0.3)
        assert busiest != proc.pid and busiest in spread.threads(proc.pid)
    finally:
        proc.kill()
        proc.wait()


def test_calibration_is_a_positive_cost_per_sentence_on_each_core():
    assert spread.calibrate(2_000) > 0
    assert spread.calibrate_cores([min(os.sched_getaffinity(0))]) > 0


def test_correlation_needs_three_points_and_some_variation():
    assert spread.correlation([1.0, 2.0, 3.0], [2.0, 4.0, 6.5]) == pytest.approx(1.0, abs=0.01)
    assert spread.correlation([1.0, 2.0], [1.0, 2.0]) != spread.correlation([1.0, 2.0], [1.0, 2.0])
    assert spread.correlation([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]) != 0.0  # nan, not an error


def test_conf_items_read_json_values_else_strings():
    assert spread.conf_item("squall.transfer.batch.time.ms=0.5") == ("squall.transfer.batch.time.ms", 0.5)
    assert spread.conf_item("squall.spark.worker.cpu.pin=true") == ("squall.spark.worker.cpu.pin", True)
    assert spread.conf_item("topology.name=a=b") == ("topology.name", "a=b")
    with pytest.raises(Exception, match="KEY=VALUE"):
        spread.conf_item("novalue")


def test_each_worker_line_gives_the_cores_its_loop_its_io_thread_and_the_rest_used():
    s = spread.CoreSampler([7])
    s.comm = {(7, 1): "python", (7, 2): "ZMQbg/IO/0", (7, 3): "python"}
    s.cores = {(7, 1): [0, 0, 1, 0], (7, 2): [1, 1, 1, 1], (7, 3): [0, 0, 0, 0]}
    s.cpu0 = dict.fromkeys(s.comm, 1.0)
    s.cpu1 = {(7, 1): 2.5, (7, 2): 1.2, (7, 3): 1.1}  # CPU seconds over 2 s sampled
    s.t0, s.t1 = 10.0, 12.0
    assert s.describe(7) == "loop c0 75% 0.75 io c1 100% 0.10 rest 0.05 mig 2"
