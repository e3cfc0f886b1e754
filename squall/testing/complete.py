"""``complete_topology``: run a topology on fixed input until every tuple tree is done."""

from __future__ import annotations

import itertools
import pickle
import threading
import time
from collections import defaultdict
from dataclasses import replace
from typing import Any

import cloudpickle

from squall.api.components import Spout
from squall.api.config import effective_conf
from squall.api.context import TopologyContext
from squall.api.errors import InvalidTopologyError
from squall.api.topology import StormTopology
from squall.api.tuple import DEFAULT_STREAM
from squall.local.cluster import LocalCluster

# Runs in progress, by id: the mocked spouts find their run here (same process).
_RUNS: dict[int, _Run] = {}
_ids = itertools.count(1)


class MockedSources:
    """Fixed input per spout: ``{"spout_id": [[v1, ...], [v1, ...]]}``."""

    def __init__(self, sources: dict[str, list[list]] | None = None) -> None:
        self.sources = {k: [list(v) for v in vals] for k, vals in (sources or {}).items()}

    def add_mock_data(self, spout_id: str, *values: list) -> None:
        """Append tuples for ``spout_id``."""
        self.sources.setdefault(spout_id, []).extend(list(v) for v in values)


class _Run:
    def __init__(self) -> None:
        self.emitted: dict[tuple[str, str], list[list]] = defaultdict(list)
        self.acked: dict[str, list[Any]] = defaultdict(list)
        self.failed: dict[str, list[Any]] = defaultdict(list)
        self.lock = threading.Lock()

    def tap(self, component: str, stream: str, values: list, task: int) -> None:
        """One emit of ``task`` (the worker's tap)."""
        self.emitted[(component, stream)].append(values)


class MockedSpout(Spout):
    """Emits a spout's mocked tuples (msg_id = index), split across its tasks; no replay."""

    def __init__(self, run_id: int, component: str, stream: str, tuples: list[list]) -> None:
        self.run_id = run_id
        self.component = component
        self.stream = stream
        self.tuples = tuples

    def open(self, conf: dict, context: TopologyContext, collector: Any) -> None:
        """Pick this task's share of the tuples."""
        index, count = context.get_this_task_index(), len(context.get_this_component_tasks())
        self._mine = [(i, v) for i, v in enumerate(self.tuples) if i % count == index]
        self._next = 0
        self._collector = collector
        self._run = _RUNS[self.run_id]

    def next_tuple(self) -> None:
        """Emit the next mocked tuple, if any."""
        if self._next < len(self._mine):
            i, values = self._mine[self._next]
            self._next += 1
            self._collector.emit(values, stream=self.stream, msg_id=i)

    def ack(self, msg_id: Any) -> None:
        """Record the ack."""
        self._run.acked[self.component].append(msg_id)

    def fail(self, msg_id: Any) -> None:
        """Record the failure (no replay: the run must end)."""
        self._run.failed[self.component].append(msg_id)


class CompleteTopologyResult:
    """What each component emitted, and which mocked tuples were acked or failed."""

    def __init__(self, run: _Run, info: dict) -> None:
        self._run = run
        self.info = info

    def emitted(self, component: str, stream: str = DEFAULT_STREAM) -> list[list]:
        """Value lists ``component`` emitted on ``stream``, in emit order per task."""
        return list(self._run.emitted.get((component, stream), []))

    def acked(self, component: str) -> list[Any]:
        """Msg ids of ``component``'s mocked tuples whose trees completed."""
        return sorted(self._run.acked.get(component, []))

    def failed(self, component: str) -> list[Any]:
        """Msg ids of ``component``'s mocked tuples that failed or timed out."""
        return sorted(self._run.failed.get(component, []))

    @property
    def errors(self) -> list[dict]:
        """Errors the components reported."""
        return list(self.info["errors"])


def complete_topology(
    topology: StormTopology,
    mocked_sources: MockedSources | None = None,
    conf: dict | None = None,
    timeout_secs: float | None = None,
    topology_name: str = "complete-topology",
) -> CompleteTopologyResult:
    """Run ``topology`` in a ``LocalCluster`` until every mocked tuple tree is acked or failed.

    Each spout named in ``mocked_sources`` is replaced by one that keeps its declared
    streams and emits the given tuples (msg_id = the tuple's index) on its default stream
    (or its only stream). Returns once every mocked tuple is acked or failed and the
    workers are idle; raises ``TimeoutError`` after ``timeout_secs`` (default: the message
    timeout plus 10 s) naming what is still pending.
    """
    run_id = next(_ids)
    run = _RUNS[run_id] = _Run()
    try:
        sources = (mocked_sources or MockedSources()).sources
        mocked = _mock(topology, sources, run_id)
        merged = effective_conf(conf)
        limit = timeout_secs or float(merged["topology.message.timeout.secs"]) + 10.0
        with LocalCluster(tap=run.tap) as cluster:
            cluster.submit_topology(topology_name, conf, mocked)
            _wait(cluster, topology_name, run, sources, limit)
            info = cluster.get_topology_info(topology_name)
        return CompleteTopologyResult(run, info)
    finally:
        _RUNS.pop(run_id, None)


def _mock(topology: StormTopology, sources: dict[str, list[list]], run_id: int) -> StormTopology:
    components = dict(topology.components)
    for cid, tuples in sources.items():
        spec = components.get(cid)
        if spec is None or spec.kind != "spout":
            spouts = ", ".join(s.id for s in topology.spouts)
            raise InvalidTopologyError(
                f"mocked source {cid!r} is not a spout of the topology (spouts: {spouts})"
            )
        stream = DEFAULT_STREAM if DEFAULT_STREAM in spec.streams else next(iter(spec.streams), None)
        if stream is None:
            raise InvalidTopologyError(f"mocked spout {cid!r} declares no stream to emit the tuples on")
        arity = len(spec.streams[stream].fields)
        for i, values in enumerate(tuples):
            if len(values) != arity:
                raise InvalidTopologyError(
                    f"mocked tuple {i} of {cid!r} has {len(values)} values; stream {stream!r} "
                    f"declares {arity} fields"
                )
        spout = MockedSpout(run_id, cid, stream, tuples)
        components[cid] = replace(spec, payload=cloudpickle.dumps(spout, protocol=pickle.HIGHEST_PROTOCOL),
                                  class_name=f"{MockedSpout.__module__}.MockedSpout")
    return StormTopology(components)


def _wait(cluster: LocalCluster, name: str, run: _Run, sources: dict[str, list[list]],
          limit: float) -> None:
    deadline = time.monotonic() + limit
    quiet = 0
    while True:
        done = all(len(run.acked[c]) + len(run.failed[c]) >= len(t) for c, t in sources.items())
        if done and all(w.is_idle() for w in cluster.workers(name)):
            quiet += 1
            if quiet >= 3:  # idle on three checks in a row: nothing left in flight
                return
        else:
            quiet = 0
        if time.monotonic() > deadline:
            pending = {c: len(t) - len(run.acked[c]) - len(run.failed[c]) for c, t in sources.items()}
            raise TimeoutError(
                f"complete_topology: tuples still pending after {limit:.0f}s: {pending}"
            )
        time.sleep(0.01)
