"""The default scheduler, step by step, on simulated clusters (seed 000 and 001, JStorm's
``DefaultTopologyScheduler``/``WorkerScheduler``/``TaskScheduler``)."""

from __future__ import annotations

import pytest

from squall.scheduler import HostOffer, OldWorker, SchedulingError, SchedulingRequest, Unit, UserWorker
from squall.scheduler.default import placing_order
from tests.unit.scheduler.helpers import (
    default,
    host_of,
    hosts,
    per_worker,
    request,
    run,
    wordcount,
    workers_per_host,
)

# ---- balanced default ------------------------------------------------------------------


def test_each_component_spreads_evenly_over_workers():
    a = run(wordcount(spout=2, split=5, count=7), hosts(("h1", 4)), {"topology.workers": 3})
    for comp in ("sentences", "split", "count"):
        counts = per_worker(a, comp)
        assert max(counts) - min(counts) <= 1, (comp, counts)
    totals = [len(w.tasks) for w in a.workers]
    assert max(totals) - min(totals) <= 1


def test_a_component_spreads_even_onto_workers_others_filled():
    from squall.api.builder import TopologyBuilder
    from tests.unit.scheduler.helpers import Sink, Src

    b = TopologyBuilder()
    b.set_spout("a", Src(), parallelism=2)
    b.set_bolt("b", Sink(), parallelism=2).shuffle_grouping("a")
    b.set_bolt("c", Sink(), parallelism=2).shuffle_grouping("a")
    conf = {"topology.workers": 3, "topology.acker.executors": 0, "squall.use.userdefine.assignment": [
        {"components": {}}, {"components": {"a": 2}}, {"components": {"b": 2}}]}
    a = run(b, hosts(("h1", 3)), conf)
    assert per_worker(a, "c") == [1, 1, 0]


def test_workers_spread_over_hosts_before_doubling_up():
    a = run(wordcount(), hosts(("h1", 4), ("h2", 1), ("h3", 1)), {"topology.workers": 3})
    assert workers_per_host(a) == {"h1": 1, "h2": 1, "h3": 1}


def test_more_workers_than_hosts_go_to_the_hosts_with_most_free_slots():
    a = run(wordcount(), hosts(("h1", 4), ("h2", 1), ("h3", 2)), {"topology.workers": 5})
    assert workers_per_host(a) == {"h1": 2, "h2": 1, "h3": 2}


def test_workers_weigh_free_cpu_and_memory_when_slots_tie():
    offers = [HostOffer("a", 2, cpu=10, memory=10), HostOffer("b", 2, cpu=30, memory=10)]
    a = run(wordcount(), offers, {"topology.workers": 1})
    assert a.workers[0].host == "b"


def test_every_task_placed_once_and_system_task_excluded():
    req = request(wordcount(), hosts(("h1", 2)), {"topology.workers": 2})
    a = default(req)
    placed = sorted(t for w in a.workers for t in w.tasks)
    assert placed == sorted(t for u in req.units for t in u.tasks)
    assert all(u.component != "__system" for u in req.units)


def test_placement_is_deterministic():
    offers = hosts(("h1", 2), ("h2", 2), ("h3", 2))
    a = run(wordcount(2, 4, 6), offers, {"topology.workers": 4})
    b = run(wordcount(2, 4, 6), offers, {"topology.workers": 4})
    assert a == b


# ---- refusals: what was asked, what exists ------------------------------------------------


def test_refused_when_worker_slots_are_too_few():
    with pytest.raises(SchedulingError) as e:
        run(wordcount(), hosts(("h1", 2), ("h2", 1)), {"topology.workers": 4})
    msg = str(e.value)
    assert "asks for 4 workers" in msg and "3 free worker slots on 2 hosts" in msg
    assert "h1: 2" in msg and "h2: 1" in msg


