"""``squall.spark.worker.cpu.pin``: which core a worker gets, and that its whole process is pinned."""

from __future__ import annotations

import os
import threading

import pytest

from squall.api.conf_checks import check_setting
from squall.api.errors import InvalidTopologyError
from squall.spark.affinity import pin_process, worker_core


def test_local_masters_deal_out_the_cores_by_worker_index():
    assert [worker_core("local[2]", i, True, cores=[0, 1]) for i in range(3)] == [0, 1, 0]
    assert [worker_core("local[*]", i, True, cores=[3, 1]) for i in range(2)] == [1, 3]
    assert worker_core("local", 0, True, cores=[5]) == 5


def test_off_or_a_cluster_master_pins_nothing():
    assert worker_core("local[2]", 0, False, cores=[0, 1]) is None
    assert worker_core("spark://10.0.0.1:7077", 0, True, cores=[0, 1]) is None
    assert worker_core("yarn", 1, True, cores=[0, 1]) is None


def test_the_setting_is_checked():
    check_setting("squall.spark.worker.cpu.pin", True)
    with pytest.raises(InvalidTopologyError, match="cpu.pin"):
        check_setting("squall.spark.worker.cpu.pin", "yes")


def test_every_thread_of_the_process_is_pinned_and_given_back():
    before = os.sched_getaffinity(0)
    core = min(before)
    started, stop = threading.Event(), threading.Event()
    tid: list[int] = []

    def other() -> None:
        tid.append(threading.get_native_id())
        started.set()
        stop.wait(10)

    thread = threading.Thread(target=other)
    thread.start()
    started.wait(10)
    try:
        restore = pin_process(core)
        assert os.sched_getaffinity(0) == {core}
        assert os.sched_getaffinity(tid[0]) == {core}  # not only the thread that asked
        restore()
        assert os.sched_getaffinity(0) == before
        assert os.sched_getaffinity(tid[0]) == before
    finally:
        stop.set()
        thread.join()
        os.sched_setaffinity(0, before)


def test_no_core_pins_nothing():
    before = os.sched_getaffinity(0)
    pin_process(None)()
    assert os.sched_getaffinity(0) == before
