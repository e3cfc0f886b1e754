"""Storm's coordinated bolts: a bolt learns when it has seen every tuple of a request.

``CoordinatedBolt`` wraps a bolt of a linear DRPC topology. Each task counts, per request
id (the first field of every tuple), the tuples it emitted to each task downstream, and
when it is done with a request it tells every downstream task, on the direct stream
``drpc-coord``, how many tuples that task should expect. A task is done with a request
once it got the reports of all its upstream tasks and acked as many tuples as they
announced (the first bolt: once it acked its single input; the last bolt: once, in
addition, the id of the request arrived from ``prepare-request``). Then the wrapped bolt's
``finished_id(id)`` is called (``BatchBolt.finish_batch`` through ``BatchBoltExecutor``).
The coordination tuples are acked only then, so the request's tuple tree stays open until
every task finished it; a failed tuple of the request fails the tree, and the DRPC spout
fails the request.
"""

from __future__ import annotations

import logging
import pickle
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol, runtime_checkable

import cloudpickle

from squall.api.components import BasicBolt, Bolt, OutputFieldsDeclarer
from squall.api.context import TopologyContext
from squall.api.errors import FailedException, ReportedFailedException
from squall.api.fields import Fields
from squall.api.tuple import DEFAULT_STREAM, Tuple
from squall.runtime import clock

COORD_STREAM = "drpc-coord"
log = logging.getLogger("squall.drpc")


@runtime_checkable
class FinishedCallback(Protocol):
    """A bolt that wants to know when it has seen every tuple of a request (Storm's)."""

    def finished_id(self, id: Any) -> None:  # noqa: A002 - Storm's name
        """Every tuple of request ``id`` reached this task; raise ``FailedException`` to fail it."""


@dataclass(frozen=True)
class SourceArgs:
    """How many tasks of an upstream component report per request: one, or all of them."""

    single_count: bool

    @staticmethod
    def single() -> SourceArgs:
        """Only one task of the source takes part in each request."""
        return SourceArgs(True)

    @staticmethod
    def all() -> SourceArgs:
        """Every task of the source reports for each request."""
        return SourceArgs(False)


@dataclass(frozen=True)
class IdStreamSpec:
    """The stream that announces each request id to the last bolt."""

    component: str
    stream: str


class _Type(Enum):
    REGULAR = 0
    ID = 1
    COORD = 2


@dataclass
class _Tracking:
    created: float
    report_count: int = 0
    expected_tuple_count: int = 0
    received_tuples: int = 0
    failed: bool = False
    task_emitted: dict[int, int] = field(default_factory=dict)
    received_id: bool = False
    finished: bool = False
    ack_tuples: list[Tuple] = field(default_factory=list)


class BatchBolt:
    """Storm's batch bolt: one instance per request, told when the request's tuples are all in.

    ``prepare(conf, context, collector, id)`` runs once per request id on a fresh copy of
    the bolt as built; ``execute`` gets each tuple of that request; ``finish_batch`` is
    called once every tuple of the request reached this task (on every task of the bolt,
    including tasks that got none). Emit through ``collector.emit(values, stream=...)``;
    the first value of each emit is the request id. Raise ``FailedException`` from
    ``execute`` to fail the tuple, or from ``finish_batch`` to fail the request.
    """

    def prepare(self, conf: dict, context: TopologyContext, collector: BatchOutputCollector,
                id: Any) -> None:  # noqa: A002 - Storm's name
        """Called once per request id, before its first tuple."""

    def execute(self, tup: Tuple) -> None:
        """One tuple of the request."""

    def finish_batch(self) -> None:
        """Every tuple of the request has arrived."""

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """Declare the output streams (the first field of each is the request id)."""

    def get_component_configuration(self) -> dict | None:
        """Configuration for this component only."""
        return None