def test_reserved_workers_are_left_free():
    conf = {"topology.workers": 3, "squall.scheduler.reserved.workers": 1}
    with pytest.raises(SchedulingError, match=r"3 free worker slots on 2 hosts .*1 of them reserved"):
        run(wordcount(), hosts(("h1", 2), ("h2", 1)), conf)
    conf["topology.workers"] = 2
    assert len(run(wordcount(), hosts(("h1", 2), ("h2", 1)), conf).workers) == 2


def test_refused_when_no_host_at_all():
    with pytest.raises(SchedulingError, match=r"0 free worker slots on 0 hosts \(none\)"):
        run(wordcount(), [], {"topology.workers": 1})


def test_refused_when_cpu_is_short_with_the_numbers():
    offers = [HostOffer("h1", 2, cpu=20, memory=None), HostOffer("h2", 2, cpu=5, memory=None)]
    conf = {"topology.workers": 2}
    req = request(wordcount(1, 1, 30), offers, conf)  # 32 user tasks + 2 ackers, one CPU slot each
    with pytest.raises(SchedulingError) as e:
        default(req)
    msg = str(e.value)
    assert "asks 34 CPU slots" in msg and "has 25 free" in msg
    assert "340% of a core asked, 250% of a core free" in msg


def test_refused_when_memory_is_short():
    offers = [HostOffer("h1", 1, cpu=None, memory=3)]
    with pytest.raises(
        SchedulingError, match=r"asks 5 memory slots .* has 3 free \(640 MB asked, 384 MB free\)"
    ):
        run(wordcount(1, 1, 2), offers)


def test_a_task_no_host_can_hold_is_named():
    # plenty in total, but no single host has 3 CPU slots left for the heavy task
    b = wordcount(1, 1, 1)
    b.set_bolt("heavy", _sink(), parallelism=1).set_cpu_load(30).shuffle_grouping("sentences")
    offers = [HostOffer("h1", 1, cpu=2), HostOffer("h2", 1, cpu=2), HostOffer("h3", 1, cpu=2)]
    with pytest.raises(SchedulingError) as e:
        run(b, offers, {"topology.workers": 3, "topology.acker.executors": 0})
    msg = str(e.value)
    assert "no worker can take task 2 of component 'heavy', which asks 3 CPU slots (30% of a core)" in msg
    assert "h1: 0 worker, 1 CPU, unbounded memory, 0 disk slots free" in msg


def _sink():
    from tests.unit.scheduler.helpers import Sink

    return Sink()


# ---- task.on.differ.node -------------------------------------------------------------------


def test_differ_node_tasks_each_on_their_own_host():
    a = run(
        wordcount(count=3, differ="count"), hosts(("h1", 2), ("h2", 2), ("h3", 2)), {"topology.workers": 4}
    )
    assert sorted(host_of(a, "count")) == ["h1", "h2", "h3"]


def test_differ_node_refused_when_hosts_are_too_few():
    with pytest.raises(SchedulingError) as e:
        run(
            wordcount(count=4, differ="count"),
            hosts(("h1", 2), ("h2", 2), ("h3", 2)),
            {"topology.workers": 4},
        )
    assert str(e.value).startswith(
        "component 'count' asks task.on.differ.node for 4 tasks; "
        "the cluster has 3 hosts with a free worker slot"
    )


def test_differ_node_refused_when_workers_are_too_few():
    with pytest.raises(
        SchedulingError, match=r"for 3 tasks; topology 't' has 2 workers \(topology.workers\)"
    ):
        run(
            wordcount(count=3, differ="count"),
            hosts(("h1", 2), ("h2", 2), ("h3", 2)),
            {"topology.workers": 2},
        )


def test_differ_node_refused_when_executors_hold_several_tasks():
    # parallelism 1 with 2 tasks: one executor holding both
    from squall.api.builder import TopologyBuilder as TB
    from tests.unit.scheduler.helpers import Sink, Src

    tb = TB()
    tb.set_spout("s", Src())
    tb.set_bolt("c", Sink(), parallelism=1).set_num_tasks(2).shuffle_grouping("s").add_configuration(
        "task.on.differ.node", True
    )
    with pytest.raises(
        SchedulingError, match=r"'c' asks task.on.differ.node for 2 tasks, but its 1 executors"
    ):
        run(tb, hosts(("h1", 1), ("h2", 1)), {"topology.workers": 2})


