"""The master's placement check and the Spark-side helpers of the scheduler (no Spark started)."""

from __future__ import annotations

import pytest

from squall.spark.placement import PlacementCheck, same_host, size_mb


def test_a_worker_on_its_host_is_ok():
    check = PlacementCheck(["127.0.0.2", "127.0.0.3"])
    assert check.verdict(0, "127.0.0.2", ["127.0.0.2", "127.0.0.3"]) == "ok"
    assert check.notes() == []


def test_a_misplaced_worker_is_relaunched_then_accepted_with_a_note():
    check = PlacementCheck(["127.0.0.2"], tries=2)
    live = ["127.0.0.2", "127.0.0.3"]
    assert [check.verdict(0, "127.0.0.3", live) for _ in range(3)] == ["relaunch", "relaunch", "accept"]
    assert check.notes() == ["worker 0 runs on 127.0.0.3, not its assigned host 127.0.0.2 (Spark started it "
                             "there after 2 relaunches, or the host is gone)"]
    assert check.verdict(0, "127.0.0.2", live) == "ok" and check.notes() == []


def test_a_worker_whose_host_is_gone_is_accepted_at_once():
    check = PlacementCheck(["127.0.0.2"])
    assert check.verdict(0, "127.0.0.3", ["127.0.0.3"]) == "accept"


def test_unpinned_workers_are_always_ok():
    check = PlacementCheck([None, None])
    assert check.verdict(1, "anywhere", []) == "ok"


def test_names_and_addresses_of_one_host_are_the_same_host():
    assert same_host("localhost", "127.0.0.1")
    assert same_host("127.0.0.2", "127.0.0.2")
    assert not same_host("127.0.0.2", "127.0.0.3")
    assert not same_host(None, "127.0.0.3")


@pytest.mark.parametrize("text, mb", [("512m", 512.0), ("2g", 2048.0), ("1024", 1024.0), ("512k", 0.5),
                                      ("1.5g", 1536.0), (None, None), ("lots", None)])
def test_spark_sizes(text, mb):
    assert size_mb(text) == mb


def test_the_placement_kept_in_the_store_reads_back_as_the_old_assignment():
    import json

    from squall.runtime.plan import make_plan
    from squall.scheduler import OldWorker
    from squall.spark.placement import old_from_record, placement_record
    from tests.unit.scheduler.helpers import wordcount

    plan = make_plan(wordcount(1, 2, 2).create_topology(), {"topology.workers": 2})
    workers = [{"host": "127.0.0.2"}, {"host": None, "assigned_host": "127.0.0.3"}]
    record = json.loads(json.dumps(placement_record(plan, workers)))
    old = old_from_record(record)
    assert [o.host for o in old] == ["127.0.0.2", "127.0.0.3"]
    for w, o in enumerate(old):
        assert o == OldWorker(w, o.host, {t: plan.task_component[t] for t in plan.worker_tasks(w)
                                          if plan.task_component[t] != "__system"})
    assert old_from_record(None) == () and old_from_record([{"host": "h"}]) == ()


def test_cores_asked_per_host_are_checked_against_the_hosts_cores():
    from dataclasses import replace

    from squall.runtime.plan import make_plan
    from squall.scheduler import SchedulingError
    from squall.spark.placement import check_cores
    from tests.unit.scheduler.helpers import wordcount

    plan = replace(make_plan(wordcount().create_topology(), {"topology.workers": 3}),
                   worker_hosts=["a", "a", "b"])
    found = [("a", 2), ("b", 1)]
    check_cores("t", plan, [1, 1, 1], found)
    check_cores("t", plan, [None, None, None], [])
    with pytest.raises(SchedulingError, match=r"host a has 2 cores; its workers' tasks ask 3 \(worker 0: 2, "
                                              r"worker 1: 1\) with squall.spark.worker.resource.profiles"):
        check_cores("t", plan, [2, 1, 1], found)
    with pytest.raises(SchedulingError, match="host b has 1 cores; its workers' tasks ask 2"):
        check_cores("t", plan, [1, 1, 1], found, {"b": 1})
