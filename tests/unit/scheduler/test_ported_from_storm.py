"""Cases of Storm's ``TestResourceAwareScheduler`` (testHeterogeneousCluster, testScheduleResilience),
rewritten for squall's slots: a strong host (800 % CPU, 4096 MB) and a weak one (200 %, 1024 MB)."""

from __future__ import annotations

from collections import defaultdict

from squall.api.builder import TopologyBuilder
from squall.scheduler import HostOffer, OldWorker
from tests.unit.scheduler.helpers import Src, run

# CPU slots of 5 % of a core, memory slots of 128 MB
CONF = {"squall.scheduler.cpu.slot.percent": 5, "squall.scheduler.memory.slot.mb": 128,
        "topology.acker.executors": 0}
CLUSTER = [HostOffer("host-0", 4, cpu=160, memory=32), HostOffer("host-1", 4, cpu=40, memory=8)]


def spouts(n: int, cpu: float, memory: float) -> TopologyBuilder:
    b = TopologyBuilder()
    b.set_spout("word", Src(), parallelism=n).set_cpu_load(cpu).set_memory_load(memory)
    return b


def usage(assignment) -> dict[str, list[int]]:
    used: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for w in assignment.workers:
        used[w.host][0] += w.cpu
        used[w.host][1] += w.memory
    return dict(used)


def test_one_huge_task_goes_to_the_host_that_can_hold_it():
    a = run(spouts(1, 300, 2000), CLUSTER, {**CONF, "topology.workers": 2})
    assert a.task_host() == {1: "host-0"}


def test_small_tasks_use_up_the_cluster_exactly():
    # 40 tasks of 25 % and 128 MB: 1000 % and 5120 MB, all the cluster has
    a = run(spouts(40, 25, 128), CLUSTER, {**CONF, "topology.workers": 8})
    assert len(a.task_host()) == 40
    assert usage(a) == {"host-0": [160, 32], "host-1": [40, 8]}


def test_large_tasks_fill_hosts_without_overcommitting():
    # four tasks of 100 % and 500 MB (4 memory slots each): the weak host holds two at most
    a = run(spouts(4, 100, 500), CLUSTER, {**CONF, "topology.workers": 4})
    for host, (cpu, memory) in usage(a).items():
        offer = next(o for o in CLUSTER if o.host == host)
        assert cpu <= offer.cpu and memory <= offer.memory


def test_healthy_workers_keep_their_tasks_when_a_host_fails():
    conf = {**CONF, "topology.workers": 3, "squall.use.old.assignment": True}
    cluster = [HostOffer("r000s000", 2), HostOffer("r000s001", 2)]
    # executors 1 and 2 on r000s000 (which fails), executor 3 on r000s001
    previous = (OldWorker(0, "r000s000", {1: "word"}), OldWorker(1, "r000s000", {2: "word"}),
                OldWorker(2, "r000s001", {3: "word"}))
    a = run(spouts(3, 10, 128), cluster[1:] + [HostOffer("r000s002", 2)], conf, previous=previous)
    assert a.task_host()[3] == "r000s001" and a.workers[2].source == "old"
    assert {a.task_host()[1], a.task_host()[2]} <= {"r000s001", "r000s002"}
    # a worker lost alone (its host healthy): the others keep theirs, untouched
    b = run(spouts(3, 10, 128), cluster, conf, previous=previous[1:])
    assert b.task_host()[2] == "r000s000" and b.task_host()[3] == "r000s001"