def test_differ_node_refused_when_the_workers_sit_on_too_few_hosts():
    # two user-defined workers pinned to h1 leave the third count task no host of its own
    conf = {
        "topology.workers": 3,
        "squall.use.userdefine.assignment": [
            {"host": "h1", "components": {"split": 1}},
            {"host": "h1", "components": {"split": 1}},
        ],
    }
    with pytest.raises(
        SchedulingError,
        match=r"'count' asks task.on.differ.node for 3 more tasks; .* 3 workers "
        r"are on 2 hosts",
    ):
        run(wordcount(count=3, differ="count"), hosts(("h1", 2), ("h2", 2), ("h3", 2)), conf)


def test_differ_node_components_are_placed_first():
    # h2 has CPU for one task only; placed last, the differ-node component would find it full
    b = wordcount(1, 3, 2, differ="count")
    offers = [HostOffer("h1", 2, cpu=100), HostOffer("h2", 1, cpu=1)]
    a = run(b, offers, {"topology.workers": 2, "topology.acker.executors": 0})
    assert sorted(host_of(a, "count")) == ["h1", "h2"]


def test_differ_node_key_set_for_the_whole_topology_applies_to_user_components_only():
    conf = {"topology.workers": 3, "task.on.differ.node": True}
    a = run(wordcount(1, 2, 3), hosts(("h1", 2), ("h2", 2), ("h3", 2)), conf)
    assert len(set(host_of(a, "count"))) == 3 and len(set(host_of(a, "split"))) == 2
    assert len(host_of(a, "__acker")) == 3  # ackers are not constrained


# ---- order: user tasks before system tasks ------------------------------------------------------


def test_placing_order_differ_then_user_then_system():
    units = [
        Unit("__acker", (9,), system=True),
        Unit("b", (3,)),
        Unit("a", (1,)),
        Unit("z", (7,), differ_node=True),
        Unit("$checkpointspout", (8,), system=True),
        Unit("a", (2,)),
    ]
    assert [c for c, _ in placing_order(units)] == ["z", "a", "b", "$checkpointspout", "__acker"]


def test_ackers_count_in_the_cpu_asked():
    offers = [HostOffer("h1", 1, cpu=4)]  # the 4 user tasks fit, the acker does not
    with pytest.raises(SchedulingError, match="asks 5 CPU slots"):
        run(wordcount(1, 1, 2), offers, {"topology.acker.executors": 1})
    assert len(run(wordcount(1, 1, 2), offers, {"topology.acker.executors": 0}).workers[0].tasks) == 4


# ---- affinity: tasks that exchange tuples together, among equal choices -----------------------


def _pairs():
    from squall.api.builder import TopologyBuilder
    from tests.unit.scheduler.helpers import Sink, Src

    b = TopologyBuilder()
    b.set_spout("a", Src())
    b.set_spout("c", Src())
    b.set_bolt("b", Sink()).shuffle_grouping("a")
    b.set_bolt("d", Sink()).shuffle_grouping("c")
    return b


def test_tasks_that_exchange_tuples_share_a_worker():
    a = run(_pairs(), hosts(("h1", 2)), {"topology.workers": 2, "topology.acker.executors": 0})
    worker = {u.component: w.index for w in a.workers for u in w.units}
    assert worker["a"] == worker["b"] and worker["c"] == worker["d"] and worker["a"] != worker["c"]


def test_affinity_does_not_overload_a_worker():
    a = run(wordcount(1, 1, 1), hosts(("h1", 3)), {"topology.workers": 3, "topology.acker.executors": 0})
    assert sorted(len(w.tasks) for w in a.workers) == [1, 1, 1]


