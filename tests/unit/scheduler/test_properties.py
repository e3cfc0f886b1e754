"""Properties of every assignment the default scheduler gives, on random simulated clusters."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from squall.scheduler import HostOffer, OldWorker, SchedulingError, SchedulingRequest, Unit, UserWorker
from tests.unit.scheduler.helpers import default


@st.composite
def requests(draw):
    n_hosts = draw(st.integers(1, 6))
    bounded = draw(st.booleans())
    offers = tuple(
        HostOffer(
            f"h{i}",
            draw(st.integers(0, 3)),
            draw(st.integers(0, 12)) if bounded else None,
            draw(st.integers(0, 12)) if bounded else None,
            draw(st.integers(0, 2)),
        )
        for i in range(n_hosts)
    )
    units, next_id = [], 1
    for c in range(draw(st.integers(1, 4))):
        n = draw(st.integers(1, 5))
        differ = draw(st.booleans()) and c == 0
        cpu, disk = draw(st.integers(1, 3)), draw(st.sampled_from([0, 0, 1]))
        for _ in range(n):
            units.append(Unit(f"c{c}", (next_id,), cpu, 1, disk, differ))
            next_id += 1
    for _ in range(draw(st.integers(0, 2))):
        units.append(Unit("__acker", (next_id,), 1, 1, 0, False, True))
        next_id += 1
    workers = draw(st.integers(1, 6))
    affinity = {"c0": {"c1": 1.0}, "c1": {"c0": 1.0}}
    return SchedulingRequest("t", workers, tuple(units), offers, affinity=affinity)


@settings(max_examples=300, deadline=None)
@given(requests())
def test_assignments_keep_every_constraint(req):
    try:
        a = default(req)
    except SchedulingError as e:
        assert str(e)  # a refusal always says why
        return
    offers = {o.host: o for o in req.offers}
    assert sorted(w.index for w in a.workers) == list(range(req.num_workers))
    assert Counter(u.tasks for w in a.workers for u in w.units) == Counter(u.tasks for u in req.units)
    per_host = defaultdict(lambda: [0, 0, 0, 0])
    for w in a.workers:
        row = per_host[w.host]
        row[0] += 1
        row[1] += sum(u.cpu for u in w.units)
        row[2] += sum(u.memory for u in w.units)
        row[3] += sum(u.disk for u in w.units)
    for host, (ports, cpu, memory, disk) in per_host.items():
        o = offers[host]
        assert ports <= o.ports
        assert o.cpu is None or cpu <= o.cpu
        assert o.memory is None or memory <= o.memory
        assert disk <= o.disk
    differ = [u for u in req.units if u.differ_node]
    hosts = [a.task_host()[u.tasks[0]] for u in differ]
    assert len(hosts) == len(set(hosts))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 8), st.lists(st.integers(1, 9), min_size=1, max_size=4), st.integers(1, 4))
def test_without_bounds_components_and_loads_spread_evenly(workers, sizes, n_hosts):
    units, next_id = [], 1
    for c, n in enumerate(sizes):
        for _ in range(n):
            units.append(Unit(f"c{c}", (next_id,)))
            next_id += 1
    offers = tuple(HostOffer(f"h{i}", workers) for i in range(n_hosts))
    a = default(SchedulingRequest("t", workers, tuple(units), offers))
    for c in range(len(sizes)):
        counts = [sum(1 for u in w.units if u.component == f"c{c}") for w in a.workers]
        assert max(counts) - min(counts) <= 1
    loads = [len(w.tasks) for w in a.workers]
    assert max(loads) - min(loads) <= 1
    used = Counter(w.host for w in a.workers)
    assert max(used.values()) - min(used.values() if len(used) == n_hosts else [0]) <= 1


@st.composite
def with_pins(draw):
    req = draw(requests())
    hosts = [o.host for o in req.offers] + ["gone"]
    user = tuple(
        UserWorker(draw(st.sampled_from(hosts + [None])),
                   {"c0": draw(st.integers(1, 2))} if draw(st.booleans()) else {},
                   draw(st.sampled_from([None, 5, 20])), draw(st.sampled_from([None, 3, 20])))
        for _ in range(draw(st.integers(0, 2))))
    tasks = [t for u in req.units for t in u.tasks]
    comp = {t: u.component for u in req.units for t in u.tasks}
    old = []
    for i in range(draw(st.integers(0, 3))):
        mine = draw(st.lists(st.sampled_from(tasks), max_size=4, unique=True))
        old.append(OldWorker(i, draw(st.sampled_from(hosts)), {t: comp[t] for t in mine}))
    return replace(req, user_workers=user, old_workers=tuple(old), use_old=draw(st.booleans()),
                   rebalance=draw(st.booleans()))


@settings(max_examples=400, deadline=None)
@given(with_pins())
def test_pinned_workers_never_break_a_constraint(req):
    test_assignments_keep_every_constraint.hypothesis.inner_test(req)
    try:
        a = default(req)
    except SchedulingError:
        return
    for i, user in enumerate(req.user_workers):
        w = a.workers[i]
        assert w.source == "userdefine"
        placed = {c: sum(len(u.tasks) for u in w.units if u.component == c) for c in user.components}
        assert all(placed[c] >= n for c, n in user.components.items())
        if user.cpu is not None:
            assert sum(u.cpu for u in w.units) <= user.cpu
