"""Configuration keys, requests built from a topology, strategies, offers, and the placed plan."""

from __future__ import annotations

import pytest

from squall.api.errors import InvalidTopologyError
from squall.runtime.plan import SYSTEM, make_plan
from squall.scheduler import (
    Assignment,
    HostOffer,
    SchedulingError,
    WorkerAssignment,
    offers_from_executors,
    schedule_plan,
)
from tests.unit.scheduler.helpers import Sink, hosts, request, run, wordcount


def test_resource_asks_become_slots():
    b = wordcount(1, 1, 2)
    b.set_bolt("heavy", Sink(), parallelism=2).set_cpu_load(25).set_memory_load(300).shuffle_grouping("split")
    req = request(b, hosts(("h", 4)), {"topology.workers": 1})
    heavy = [u for u in req.units if u.component == "heavy"]
    assert [(u.cpu, u.memory) for u in heavy] == [(3, 3), (3, 3)]
    assert all((u.cpu, u.memory, u.disk) == (1, 1, 0) for u in req.units if u.component != "heavy")
    assert {u.component for u in req.units if u.system} == {"__acker"}


def test_slot_sizes_are_configurable_and_storm_keys_are_read():
    b = wordcount(
        1,
        1,
        1,
        component_conf={
            "count": {
                "topology.component.cpu.pcore.percent": 50,
                "topology.component.resources.onheap.memory.mb": 512,
            }
        },
    )
    req = request(
        b, hosts(("h", 4)), {"squall.scheduler.cpu.slot.percent": 25, "squall.scheduler.memory.slot.mb": 256}
    )
    count = next(u for u in req.units if u.component == "count")
    assert (count.cpu, count.memory) == (2, 2)


def test_executors_with_several_tasks_ask_for_all_of_them():
    from squall.api.builder import TopologyBuilder
    from tests.unit.scheduler.helpers import Src

    b = TopologyBuilder()
    b.set_spout("s", Src())
    b.set_bolt("c", Sink(), parallelism=2).set_num_tasks(5).set_cpu_load(20).shuffle_grouping("s")
    req = request(b, hosts(("h", 4)))
    assert sorted((len(u.tasks), u.cpu) for u in req.units if u.component == "c") == [(2, 4), (3, 6)]


@pytest.mark.parametrize(
    "conf, message",
    [
        (
            {"squall.use.old.assignment": "yes"},
            "config squall.use.old.assignment must be true or false, got 'yes'",
        ),
        ({"squall.use.userdefine.assignment": {"host": "h"}}, "must be a list of workers"),
        ({"squall.use.userdefine.assignment": ["h"]}, r"assignment\[0\] must be a dict"),
        ({"squall.use.userdefine.assignment": [{"hots": "h"}]}, r"\[0\] has unknown keys \['hots'\]"),
        (
            {"squall.use.userdefine.assignment": [{"components": {"nope": 1}}]},
            r"\[0\]: unknown component 'nope'; known: count, sentences, split",
        ),
        (
            {"squall.use.userdefine.assignment": [{"components": {"count": 0}}]},
            "must be a positive integer, got 0",
        ),
        (
            {"squall.use.userdefine.assignment": [{"components": {"count": 1}, "memory_mb": -1}]},
            "memory_mb must be a positive number, got -1",
        ),
        ({"squall.use.userdefine.assignment": [{"host": 7}]}, "host must be a host name or address, got 7"),
        (
            {"squall.scheduler.reserved.workers": -1},
            "squall.scheduler.reserved.workers must be an integer >= 0",
        ),
        ({"squall.scheduler.cpu.slot.percent": 0}, "squall.scheduler.cpu.slot.percent must be a number"),
    ],
)
def test_bad_configuration_is_refused_in_one_line(conf, message):
    with pytest.raises(InvalidTopologyError, match=message) as e:
        request(wordcount(), hosts(("h", 2)), conf)
    assert "\n" not in str(e.value)


def test_bad_component_flag_names_the_component():
    b = wordcount(component_conf={"count": {"task.on.differ.node": 3}})
    with pytest.raises(
        InvalidTopologyError, match="component 'count': task.on.differ.node must be true or false, got 3"
    ):
        request(b, hosts(("h", 2)))


def test_string_flags_as_in_yaml():
    b = wordcount(count=2, component_conf={"count": {"task.on.differ.node": "true"}})
    req = request(b, hosts(("h", 2)))
    assert all(u.differ_node for u in req.units if u.component == "count")


# ---- strategies ------------------------------------------------------------------------------


class EverythingOnWorkerZero:
    def schedule(self, request):
        workers = [WorkerAssignment(0, request.offers[0].host, request.units, 0, 0, 0)]
        workers += [
            WorkerAssignment(i, request.offers[0].host, (), 0, 0, 0) for i in range(1, request.num_workers)
        ]
        return Assignment(tuple(workers))


class DropsATask(EverythingOnWorkerZero):
    def schedule(self, request):
        a = super().schedule(request)
        w0 = a.workers[0]
        return Assignment((WorkerAssignment(0, w0.host, w0.units[1:], 0, 0, 0),) + a.workers[1:])