def test_traffic_from_metrics_decides_between_neighbours():
    from squall.api.builder import TopologyBuilder
    from tests.unit.scheduler.helpers import Sink, Src

    b = TopologyBuilder()
    b.set_spout("quiet", Src())
    b.set_spout("loud", Src())
    b.set_bolt("x", Sink()).shuffle_grouping("quiet").shuffle_grouping("loud")
    conf = {"topology.workers": 2, "topology.acker.executors": 0}
    a = run(b, hosts(("h1", 2)), conf, traffic={"loud": 10_000, "quiet": 10})
    worker = {u.component: w.index for w in a.workers for u in w.units}
    assert worker["x"] == worker["loud"] != worker["quiet"]
    b2 = run(b, hosts(("h1", 2)), conf, traffic={"loud": 10, "quiet": 10_000})
    worker = {u.component: w.index for w in b2.workers for u in w.units}
    assert worker["x"] == worker["quiet"]


# ---- disk slots -----------------------------------------------------------------------------


def test_disk_slots_are_held_by_one_task_each():
    b = wordcount(1, 1, 2, component_conf={"count": {"squall.task.disk.slots": 1}})
    a = run(b, hosts(("h1", 2), ("h2", 2), disk=1), {"topology.workers": 2})
    assert sorted(host_of(a, "count")) == ["h1", "h2"]
    assert sum(w.disk for w in a.workers) == 2


def test_refused_when_disk_slots_are_too_few():
    b = wordcount(1, 1, 3, component_conf={"count": {"squall.task.disk.slots": 1}})
    with pytest.raises(
        SchedulingError, match=r"asks 3 disk slots for its tasks; the cluster has 2 free \(h1: 1, h2: 1\)"
    ):
        run(b, hosts(("h1", 2), ("h2", 2), disk=1), {"topology.workers": 2})


# ---- isolation ---------------------------------------------------------------------------------


def test_isolated_hosts_serve_their_topology_only():
    offers = [HostOffer("h1", 2), HostOffer("h2", 2, isolated_for=frozenset({"gold"})), HostOffer("h3", 2)]
    a = run(wordcount(), offers, {"topology.workers": 2}, name="gold")
    assert {w.host for w in a.workers} == {"h2"}
    b = run(wordcount(), offers, {"topology.workers": 4}, name="other")
    assert "h2" not in {w.host for w in b.workers}
    with pytest.raises(SchedulingError, match="asks for 5 workers .* 4 free worker slots on 2 hosts"):
        run(wordcount(), offers, {"topology.workers": 5}, name="other")


# ---- user-defined assignment ---------------------------------------------------------------------


def test_user_defined_workers_get_their_hosts_and_tasks():
    conf = {
        "topology.workers": 3,
        "squall.use.userdefine.assignment": [
            {"host": "h3", "components": {"count": 2}, "memory_mb": 1024, "cpu": 100},
            {"host": "h1", "components": {"split": 1, "count": 1}},
        ],
    }
    a = run(wordcount(1, 2, 3), hosts(("h1", 2), ("h2", 2), ("h3", 2)), conf)
    w0, w1 = a.workers[0], a.workers[1]
    assert (w0.host, w0.source, w0.cpu, w0.memory) == ("h3", "userdefine", 10, 8)
    assert per_worker(a, "count")[:2] == [2, 1] and per_worker(a, "split")[1] == 1
    assert w1.host == "h1" and w1.source == "userdefine"
    assert a.workers[2].source == "default"


def test_user_defined_worker_on_a_missing_host_falls_to_the_default_with_a_note():
    conf = {
        "topology.workers": 2,
        "squall.use.userdefine.assignment": [{"host": "10.0.0.5", "components": {"count": 2}}],
    }
    a = run(wordcount(), hosts(("h1", 2), ("h2", 2)), conf)
    assert [u.component for u in a.workers[0].units][:2] == ["count", "count"]
    assert a.workers[0].host in ("h1", "h2")
    assert a.notes == (
        "worker 0 (userdefine) asked for host 10.0.0.5: no such host in the cluster; "
        "placed by the default scheduler instead",
    )