class BatchOutputCollector:
    """What a ``BatchBolt`` emits through (unanchored, as Storm's)."""

    def __init__(self, collector: Any) -> None:
        self._collector = collector

    def emit(self, values: list, stream: str = DEFAULT_STREAM) -> list[int]:
        """Emit ``values`` on ``stream``; returns the target task ids."""
        return self._collector.emit(values, None, stream)

    def emit_direct(self, task: int, values: list, stream: str = DEFAULT_STREAM) -> None:
        """Emit ``values`` to ``task`` on a direct stream."""
        self._collector.emit_direct(task, values, None, stream)

    def report_error(self, error: BaseException) -> None:
        """Report ``error`` as an error of this component."""
        self._collector.report_error(error)


class BatchBoltExecutor(Bolt):
    """Runs a ``BatchBolt``: a fresh copy per request id (Storm's ``BatchBoltExecutor``)."""

    def __init__(self, bolt: BatchBolt) -> None:
        self._bolt_bytes = cloudpickle.dumps(bolt)
        self._template = bolt

    def prepare(self, conf: dict, context: TopologyContext, collector: Any) -> None:
        """Remember what each request's copy is prepared with."""
        self._conf, self._context = conf, context
        self._collector = collector
        self._batch_collector = BatchOutputCollector(collector)
        self._open: dict[Any, BatchBolt] = {}

    def execute(self, tup: Tuple) -> None:
        """Hand ``tup`` to its request's copy; ack it, or fail it on ``FailedException``."""
        bolt = self._batch_bolt(tup.values[0])
        try:
            bolt.execute(tup)
        except FailedException as e:
            if isinstance(e, ReportedFailedException):
                self._collector.report_error(e)
            self._collector.fail(tup)
        else:
            self._collector.ack(tup)

    def finished_id(self, id: Any) -> None:  # noqa: A002
        """The request is complete here: ``finish_batch`` on its copy."""
        bolt = self._batch_bolt(id)
        del self._open[id]
        bolt.finish_batch()

    def timeout_id(self, id: Any) -> None:  # noqa: A002
        """The request timed out here: drop its copy."""
        self._open.pop(id, None)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """The batch bolt's streams."""
        self._template.declare_output_fields(declarer)

    def get_component_configuration(self) -> dict | None:
        """The batch bolt's configuration."""
        return self._template.get_component_configuration()

    def _batch_bolt(self, id: Any) -> BatchBolt:  # noqa: A002
        bolt = self._open.get(id)
        if bolt is None:
            bolt = pickle.loads(self._bolt_bytes)
            bolt.prepare(self._conf, self._context, self._batch_collector, id)
            self._open[id] = bolt
        return bolt


class _BasicCollector:
    """A ``BasicBolt``'s collector inside a coordinated bolt: emits anchored to the input."""

    def __init__(self, collector: Any) -> None:
        self._collector = collector
        self.input: Tuple | None = None

    def emit(self, values: list, stream: str = DEFAULT_STREAM) -> list[int]:
        return self._collector.emit(values, self.input, stream)

    def emit_direct(self, task: int, values: list, stream: str = DEFAULT_STREAM) -> None:
        self._collector.emit_direct(task, values, self.input, stream)

    def report_error(self, error: BaseException) -> None:
        self._collector.report_error(error)


class BasicBoltExecutor(Bolt):
    """Runs a ``BasicBolt`` as a ``Bolt``: anchored emits, ack after execute (Storm's)."""

    def __init__(self, bolt: BasicBolt) -> None:
        self.bolt = bolt

    def prepare(self, conf: dict, context: TopologyContext, collector: Any) -> None:
        """Prepare the basic bolt."""
        self._collector = collector
        self._basic = _BasicCollector(collector)
        self.bolt.prepare(conf, context)

    def execute(self, tup: Tuple) -> None:
        """Execute; ack the input, or fail it on ``FailedException``."""
        self._basic.input = tup
        try:
            self.bolt.execute(tup, self._basic)
        except FailedException as e:
            if isinstance(e, ReportedFailedException):
                self._collector.report_error(e)
            self._collector.fail(tup)
        else:
            self._collector.ack(tup)
        finally:
            self._basic.input = None

    def cleanup(self) -> None:
        """Clean up the basic bolt."""
        self.bolt.cleanup()

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """The basic bolt's streams."""
        self.bolt.declare_output_fields(declarer)

    def get_component_configuration(self) -> dict | None:
        """The basic bolt's configuration."""
        return self.bolt.get_component_configuration()