def test_a_custom_strategy_is_loaded_by_import_path():
    conf = {"topology.workers": 2, "squall.scheduler": f"{__name__}.EverythingOnWorkerZero"}
    a = run(wordcount(), hosts(("h1", 2)), conf)
    assert len(a.workers[0].tasks) == 8 and a.workers[1].tasks == []
    conf["squall.scheduler"] = f"{__name__}:EverythingOnWorkerZero"
    assert run(wordcount(), hosts(("h1", 2)), conf) == a


def test_a_custom_strategys_answer_is_checked():
    conf = {"topology.workers": 1, "squall.scheduler": f"{__name__}.DropsATask"}
    with pytest.raises(
        SchedulingError,
        match=r"scheduler .*DropsATask gave an invalid assignment for 't': tasks not "
        r"placed \[\(1,\)\]",
    ):
        run(wordcount(), hosts(("h1", 2)), conf)
    conf = {"topology.workers": 3, "squall.scheduler": f"{__name__}.EverythingOnWorkerZero"}
    with pytest.raises(SchedulingError, match="3 workers on h1, which has 2 free worker slots"):
        run(wordcount(), hosts(("h1", 2), ("h2", 2)), conf)


@pytest.mark.parametrize(
    "path, message",
    [
        ("nope", "is not module.Class"),
        ("squall.nope.Sched", "cannot load 'squall.nope.Sched'"),
        (f"{__name__}.hosts", "has no schedule"),
    ],
)
def test_bad_strategy_paths(path, message):
    with pytest.raises(InvalidTopologyError, match=message):
        run(wordcount(), hosts(("h1", 2)), {"squall.scheduler": path})


# ---- offers ---------------------------------------------------------------------------------


def test_offers_from_executors_sum_per_host_and_leave_out_what_others_hold():
    taken = Assignment((WorkerAssignment(0, "b", (), 3, 2, 1),))
    offers = offers_from_executors([("a", 2), ("b", 1), ("b", 2)], {}, taken=[taken])
    assert offers == [HostOffer("a", 2, 20, None, 1), HostOffer("b", 2, 27, None, 0)]


def test_offers_bound_memory_when_the_cluster_does():
    offers = offers_from_executors([("a", 2), ("a", 2)], {}, task_cpus=2, memory_mb_per_executor=512)
    assert offers == [HostOffer("a", 2, 40, 8, 1)]
    conf = {
        "squall.scheduler.host.memory.mb": 1024,
        "squall.scheduler.host.disk.slots": {"a": 3},
        "squall.scheduler.isolation": {"a": ["gold"]},
    }
    assert offers_from_executors([("a", 1)], conf) == [HostOffer("a", 1, 10, 8, 3, frozenset({"gold"}))]


# ---- the placed plan ---------------------------------------------------------------------------


def test_schedule_plan_deals_executors_to_the_assigned_workers():
    topology = wordcount(1, 2, 3, differ="count").create_topology()
    conf = {"topology.workers": 3}
    plan = make_plan(topology, conf)
    placed, a = schedule_plan("t", plan, topology, conf, hosts(("h1", 1), ("h2", 1), ("h3", 1)))
    assert placed.worker_hosts == a.hosts() and sorted(placed.worker_hosts) == ["h1", "h2", "h3"]
    for w in a.workers:
        system = [ex for ex in placed.worker_executors[w.index] if ex.component == SYSTEM]
        assert system == [ex for ex in plan.worker_executors[w.index] if ex.component == SYSTEM]
        assert placed.worker_tasks(w.index) == sorted(w.tasks + [system[0].tasks[0]])
    assert placed.component_tasks == plan.component_tasks and placed.executors == plan.executors
    assert placed.worker_resources[0]["cpu_percent"] == a.workers[0].cpu * 10
    hosts_of_count = {placed.worker_hosts[placed.task_worker()[t]] for t in placed.component_tasks["count"]}
    assert len(hosts_of_count) == 3


def test_nimbus_refuses_bad_placement_keys_at_upload():
    import base64

    import cloudpickle

    from squall.nimbus.errors import InvalidRequest
    from squall.nimbus.validation import decode_upload

    topology = base64.b64encode(cloudpickle.dumps(wordcount().create_topology())).decode()
    code = base64.b64encode(b"PK\x05\x06" + b"\0" * 18).decode()  # an empty zip
    conf = {"squall.use.userdefine.assignment": [{"host": "h", "components": {"nope": 1}}]}
    with pytest.raises(InvalidRequest, match=r"invalid topology: .*\[0\]: unknown component 'nope'"):
        decode_upload({"conf": conf, "topology": topology, "code": code})
    ok = {"squall.use.userdefine.assignment": [{"host": "h", "components": {"count": 1}}]}
    assert decode_upload({"conf": ok, "topology": topology, "code": code}).workers == 1


def test_local_cluster_checks_the_placement_keys_and_runs_on_its_one_host():
    from squall import LocalCluster

    bad = {"squall.use.userdefine.assignment": [{"components": {"nope": 1}}]}
    with LocalCluster() as cluster:
        with pytest.raises(InvalidTopologyError, match="unknown component 'nope'"):
            cluster.submit_topology("bad", bad, wordcount().create_topology())
        assert cluster.list_topologies() == []
        differ = wordcount(count=3, differ="count").create_topology()
        cluster.submit_topology("differ", {"topology.workers": 2}, differ)
        assert len(cluster.get_topology_info("differ")["workers"]) == 2