def test_user_defined_worker_on_a_full_host_falls_to_the_default():
    conf = {
        "topology.workers": 2,
        "squall.use.userdefine.assignment": [
            {"host": "h1", "components": {"count": 1}},
            {"host": "h1", "components": {"count": 1}},
        ],
    }
    a = run(wordcount(), hosts(("h1", 1), ("h2", 1)), conf)
    assert sorted(w.host for w in a.workers) == ["h1", "h2"]
    assert "worker 1 (userdefine) asked for host h1: no free worker slot there" in a.notes[0]


def test_user_defined_refusals():
    offers = hosts(("h1", 2), ("h2", 2))
    too_many = {
        "topology.workers": 1,
        "squall.use.userdefine.assignment": [{"components": {}}, {"components": {}}],
    }
    with pytest.raises(SchedulingError, match=r"lists 2 workers; topology 't' has 1 \(topology.workers\)"):
        run(wordcount(), offers, too_many)
    over = {
        "topology.workers": 2,
        "squall.use.userdefine.assignment": [{"components": {"count": 2}}, {"components": {"count": 2}}],
    }
    with pytest.raises(SchedulingError, match=r"asks 4 tasks of component 'count' in all; it has 3"):
        run(wordcount(), offers, over)
    budget = {
        "topology.workers": 1,
        "squall.use.userdefine.assignment": [{"components": {"count": 3}, "memory_mb": 256}],
    }
    with pytest.raises(
        SchedulingError, match=r"worker 0 reserves 2 memory slots \(256 MB\) but its tasks ask 3 \(384 MB\)"
    ):
        run(wordcount(), offers, budget)
    differ = {"topology.workers": 2, "squall.use.userdefine.assignment": [{"components": {"count": 2}}]}
    with pytest.raises(
        SchedulingError,
        match=r"puts 2 tasks of component 'count' in worker 0, but it sets "
        r"task.on.differ.node",
    ):
        run(wordcount(count=2, differ="count"), offers, differ)


def test_user_defined_counts_meet_executors_of_several_tasks():
    from squall.api.builder import TopologyBuilder
    from tests.unit.scheduler.helpers import Sink, Src

    b = TopologyBuilder()
    b.set_spout("s", Src())
    b.set_bolt("c", Sink(), parallelism=2).set_num_tasks(4).shuffle_grouping("s")
    one = {"topology.workers": 2, "squall.use.userdefine.assignment": [{"components": {"c": 1}}]}
    a = run(b, hosts(("h1", 2)), one)
    assert per_worker(a, "c") == [2, 2]
    assert a.notes == ("worker 0 (userdefine) holds 2 tasks of 'c' rather than 1: an executor's tasks stay "
                       "together",)
    three = {"topology.workers": 2, "squall.use.userdefine.assignment": [
        {"components": {"c": 3}}, {"components": {"c": 1}}]}
    with pytest.raises(SchedulingError, match="worker 1 asks 1 tasks of a component whose executors the "
                                              "workers before it took whole"):
        run(b, hosts(("h1", 2)), three)


def test_user_defined_budget_bounds_what_the_default_adds_to_that_worker():
    # worker 0 reserved 3 CPU slots and holds 3 count tasks: nothing else may join it
    conf = {
        "topology.workers": 2,
        "squall.use.userdefine.assignment": [{"host": "h1", "components": {"count": 3}, "cpu": 30}],
    }
    a = run(wordcount(1, 2, 3), hosts(("h1", 2), ("h2", 2)), conf)
    assert [u.component for u in a.workers[0].units] == ["count"] * 3
    assert a.workers[0].cpu == 3


# ---- old assignment ----------------------------------------------------------------------------


def _old(assignment):
    return tuple(
        OldWorker(w.index, w.host, {t: u.component for u in w.units for t in u.tasks})
        for w in assignment.workers
    )


def test_old_assignment_keeps_tasks_on_their_workers_and_hosts():
    offers = hosts(("h1", 2), ("h2", 2), ("h3", 2))
    first = run(wordcount(1, 2, 3), offers, {"topology.workers": 2})
    conf = {"topology.workers": 3, "squall.use.old.assignment": True}
    again = run(wordcount(1, 2, 3), offers, conf, previous=_old(first), rebalance=True)
    before, after = first.task_host(), again.task_host()
    assert all(after[t] == h for t, h in before.items())
    for w in first.workers:
        assert set(w.tasks) <= set(again.workers[w.index].tasks)
        assert again.workers[w.index].source == "old"
    assert not set(again.workers[2].tasks) & set(before) and again.workers[2].source == "default"


