"""The scheduler on Spark: offers from the application's executors, workers pinned to hosts.

Offers: the executors Spark gave the application (the status store's executor list:
host and cores; in ``local[N]`` mode one host with N cores), less what the other
topologies of the same application hold. An executor Spark has excluded
(``spark.excludeOnFailure.*``: its tasks failed there too often) is not offered: Spark
would not start a worker's job on it, so a worker placed there would never start. Memory is bounded only when
``spark.executor.pyspark.memory`` is set (Spark bounds nothing else of a Python worker).

Pinning: a worker's single-partition job runs on an RDD whose one partition prefers the
assigned host (``SparkContext.makeRDD`` with location preferences), so Spark's delay
scheduling starts it there when that host has a free task slot within
``spark.locality.wait``. Spark may still start it elsewhere (the host's slots busy,
the host gone): the master compares the host the worker reports with the assignment
and relaunches a misplaced worker a few times before accepting where it runs and saying
so in ``get_topology_info``. Nothing is pinned in ``local`` mode (one host).
"""

from __future__ import annotations

import logging
import math
import os
import pickle
import re
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from squall.api.errors import InvalidTopologyError
from squall.api.topology import StormTopology
from squall.runtime.plan import SYSTEM, TaskPlan
from squall.scheduler import (
    Assignment,
    HostOffer,
    OldWorker,
    OtherTopology,
    SchedulingError,
    offers_from_executors,
    schedule_plan,
)
from squall.scheduler import keys as SK
from squall.spark.context import cluster_slots, local_slots
from squall.spark.settings import EXECUTOR_WAIT, MASTER_UI_URL, RESOURCE_PROFILES, setting
from squall.spark.setup import master_endpoint
from squall.store import BlobStore, Store, StoreError
from squall.store import keys as store_keys

if TYPE_CHECKING:
    from pyspark import RDD, SparkContext

log = logging.getLogger("squall.spark.placement")
PLACEMENT_TRIES = 3  # relaunches of a worker that started on another host than its own
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)b?\s*$", re.IGNORECASE)


def worker_host() -> str:
    """The host this process runs on as Spark names it: ``SPARK_LOCAL_IP`` where set, else the host name."""
    return os.environ.get("SPARK_LOCAL_IP") or os.environ.get("SPARK_LOCAL_HOSTNAME") or socket.gethostname()


@lru_cache(maxsize=1024)
def _address(host: str) -> str:
    try:
        return socket.gethostbyname(host)
    except OSError:
        return host


def same_host(a: str | None, b: str | None) -> bool:
    """True when ``a`` and ``b`` name one host (as names or addresses, JStorm's ``NetWorkUtils.equals``)."""
    if a is None or b is None:
        return False
    return a == b or _address(a) == _address(b)


def size_mb(value: str | None) -> float | None:
    """Spark's size strings (``512m``, ``2g``; bare numbers are MB) in MB."""
    if value is None:
        return None
    m = _SIZE.match(str(value))
    if not m:
        return None
    scale = {"": 1.0, "k": 1 / 1024, "m": 1.0, "g": 1024.0, "t": 1024.0 * 1024}[m.group(2).lower()]
    return float(m.group(1)) * scale


def executors(sc: SparkContext, expected_cores: int, wait_secs: float) -> list[tuple[str, int]]:
    """(host, cores) of each executor of the application; ``local`` mode: this host with N cores.

    Executors register a few seconds after the SparkContext starts: this waits up to
    ``wait_secs`` for ``expected_cores`` cores to be there.
    """
    slots = local_slots(str(sc.master))
    if slots is not None:
        return [(worker_host(), slots)]
    deadline = time.monotonic() + wait_secs
    while True:
        found = []
        for e in _iterate(sc._jsc.sc().statusStore().executorList(True)):
            if e.id() != "driver" and e.isActive() and not _excluded(e):
                found.append((e.hostPort().rsplit(":", 1)[0], int(e.totalCores())))
        if sum(c for _, c in found) >= expected_cores or time.monotonic() >= deadline:
            return sorted(found)
        time.sleep(0.25)


def _excluded(executor: Any) -> bool:
    """Whether Spark excluded the executor (``isExcluded``; ``isBlacklisted`` before Spark 3.1)."""
    for name in ("isExcluded", "isBlacklisted"):
        check = getattr(executor, name, None)
        if check is not None:
            try:
                return bool(check())
            except Exception:  # noqa: BLE001 - py4j: a method this Spark lacks
                continue
    return False


