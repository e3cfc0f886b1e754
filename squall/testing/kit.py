"""Storm's testing kit: simulated time, a spout fed by hand, tracked topologies, test tuples.

``simulated_time()`` makes the runtime's clock stand still until ``LocalCluster.advance_time``
moves it; ``FeederSpout`` emits what a test feeds it; ``tracked_topology(...).wait_idle()``
returns once every emitted tuple was processed and every tuple tree decided; ``test_tuple``
builds a tuple for calling a bolt's ``execute`` without a cluster.
"""

from __future__ import annotations

import itertools
import threading
import uuid
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from squall.api.components import OutputFieldsDeclarer, Spout
from squall.api.context import TopologyContext
from squall.api.fields import Fields
from squall.api.topology import StormTopology
from squall.api.tuple import DEFAULT_STREAM, Tuple
from squall.runtime import clock as runtime_clock
from squall.runtime.clock import SimulatedClock

__all__ = ["FeederSpout", "TrackedTopology", "simulated_time", "test_tuple", "tracked_topology"]


@contextmanager
def simulated_time(start: float = 0.0) -> Iterator[SimulatedClock]:
    """Run the block on simulated time (Storm's ``Time.startSimulating``).

    A ``LocalCluster`` created inside the block reads this clock: message timeouts, ticks,
    checkpoint intervals, metrics windows and processing-time windows move only when the
    test calls ``cluster.advance_time(secs)`` (or ``clock.advance(secs)`` on the yielded
    clock). One simulation per process at a time.
    """
    with runtime_clock.simulation(start) as clock:
        yield clock


class _Feed:
    """What a feeder's tasks share with the test that feeds them (one process)."""

    def __init__(self) -> None:
        self.queue: deque[tuple[list, Any]] = deque()
        self.acked: list[Any] = []
        self.failed: list[Any] = []
        self.lock = threading.Lock()


_FEEDS: dict[int, _Feed] = {}
_feed_ids = itertools.count(1)


class FeederSpout(Spout):
    """A spout that emits the tuples a test feeds it (Storm's ``FeederSpout``).

    ``feed(values, msg_id=None)`` queues one tuple, tracked by the ackers under ``msg_id``
    (a fresh UUID string when not given, as Storm's); its outcome lands in ``acked`` or
    ``failed``. The queue is shared through this process, so a feeder works on
    ``LocalCluster`` (not across processes); several tasks of one feeder take from the same queue.
    """

    def __init__(self, fields: Fields, stream: str = DEFAULT_STREAM) -> None:
        self.fields = fields
        self.stream = stream
        self.feed_id = next(_feed_ids)
        _FEEDS[self.feed_id] = _Feed()

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        _FEEDS.setdefault(self.feed_id, _Feed())

    @property
    def _feed(self) -> _Feed:
        return _FEEDS[self.feed_id]

    def feed(self, values: list, msg_id: Any = None) -> None:
        """Queue ``values`` for emission, tracked under ``msg_id``.

        Without ``msg_id`` the tuple gets a fresh one (a UUID string, as Storm's
        ``FeederSpout.feed(tuple)``), so every fed tuple is tracked and acked or failed.
        """
        if len(values) != len(self.fields):
            raise ValueError(f"FeederSpout declares {len(self.fields)} fields "
                             f"{list(self.fields)}, fed {len(values)} values {values!r}")
        self._feed.queue.append((list(values), str(uuid.uuid4()) if msg_id is None else msg_id))

    def feed_no_wait(self, values: list, msg_id: Any = None) -> None:
        """Storm's name for ``feed`` (feeding never blocks here)."""
        self.feed(values, msg_id)

    @property
    def acked(self) -> list[Any]:
        """Message ids whose trees completed, in order."""
        with self._feed.lock:
            return list(self._feed.acked)

    @property
    def failed(self) -> list[Any]:
        """Message ids whose trees failed or timed out, in order."""
        with self._feed.lock:
            return list(self._feed.failed)

    def pending(self) -> int:
        """Tuples fed and not yet emitted."""
        return len(self._feed.queue)

    def open(self, conf: dict, context: TopologyContext, collector: Any) -> None:
        """Keep the collector."""
        self._collector = collector

    def next_tuple(self) -> None:
        """Emit one fed tuple, if any."""
        try:
            values, msg_id = self._feed.queue.popleft()
        except IndexError:
            return
        self._collector.emit(values, stream=self.stream, msg_id=msg_id)

    def ack(self, msg_id: Any) -> None:
        """Record the ack."""
        with self._feed.lock:
            self._feed.acked.append(msg_id)

    def fail(self, msg_id: Any) -> None:
        """Record the failure (no replay: the test decides)."""
        with self._feed.lock:
            self._feed.failed.append(msg_id)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """The fields given to the constructor."""
        declarer.declare(self.fields, stream=self.stream)


class TrackedTopology:
    """A topology submitted by ``tracked_topology``; ``wait_idle`` knows when it is done."""

    def __init__(self, cluster: Any, name: str) -> None:
        self.cluster = cluster
        self.name = name

    def wait_idle(self, timeout: float = 10.0, *, trees: bool = False) -> None:
        """Return once every emitted tuple was processed, acking traffic included (Storm's ``trackedWait``).

        Every tuple tree that can be decided is then decided and its spout told: what is
        still pending waits on a bolt holding its tuples or on its message timeout, as in
        Storm (a bolt that aggregates three tuples before acking keeps the first two trees
        open). Each worker answers on its own loop thread between rounds (tuples queued,
        work done), twice with a round in between, so the answer is exact, not a guess from
        counters and sleeps. ``TimeoutError`` if the topology is still busy after
        ``timeout`` real seconds (a spout that never stops emitting). ``trees=True`` also
        waits until no tree is pending (for trees decided by time: checkpoints that release
        a stateful bolt's acks, message timeouts on real time).
        """
        self.cluster.wait_quiet(timeout, names=[self.name], trees=trees)

    def info(self) -> dict:
        """``get_topology_info`` of the tracked topology."""
        return self.cluster.get_topology_info(self.name)  # type: ignore[no-any-return]


def tracked_topology(cluster: Any, name: str, conf: dict | None, topology: StormTopology,
                     **submit: Any) -> TrackedTopology:
    """Submit ``topology`` as ``name`` on a ``LocalCluster`` and track it (Storm's ``mkTrackedTopology``)."""
    if not hasattr(cluster, "wait_quiet"):
        raise TypeError(f"tracked_topology needs a LocalCluster, got {type(cluster).__name__}")
    cluster.submit_topology(name, conf, topology, **submit)
    return TrackedTopology(cluster, name)


def test_tuple(values: list, fields: Fields | None = None, component: str = "component",
               stream: str = DEFAULT_STREAM, task: int = 1) -> Tuple:
    """A tuple as a bolt's ``execute`` gets it, for unit tests without a cluster (Storm's ``testTuple``).

    Without ``fields`` the fields are ``field1``, ``field2``, ... as in Storm.
    """
    if fields is None:
        fields = Fields(*(f"field{i + 1}" for i in range(len(values))))
    if len(fields) != len(values):
        raise ValueError(f"test_tuple: {len(values)} values {values!r} for fields {list(fields)}")
    return Tuple(list(values), fields, component, stream, task, None)


test_tuple.__test__ = False  # type: ignore[attr-defined]  # pytest: not a test itself

