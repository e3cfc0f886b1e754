"""Properties of every assignment the default scheduler gives, on random simulated clusters."""

from __future__ import annotations

from collections import Counter, defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st

from squall.scheduler import HostOffer, SchedulingError, SchedulingRequest, Unit
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