def _iterate(seq: Any) -> list[Any]:
    it = seq.iterator()
    out = []
    while it.hasNext():
        out.append(it.next())
    return out


def _task_cpus(sc: SparkContext) -> int:
    return int(sc.getConf().get("spark.task.cpus", "1") or 1)


def spark_offers(sc: SparkContext, conf: dict, expected_slots: int, wait_secs: float,
                 taken: Sequence[Assignment] = ()) -> list[HostOffer]:
    """The application's hosts as offers, less what ``taken`` (other topologies) holds.

    Waits up to ``wait_secs`` for executors with ``expected_slots`` task slots to register.
    """
    task_cpus = _task_cpus(sc)
    memory = size_mb(sc.getConf().get("spark.executor.pyspark.memory"))
    found = executors(sc, expected_slots * task_cpus, wait_secs)
    offers = offers_from_executors(found, conf, task_cpus=task_cpus,
                                   memory_mb_per_executor=memory, taken=taken)
    if local_slots(str(sc.master)) is not None:
        # local[N]: one machine whose Python workers reserve no cores; as on LocalCluster,
        # only the task slots (ports) bound it, so topologies that fit side by side run
        offers = [replace(o, cpu=None) for o in offers]  # None: no CPU bound
    return offers


def schedule_on_spark(sc: SparkContext, name: str, topology: StormTopology, conf: dict, plan: TaskPlan,
                      *, expected_slots: int, wait_secs: float, taken: Sequence[Assignment] = (),
                      previous: Sequence[OldWorker] = (), rebalance: bool = False,
                      traffic: Mapping[str, float] | None = None,
                      others: Sequence[OtherTopology] = ()) -> tuple[TaskPlan, Assignment]:
    """Schedule ``plan`` onto the application's executors; raises ``SchedulingError`` when it cannot.

    ``others``: the other topologies on the same Spark cluster (their hosts and isolated hosts).
    """
    offers = spark_offers(sc, conf, expected_slots, wait_secs, taken)
    others = [replace(o, hosts=frozenset(offer_host(h, offers) for h in o.hosts)) for o in others]
    try:
        placed, assignment = schedule_plan(name, plan, topology, conf, offers, previous=previous,
                                           rebalance=rebalance, traffic=traffic, others=others)
    except SchedulingError as e:
        slots = sum(n for _, n in executors(sc, 0, 0.0)) // _task_cpus(sc)
        if slots < expected_slots:  # say so: the refusal may only mean executors are still starting
            raise SchedulingError(f"{e} (executors with {slots} of the cluster's {expected_slots} task "
                                  f"slots had registered after {wait_secs:g} s, {EXECUTOR_WAIT})") from None
        raise
    if conf.get(RESOURCE_PROFILES):
        found = executors(sc, 0, 0.0)
        check_cores(name, placed, worker_cpus(sc, placed, conf), found, _cores_taken(taken))
    for note in assignment.notes:
        log.warning("topology %r: %s", name, note)
    log.info("topology %r placed: %s", name,
             "; ".join(f"worker {w.index} on {w.host} ({len(w.tasks)} tasks)" for w in assignment.workers))
    return placed, assignment


def offer_host(host: str, offers: Sequence[HostOffer]) -> str:
    """``host`` as the offers name it (a worker may report an address where Spark names a host)."""
    return next((o.host for o in offers if same_host(o.host, host)), host)


def other_topologies(store: Store, blobs: BlobStore, name: str, spark_master: str) -> list[OtherTopology]:
    """The other topologies Nimbus runs on ``spark_master``, from the store.

    Each with the hosts of its stored assignment (``assignments/<name>``) and the hosts its
    configuration isolates (``squall.scheduler.isolation``, from its version's blobs).
    """
    out = []
    try:
        records = store.children(store_keys.TOPOLOGIES)
        assigned = {n: store.get(store_keys.assignment_key(n)) for n in records if n != name}
    except StoreError as e:
        log.warning("topology %r: the other topologies cannot be read from the store (%s); "
                    "scheduling without them", name, e)
        return []
    for other, rec in sorted(records.items()):
        if other == name or not isinstance(rec, dict) or rec.get("spark_master") != spark_master:
            continue
        workers = (assigned.get(other) or {}).get("workers")
        hosts = frozenset(str(w["host"]) for w in workers if isinstance(w, dict) and w.get("host")) \
            if isinstance(workers, list) else frozenset()
        try:
            isolation = SK.isolation(blobs.version(rec["id"], rec["version"]).conf())
        except (OSError, KeyError, ValueError, InvalidTopologyError) as e:
            log.warning("topology %r: the configuration of topology %r cannot be read (%s); its "
                        "isolated hosts are not known", name, other, e)
            isolation = {}
        out.append(OtherTopology(other, hosts, isolation, len(workers) if isinstance(workers, list) else 0))
    return out