def as_rich_bolt(bolt: Bolt | BasicBolt | BatchBolt) -> Bolt:
    """``bolt`` as a ``Bolt`` (basic and batch bolts wrapped as Storm wraps them)."""
    if isinstance(bolt, BatchBolt):
        return BatchBoltExecutor(bolt)
    if isinstance(bolt, BasicBolt):
        return BasicBoltExecutor(bolt)
    if isinstance(bolt, Bolt):
        return bolt
    raise TypeError(f"a DRPC bolt must be a Bolt, BasicBolt or BatchBolt, got {type(bolt).__name__}")


class _CoordinatedOutputCollector:
    """The wrapped bolt's collector: counts emits per target task, and acks feed tracking."""

    def __init__(self, owner: CoordinatedBolt, collector: Any) -> None:
        self._owner = owner
        self._collector = collector

    def emit(self, values: list, anchors: Tuple | list[Tuple] | None = None,
             stream: str = DEFAULT_STREAM) -> list[int]:
        tasks = self._collector.emit(values, anchors, stream)
        self._owner._count_emits(values[0], tasks)
        return tasks

    def emit_direct(self, task: int, values: list, anchors: Tuple | list[Tuple] | None = None,
                    stream: str = DEFAULT_STREAM) -> None:
        self._owner._count_emits(values[0], [task])
        self._collector.emit_direct(task, values, anchors, stream)

    def ack(self, tup: Tuple) -> None:
        track = self._owner._tracked.get(tup.values[0])
        if track is not None:
            track.received_tuples += 1
        if self._owner._check_finish(tup, _Type.REGULAR):
            self._collector.fail(tup)
        else:
            self._collector.ack(tup)

    def fail(self, tup: Tuple) -> None:
        track = self._owner._tracked.get(tup.values[0])
        if track is not None:
            track.failed = True
        self._owner._check_finish(tup, _Type.REGULAR)
        self._collector.fail(tup)

    def reset_timeout(self, tup: Tuple) -> None:
        self._collector.reset_timeout(tup)

    def report_error(self, error: BaseException) -> None:
        self._collector.report_error(error)


