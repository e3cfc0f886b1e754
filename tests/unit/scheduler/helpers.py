"""Building scheduling requests for the scheduler's unit tests: simulated clusters, no Spark."""

from __future__ import annotations

from collections import Counter

from squall.api.builder import TopologyBuilder
from squall.api.components import Bolt, Spout
from squall.api.fields import Fields
from squall.runtime.plan import make_plan
from squall.scheduler import Assignment, HostOffer, SchedulingRequest, build_request, schedule
from squall.scheduler.default import DefaultScheduler


class Src(Spout):
    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"))


class Sink(Bolt):
    def execute(self, tup):
        pass

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"))


def hosts(*spec: tuple, cpu: int | None = None, memory: int | None = None, disk: int = 0) -> list[HostOffer]:
    """``hosts(("h1", 2), ("h2", 1))``: hosts with that many worker slots (and shared cpu/memory/disk)."""
    return [HostOffer(h[0], h[1], *(h[2:] or (cpu, memory, disk))) for h in spec]


def wordcount(
    spout: int = 1,
    split: int = 2,
    count: int = 3,
    *,
    differ: str | None = None,
    component_conf: dict[str, dict] | None = None,
) -> TopologyBuilder:
    """sentences -> split -> count; ``differ`` names a component marked task.on.differ.node."""
    b = TopologyBuilder()
    d = {"sentences": b.set_spout("sentences", Src(), parallelism=spout)}
    d["split"] = b.set_bolt("split", Sink(), parallelism=split).shuffle_grouping("sentences")
    d["count"] = b.set_bolt("count", Sink(), parallelism=count).fields_grouping("split", Fields("word"))
    if differ:
        d[differ].add_configuration("task.on.differ.node", True)
    for comp, entries in (component_conf or {}).items():
        for key, value in entries.items():
            d[comp].add_configuration(key, value)
    return b


def request(
    builder: TopologyBuilder, offers: list[HostOffer], conf: dict | None = None, *, name: str = "t", **kw
) -> SchedulingRequest:
    topology = builder.create_topology()
    conf = {"topology.workers": 1, **(conf or {})}
    return build_request(name, make_plan(topology, conf), topology, conf, offers, **kw)


def run(builder: TopologyBuilder, offers: list[HostOffer], conf: dict | None = None, **kw) -> Assignment:
    req = request(builder, offers, conf, **kw)
    return schedule(req, conf or {})


def default(req: SchedulingRequest) -> Assignment:
    return DefaultScheduler().schedule(req)


def per_worker(a: Assignment, component: str) -> list[int]:
    """Tasks of ``component`` on each worker, by index."""
    return [
        sum(len(u.tasks) for u in w.units if u.component == component)
        for w in sorted(a.workers, key=lambda w: w.index)
    ]


def host_of(a: Assignment, component: str) -> list[str]:
    """The host of each task of ``component``, by task id."""
    th = a.task_host()
    comp = {t: u.component for w in a.workers for u in w.units for t in u.tasks}
    return [th[t] for t in sorted(th) if comp[t] == component]


def workers_per_host(a: Assignment) -> Counter:
    return Counter(w.host for w in a.workers)