def whole_cluster_slots(sc: SparkContext, conf: dict) -> int | None:
    """Worker slots of the whole Spark cluster the application runs on, when squall can tell.

    ``local[N]``: N (the topologies Nimbus runs on one ``local[N]`` master share this
    machine); a standalone master: its alive workers' cores (not this application's
    ``spark.cores.max``); YARN, Kubernetes: None (their size is not asked).
    """
    master = str(sc.master)
    if local_slots(master) is None and master_endpoint(master) is None:
        return None
    return cluster_slots(sc, master, float(setting(conf, EXECUTOR_WAIT)), setting(conf, MASTER_UI_URL),
                         capped=False)


def check_reserved(name: str, master: str, asked: int, slots: int | None, others: Sequence[OtherTopology],
                   reserved: int) -> None:
    """Refuse ``asked`` workers that leave fewer than ``reserved`` of the cluster's ``slots`` free.

    The other topologies' workers on the cluster count (``squall.scheduler.reserved.workers``
    across topologies); ``slots`` None: the cluster's size is not known, nothing is checked.
    """
    held = {o.name: o.workers for o in others if o.workers and o.name != name}
    if not reserved or slots is None or asked + sum(held.values()) + reserved <= slots:
        return
    who = ", ".join(f"{n}: {k}" for n, k in sorted(held.items()))
    taken = f", {sum(held.values())} held by other topologies ({who})" if held else ""
    raise SchedulingError(
        f"topology {name!r} asks for {asked} workers (topology.workers); the Spark cluster ({master}) has "
        f"{slots} worker slots{taken}, and {reserved} must stay free ({SK.RESERVED_WORKERS})")


def _cores_taken(taken: Sequence[Assignment]) -> dict[str, int]:
    """Cores other topologies' workers hold per host, counted one each.

    A topology of the same application with resource profiles holds more: Spark then
    starts the later one elsewhere, and the placement check reports it.
    """
    out: dict[str, int] = {}
    for a in taken:
        for w in a.workers:
            out[w.host] = out.get(w.host, 0) + 1
    return out


def pins(sc: SparkContext, plan: TaskPlan) -> list[str | None]:
    """The host each worker's job prefers (none in ``local`` mode, or for an unscheduled plan)."""
    if sc is None or local_slots(str(sc.master)) is not None or not plan.worker_hosts:
        return [None] * plan.num_workers  # no SparkContext: a master driven by hand in tests
    return list(plan.worker_hosts)


def worker_cpus(sc: SparkContext, plan: TaskPlan, conf: dict) -> list[int | None]:
    """The cores each worker's Spark task asks (None: the application's ``spark.task.cpus``).

    Only with ``squall.spark.worker.resource.profiles`` and outside ``local`` mode (where
    Spark has no stage-level scheduling): the worker's CPU slots, in whole cores.
    """
    local = sc is None or local_slots(str(sc.master)) is not None
    if not conf.get(RESOURCE_PROFILES) or local or not plan.worker_resources:
        return [None] * plan.num_workers
    task_cpus = _task_cpus(sc)
    return [max(task_cpus, math.ceil(r["cpu_percent"] / 100 - 1e-9)) for r in plan.worker_resources]


def check_cores(name: str, plan: TaskPlan, cpus: Sequence[int | None], found: Sequence[tuple[str, int]],
                taken: Mapping[str, int] | None = None) -> None:
    """Refuse when a host's cores cannot hold the cores its workers' tasks ask (resource profiles on)."""
    if not any(cpus):
        return
    cores: dict[str, int] = {}
    for host, n in found:
        cores[host] = cores.get(host, 0) + n
    asked: dict[str, list[tuple[int, int]]] = {}
    for index, (where, ask) in enumerate(zip(plan.worker_hosts, cpus, strict=True)):
        asked.setdefault(str(where), []).append((index, ask or 1))
    for host, workers in sorted(asked.items()):
        total = sum(n for _, n in workers) + (taken or {}).get(host, 0)
        if total > cores.get(host, 0):
            each = ", ".join(f"worker {i}: {n}" for i, n in workers)
            raise SchedulingError(
                f"topology {name!r}: host {host} has {cores.get(host, 0)} cores; its workers' tasks ask "
                f"{total} ({each}) with {RESOURCE_PROFILES}: lower the components' set_cpu_load or add cores")