class CoordinatedBolt(Bolt):
    """Wraps ``delegate`` with Storm's request coordination (see the module's docstring)."""

    def __init__(self, delegate: Bolt, source_args: dict[str, SourceArgs] | None = None,
                 id_spec: IdStreamSpec | None = None) -> None:
        self.delegate = delegate
        self.source_args = dict(source_args or {})
        self.id_spec = id_spec

    def prepare(self, conf: dict, context: TopologyContext, collector: Any) -> None:
        """Prepare the delegate with the counting collector; learn who reports to whom."""
        self._collector = collector
        self._tracked: dict[Any, _Tracking] = {}
        # Storm's TimeCacheMap over the message timeout: a request is forgotten after it
        self._expiry = float(conf.get("topology.message.timeout.secs") or 30)
        self.delegate.prepare(conf, context, _CoordinatedOutputCollector(self, collector))
        targets = context.get_this_targets().get(COORD_STREAM, {})
        self._count_out_tasks = [t for c in sorted(targets) for t in context.get_component_tasks(c)]
        self._num_source_reports = sum(
            1 if args.single_count else len(context.get_component_tasks(component))
            for component, args in self.source_args.items()
        )

    def execute(self, tup: Tuple) -> None:
        """Route ``tup``: a request id, a coordination report, or a tuple for the delegate."""
        if tup.is_tick():  # ticks belong to no request
            self.delegate.execute(tup)
            return
        self._expire()
        rid = tup.values[0]
        kind = self._type_of(tup)
        track = self._tracked.get(rid)
        if track is None:
            track = _Tracking(created=clock.monotonic(), received_id=self.id_spec is None)
            self._tracked[rid] = track
        if kind is _Type.ID:
            track.received_id = True
            self._check_finish(tup, kind)
        elif kind is _Type.COORD:
            track.report_count += 1
            track.expected_tuple_count += int(tup.values[1])
            self._check_finish(tup, kind)
        else:
            coordinated = _CoordinatedOutputCollector(self, self._collector)
            try:
                self.delegate.execute(tup)
            except FailedException:
                coordinated.fail(tup)
            except Exception as e:  # noqa: BLE001 - user code: report, fail the request's tuple
                self._collector.report_error(e)
                coordinated.fail(tup)

    def cleanup(self) -> None:
        """Clean up the delegate."""
        self.delegate.cleanup()

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """The delegate's streams, plus the direct coordination stream."""
        self.delegate.declare_output_fields(declarer)
        declarer.declare(Fields("id", "count"), stream=COORD_STREAM, direct=True)

    def get_component_configuration(self) -> dict | None:
        """The delegate's configuration."""
        return self.delegate.get_component_configuration()

    # ---- coordination ----------------------------------------------------------------

    def _type_of(self, tup: Tuple) -> _Type:
        spec = self.id_spec
        if spec is not None and tup.component == spec.component and tup.stream == spec.stream:
            return _Type.ID
        if self.source_args and tup.stream == COORD_STREAM:
            return _Type.COORD
        return _Type.REGULAR

    def _count_emits(self, rid: Any, tasks: list[int]) -> None:
        track = self._tracked.get(rid)
        if track is not None:
            for task in tasks:
                track.task_emitted[task] = track.task_emitted.get(task, 0) + 1

    def _check_finish(self, tup: Tuple, kind: _Type) -> bool:
        """Finish the request of ``tup`` if it is complete here; True if it failed."""
        rid = tup.values[0]
        track = self._tracked.get(rid)
        collector = self._collector
        if track is None:
            if kind is not _Type.REGULAR:
                collector.fail(tup)
            return False
        delayed = False
        if (self.id_spec is None and kind is _Type.COORD) or (self.id_spec is not None and kind is _Type.ID):
            track.ack_tuples.append(tup)
            delayed = True
        failed = False
        try:
            if track.failed:
                failed = True
                for t in track.ack_tuples:
                    collector.fail(t)
                del self._tracked[rid]
            elif track.received_id and (
                not self.source_args
                or (track.report_count == self._num_source_reports
                    and track.expected_tuple_count == track.received_tuples)
            ):
                self._finish(rid, track, tup)
        except FailedException:
            failed = True
            for t in track.ack_tuples:
                collector.fail(t)
            self._tracked.pop(rid, None)
        if not delayed and kind is not _Type.REGULAR:
            if track.failed or failed:
                collector.fail(tup)
            else:
                collector.ack(tup)
        return failed

    def _finish(self, rid: Any, track: _Tracking, tup: Tuple) -> None:
        finished = getattr(self.delegate, "finished_id", None)
        if finished is not None:
            try:
                finished(rid)
            except FailedException:
                raise
            except Exception as e:  # noqa: BLE001 - user code: report it; the request fails
                self._collector.report_error(e)
                raise FailedException(f"finished_id({rid!r}) raised {type(e).__name__}: {e}") from e
        for task in self._count_out_tasks:
            self._collector.emit_direct(task, [rid, track.task_emitted.get(task, 0)],
                                        anchors=tup, stream=COORD_STREAM)
        for t in track.ack_tuples:
            self._collector.ack(t)
        track.finished = True
        del self._tracked[rid]

    def _expire(self) -> None:
        if not self._tracked:
            return
        cutoff = clock.monotonic() - self._expiry
        timeout_id = getattr(self.delegate, "timeout_id", None)
        while self._tracked:
            rid, track = next(iter(self._tracked.items()))
            if track.created > cutoff:
                break
            del self._tracked[rid]
            track.failed = True
            if timeout_id is not None and not track.finished:
                timeout_id(rid)