def test_old_assignment_keeps_what_still_exists_after_parallelism_changes():
    offers = hosts(("h1", 2), ("h2", 2))
    first = run(wordcount(1, 2, 3), offers, {"topology.workers": 2})
    conf = {"topology.workers": 2, "squall.use.old.assignment": True}
    # count grows to 4: task ids of split and sentences shift, count's first three stay
    again = run(wordcount(1, 2, 4), offers, conf, previous=_old(first), rebalance=True)
    for t in (1, 2, 3):
        assert again.task_host()[t] == first.task_host()[t]
    assert len(host_of(again, "count")) == 4


def test_old_assignment_on_a_lost_host_falls_to_the_default():
    offers = hosts(("h1", 1), ("h2", 1))
    first = run(wordcount(), offers, {"topology.workers": 2})
    lost = next(w.host for w in first.workers if w.index == 1)
    left = [o for o in offers if o.host != lost] + [HostOffer("h9", 1)]
    again = run(
        wordcount(), left, {"topology.workers": 2, "squall.use.old.assignment": True}, previous=_old(first)
    )
    assert again.workers[1].host == "h9" and set(again.workers[1].tasks) == set(first.workers[1].tasks)
    assert again.notes == (
        f"worker 1 (old) asked for host {lost}: the host is gone; placed by the default scheduler instead",
    )


def test_rebalance_without_old_assignment_reuses_hosts_not_tasks():
    offers = hosts(("h1", 1), ("h2", 1), ("h3", 1))
    first = run(wordcount(), offers, {"topology.workers": 2})
    used = {w.host for w in first.workers}
    again = run(wordcount(2, 2, 4), offers, {"topology.workers": 2}, previous=_old(first), rebalance=True)
    assert {w.host for w in again.workers} == used
    assert all(w.source == "old" for w in again.workers)


def test_old_worker_keeps_one_task_of_a_differ_node_component():
    # found by hypothesis: task.on.differ.node turned on for a component whose tasks shared a worker
    previous = (OldWorker(0, "h1", {1: "count", 2: "count"}),)
    conf = {"topology.workers": 2, "squall.use.old.assignment": True}
    a = run(wordcount(1, 1, 2, differ="count"), hosts(("h1", 1), ("h2", 1)), conf, previous=previous)
    assert sorted(host_of(a, "count")) == ["h1", "h2"] and a.task_host()[1] == "h1"


def test_old_assignment_ignored_unless_asked():
    offers = hosts(("h1", 1), ("h2", 1))
    req = request(
        wordcount(),
        offers,
        {"topology.workers": 2},
        previous=(OldWorker(0, "h2", {1: "count", 2: "count", 3: "count"}),),
    )
    a = default(req)
    assert per_worker(a, "count") != [3, 0]


def test_user_defined_before_old():
    offers = hosts(("h1", 2), ("h2", 2))
    previous = (OldWorker(0, "h2", {1: "count", 2: "count", 3: "count"}),)
    conf = {
        "topology.workers": 2,
        "squall.use.old.assignment": True,
        "squall.use.userdefine.assignment": [{"host": "h1", "components": {"count": 1}}],
    }
    a = run(wordcount(), offers, conf, previous=previous)
    assert a.workers[0].source == "userdefine" and a.workers[0].host == "h1"
    assert a.workers[1].source == "old" and a.workers[1].host == "h2"
    assert per_worker(a, "count") == [1, 2]


def test_request_is_plain_data():
    req = SchedulingRequest(
        "t", 1, (Unit("a", (1,)),), (HostOffer("h", 1),), user_workers=(UserWorker("h", {"a": 1}),)
    )
    assert default(req).workers[0].tasks == [1]