def worker_rdd(sc: SparkContext, index: int, host: str | None, cpus: int | None = None) -> RDD:
    """A one-partition RDD holding ``index``, preferring ``host`` when given, its task taking ``cpus``."""
    rdd = _pinned(sc, index, host)
    if cpus is None:
        return rdd
    from pyspark.resource import ResourceProfileBuilder, TaskResourceRequests

    return rdd.withResources(ResourceProfileBuilder().require(TaskResourceRequests().cpus(cpus)).build)


def _pinned(sc: SparkContext, index: int, host: str | None) -> RDD:
    if host is None:
        return sc.parallelize([index], 1)
    from pyspark import RDD
    from pyspark.serializers import CPickleSerializer

    jvm = sc._jvm
    assert jvm is not None
    hosts = jvm.PythonUtils.toSeq(jvm.java.util.ArrayList([host]))
    item = jvm.scala.Tuple2(bytearray(pickle.dumps(index)), hosts)
    seq = jvm.PythonUtils.toSeq(jvm.java.util.ArrayList([item]))
    tag = sc.emptyRDD()._jrdd.classTag()  # any ClassTag[AnyRef]: the items are pickled bytes
    jrdd = sc._jsc.sc().makeRDD(seq, tag).toJavaRDD()
    return RDD(jrdd, sc, CPickleSerializer())


def placement_record(plan: TaskPlan, workers: Sequence[dict]) -> list[dict]:
    """Where each worker runs and what it holds, as JSON for the store (``workers``: info's entries)."""
    held = _held(plan)  # copied: a dict copy is a fraction of building it from the plan
    return [{"host": w.get("host") or w.get("assigned_host"), "tasks": dict(held[i])}
            for i, w in enumerate(workers)]


_HELD: dict[int, tuple[TaskPlan, list[dict[str, str]]]] = {}  # id(plan) -> (plan, _held)


def _held(plan: TaskPlan) -> list[dict[str, str]]:
    """Each worker's tasks (id as text -> component), made once per plan (shared: copy to change).

    The store heartbeat writes them every second: at 1,000 workers, 10,000 entries each time.
    """
    cached = _HELD.get(id(plan))
    if cached is None or cached[0] is not plan:
        cached = (plan, [{str(t): plan.task_component[t] for t in tasks if plan.task_component[t] != SYSTEM}
                         for tasks in plan.tasks_by_worker()])
        if len(_HELD) >= 8:  # a few plans live at once (a live rescale's old and new)
            _HELD.clear()
        _HELD[id(plan)] = cached
    return cached[1]


def old_from_record(record: Any) -> tuple[OldWorker, ...]:
    """``placement_record``'s JSON back as the previous assignment (nothing if it is not one)."""
    if not isinstance(record, list):
        return ()
    try:
        return tuple(OldWorker(i, w.get("host"), {int(t): str(c) for t, c in w["tasks"].items()})
                     for i, w in enumerate(record))
    except (AttributeError, KeyError, TypeError, ValueError):
        log.warning("the previous placement in the store is unreadable; scheduling afresh")
        return ()


class PlacementCheck:
    """Per worker: relaunches for starting on the wrong host, and what was accepted (pure)."""

    def __init__(self, hosts: Sequence[str | None], tries: int = PLACEMENT_TRIES) -> None:
        self.hosts = list(hosts)
        self.tries = tries
        self.relaunches = [0] * len(self.hosts)
        self.accepted: dict[int, str] = {}  # worker -> the host it runs on instead

    def verdict(self, index: int, host: str, live_hosts: Sequence[str]) -> str:
        """``ok``, ``relaunch`` (try again for the assigned host) or ``accept`` (run where it is)."""
        wanted = self.hosts[index] if index < len(self.hosts) else None
        if wanted is None or same_host(wanted, host):
            self.accepted.pop(index, None)
            return "ok"
        if self.relaunches[index] < self.tries and any(same_host(wanted, h) for h in live_hosts):
            self.relaunches[index] += 1
            return "relaunch"
        self.accepted[index] = host
        return "accept"

    def notes(self) -> list[str]:
        """One line per worker running away from its assigned host."""
        return [f"worker {i} runs on {h}, not its assigned host {self.hosts[i]} (Spark started it there "
                f"after {self.relaunches[i]} relaunches, or the host is gone)"
                for i, h in sorted(self.accepted.items())]
