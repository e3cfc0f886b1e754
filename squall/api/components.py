"""Spouts and bolts: the classes users subclass.

Threading contract (as Storm's ``ISpout``/``IBolt``): every method of one task is called
from one thread, never concurrently. ``close``/``cleanup`` are called on a graceful stop
only; a process killed with SIGKILL calls neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from squall.api.fields import Fields
from squall.api.grouping import CustomStreamGrouping as CustomStreamGrouping  # re-exported
from squall.api.streams import GlobalStreamId as GlobalStreamId  # re-exported
from squall.api.streams import StreamDef
from squall.api.tuple import DEFAULT_STREAM, Tuple

if TYPE_CHECKING:
    from squall.api.context import TopologyContext


class OutputFieldsDeclarer:
    """Collects the streams a component declares in ``declare_output_fields``."""

    def __init__(self) -> None:
        self.streams: dict[str, StreamDef] = {}

    def declare(self, fields: Fields, stream: str = DEFAULT_STREAM, direct: bool = False) -> None:
        """Declare ``stream`` with ``fields``; ``direct=True`` for emit_direct only."""
        if not isinstance(fields, Fields):
            fields = Fields(fields)  # a name, or an iterable of names
        if stream in self.streams:
            raise ValueError(f"stream {stream!r} is declared twice")
        self.streams[stream] = StreamDef(fields, direct)


class Component:
    """What spouts and bolts share."""

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """Declare the output streams; the default declares none."""

    def get_component_configuration(self) -> dict | None:
        """Configuration for this component only (for example its tick frequency)."""
        return None


class Spout(Component):
    """A source of tuples. ``next_tuple`` is called in a loop and should return quickly."""

    def open(self, conf: dict, context: TopologyContext, collector: Any) -> None:
        """Called once per task in its worker, before any other call."""

    def close(self) -> None:
        """Called on a graceful stop."""

    def activate(self) -> None:
        """The topology became active: ``next_tuple`` calls will follow."""

    def deactivate(self) -> None:
        """The topology became inactive: no ``next_tuple`` until ``activate``."""

    def next_tuple(self) -> None:
        """Emit zero or more tuples and return."""

    def ack(self, msg_id: Any) -> None:
        """The tuple tree rooted at ``msg_id`` completed."""

    def fail(self, msg_id: Any) -> None:
        """The tree failed or timed out; replaying it is the spout's decision."""


class SeekableSpout(Spout):
    """A spout whose place in its source can be read and set: what exactly-once needs.

    With ``topology.guarantee: exactly_once`` squall stores ``position()`` in each
    checkpoint, after the records emitted before it, and after any failure calls
    ``seek`` with the position of the last committed checkpoint: the spout then emits
    again from the first record after that position. Both are called from the task's
    thread, between ``next_tuple`` calls, never concurrently with them.

    A spout whose task count may change under exactly-once defines
    ``merge_positions(positions, index, tasks)`` (a static method is fine): ``positions``
    are the old tasks' committed positions, in task index order (None where a task never
    committed); it returns the position of new task ``index`` of ``tasks``, which is then
    sought. Without it, a rebalance that changes the spout's task count is refused.
    """

    def position(self) -> Any:
        """Where the next record comes from; a value msgpack can encode (dicts, lists, ints, str)."""
        raise NotImplementedError(f"{type(self).__name__} must implement position()")

    def seek(self, position: Any) -> None:
        """Go back to ``position`` (one ``position()`` returned): forget what was emitted after it."""
        raise NotImplementedError(f"{type(self).__name__} must implement seek(position)")

    def committed(self, position: Any) -> None:
        """A (re)started task's last committed ``position``: everything before it is done.

        Called once per task start, at its first recovery, before ``seek``, when a
        checkpoint committed a position for it. The task that emitted those records may
        have died before its COMMIT, so ``ack`` never came for them: commit them at the
        source here (offsets, progress). The default does nothing.
        """


class Bolt(Component):
    """Processes tuples; ``execute`` must ack or fail every input tuple.

    Opt-in, beyond Storm: a bolt that defines ``execute_batch(self, tuples)`` gets its
    queued input as a list (up to 256 tuples a call) instead of one ``execute`` per tuple;
    it still acks or fails each tuple, and the tuples it left open fail if the call raises.
    """

    def prepare(self, conf: dict, context: TopologyContext, collector: Any) -> None:
        """Called once per task in its worker, before any tuple."""

    def execute(self, tup: Tuple) -> None:
        """Process one tuple."""
        raise NotImplementedError(f"{type(self).__name__} must implement execute(tup)")

    def cleanup(self) -> None:
        """Called on a graceful stop."""


class StatefulBolt(Bolt):
    """A bolt whose state is saved at checkpoints and restored after failures.

    Calls come in this order: ``prepare``, ``init_state`` (with the state of the last
    committed checkpoint), then ``execute``; tuples that arrive before ``init_state`` are
    buffered. Acks of input tuples are held until the checkpoint that covers them commits,
    so after any failure the state is that of the last commit and replay does the rest
    (at-least-once). Keep ``topology.max.spout.pending`` above what the spouts emit in one
    checkpoint interval, or the spouts wait for each commit.
    """

    def init_state(self, state: Any) -> None:
        """Receive the state (a ``KeyValueState`` by default); called once, before execute."""

    def pre_prepare(self, txid: int) -> None:
        """Called before the state stages transaction ``txid``."""

    def pre_commit(self, txid: int) -> None:
        """Called before the state commits transaction ``txid``."""

    def pre_rollback(self) -> None:
        """Called before the state rolls back to its last commit."""


class BasicBolt(Component):
    """A bolt whose emits are anchored to the input and whose input is acked after execute.

    Raise ``FailedException`` from ``execute`` to fail the input instead.
    """

    def prepare(self, conf: dict, context: TopologyContext) -> None:
        """Called once per task in its worker, before any tuple."""

    def execute(self, tup: Tuple, collector: Any) -> None:
        """Process one tuple; emit through ``collector``."""
        raise NotImplementedError(f"{type(self).__name__} must implement execute(tup, collector)")

    def cleanup(self) -> None:
        """Called on a graceful stop."""
