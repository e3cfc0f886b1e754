"""The checkpoint spout, and the wiring that adds it to a topology with stateful bolts."""

from __future__ import annotations

import logging
import pickle
from dataclasses import replace
from typing import Any

import cloudpickle

from squall.api.components import Spout, StreamDef
from squall.api.context import TopologyContext
from squall.api.fields import Fields
from squall.api.topology import ComponentSpec, Grouping, Input, StormTopology
from squall.runtime import clock as runtime_clock
from squall.runtime.checkpoint import (
    CHECKPOINT_SPOUT,
    CHECKPOINT_STREAM,
    Action,
    CheckpointCoordinator,
    Phase,
    TxState,
)
from squall.runtime.checkpoint_metrics import CheckpointFigures

log = logging.getLogger("squall.checkpoint")
CHECKPOINT_FIELDS = Fields("txid", "action")
RECORD_KEY = "txstate"
# the txid the record started from (never committed): a task state missing while the record
# has not moved past it is a topology that never committed, not a lost state
ORIGIN_KEY = "origin"
# the guarantee the record was last saved under: an exactly-once spout task that finds
# another (a name switched from at-least-once) has no positions to trust (exactly_once_tasks)
GUARANTEE_KEY = "guarantee"
# <topology>/$halt: why a poison record stopped the topology (exactly_once_poison)
HALT_NAMESPACE = "$halt"
HALT_KEY = "reason"


class CheckpointSpout(Spout):
    """Emits checkpoint tuples on ``$checkpoint`` and keeps the transaction record durable.

    The record lives in the topology's state provider under ``<topology>/$checkpointspout``,
    so it survives restarts and redeploys of a topology of the same name.
    """

    def open(self, conf: dict, context: TopologyContext, collector: Any) -> None:
        """Load the last saved record and start in recovery."""
        from squall.state import load_provider  # the state layer loads only when used

        self._collector = collector
        self._interval = float(conf.get("topology.state.checkpoint.interval.ms", 1000)) / 1000.0
        self._guarantee = str(conf.get("topology.guarantee") or "at_least_once")
        self._state = load_provider(conf).new_state(f"{context.topology_name}/{CHECKPOINT_SPOUT}",
                                                    conf, context)
        saved = self._state.get(RECORD_KEY)  # type: ignore[attr-defined]
        # With no record (a first run, or an in-memory store that died with its process),
        # start from the clock in ms: above any txid an earlier run of this name reached at
        # one checkpoint per millisecond or slower, so surviving bolts never see txids go back.
        first = TxState(runtime_clock.time_ms(), Phase.COMMITTED)
        self._durable = TxState(saved[0], Phase(saved[1])) if saved else first
        self._origin = None if saved else first.txid  # saved with the first record
        self._coordinator = CheckpointCoordinator(self._durable, self._interval)
        self._figures = CheckpointFigures(context, lambda: self._durable)
        self._conf, self._context = conf, context
        self._halted: str | None = None  # a poison record stopped the topology (exactly_once_poison)
        if self._guarantee == "exactly_once":
            reason = halted(conf, context, clear=True)  # a new start: the user's decision
            if reason is not None:
                log.warning("checkpoint spout of %r clears the halt mark: %s", context.topology_name, reason)
        log.info("checkpoint spout of %r recovers from %s", context.topology_name, self._durable)

    def next_tuple(self) -> None:
        """Emit the next checkpoint tuple when one is due."""
        if self._halted is not None:
            return
        now = runtime_clock.monotonic()
        emit = self._coordinator.poll(now)
        if emit is None:
            return
        if emit.save is not None and not self._save(emit.save):
            self._coordinator.failed(emit.txid, emit.action, now)
            return
        self._collector.emit([emit.txid, emit.action.value], stream=CHECKPOINT_STREAM,
                             msg_id=(emit.txid, emit.action.value))
        self._figures.emitted(emit.txid, emit.action.value)

    def ack(self, msg_id: Any) -> None:
        """Every bolt did its part: advance and save the record."""
        txid, action = msg_id
        self._figures.acked(txid, action)
        recovering = self._coordinator.recovering
        record = self._coordinator.acked(txid, Action(action))
        if recovering and not self._coordinator.recovering:
            log.info("checkpoint recovery done at transaction %d", txid)
        if record is not None and not self._save(record):
            # the advance is not durable: go back to what is, and recover from there
            self._coordinator.start_over(self._durable, runtime_clock.monotonic())

    def fail(self, msg_id: Any) -> None:
        """A bolt failed its part, or it timed out: recover."""
        txid, action = msg_id
        log.warning("checkpoint %s of transaction %d failed; recovering", action, txid)
        self._figures.failed()
        self._coordinator.failed(txid, Action(action), runtime_clock.monotonic())
        if self._guarantee == "exactly_once" and self._halted is None:
            try:
                self._halted = halted(self._conf, self._context)
            except Exception as e:  # noqa: BLE001 - the store is down: recover as usual
                self._collector.report_error(e)
            if self._halted is not None:
                log.error("checkpoint spout of %r stops: %s", self._context.topology_name, self._halted)

    def _save(self, record: TxState) -> bool:
        try:
            self._state.put(RECORD_KEY, [record.txid, record.phase.value])  # type: ignore[attr-defined]
            self._state.put(GUARANTEE_KEY, self._guarantee)  # type: ignore[attr-defined]
            if self._origin is not None:
                self._state.put(ORIGIN_KEY, self._origin)  # type: ignore[attr-defined]
            committed = self._state.committed_txid() or 0  # type: ignore[attr-defined]
            self._state.commit(committed + 1)
        except Exception as e:  # noqa: BLE001 - any store failure: report, retry later
            self._collector.report_error(e)
            try:
                self._state.rollback()
            except Exception:  # noqa: BLE001 - the store is down; the rollback can wait
                pass
            return False
        self._durable = record
        self._origin = None
        return True

    def declare_output_fields(self, declarer: Any) -> None:
        """The ``$checkpoint`` stream."""
        declarer.declare(CHECKPOINT_FIELDS, stream=CHECKPOINT_STREAM)


def halted(conf: dict, context: Any, clear: bool = False) -> str | None:
    """Why a poison record stopped the topology (the halt mark), or None; ``clear``: remove it."""
    from squall.state import load_provider

    state: Any = load_provider(conf).new_state(f"{context.topology_name}/{HALT_NAMESPACE}", conf, context)
    reason = state.get(HALT_KEY)
    if clear and reason is not None:
        state.delete(HALT_KEY)
        state.commit((state.committed_txid() or 0) + 1)
    return reason


def ever_committed(record: list | None, origin: int | None) -> bool:
    """Whether the checkpoint spout's saved ``record`` says some task may have committed.

    COMMITTED(t) and COMMITTING(t) have t, PREPARING(t) has t - 1 as the last transaction
    that may have committed; none did if that is the record's ``origin``. A record saved
    without an origin (by an older squall) is taken to have committed.
    """
    if record is None:
        return False
    if origin is None:
        return True
    last = record[0] - 1 if record[1] == Phase.PREPARING.value else record[0]
    return last > origin


def add_checkpointing(topology: StormTopology, exactly_once: bool = False) -> StormTopology:
    """Add ``$checkpointspout`` and the ``$checkpoint`` stream through every bolt.

    Bolts fed by a spout get the checkpoint from ``$checkpointspout``; every other bolt
    gets it from each bolt it reads from. All groupings: each task sees every checkpoint.
    ``exactly_once``: the checkpoint spout feeds the spouts instead, which declare
    ``$checkpoint`` and pass the barrier on behind their records; every bolt then gets it
    from each component it reads from. (Added then even with no stateful bolt.)
    """
    if not (topology.stateful or exactly_once) or CHECKPOINT_SPOUT in topology.components:
        return topology
    components: dict[str, ComponentSpec] = {}
    all_grouping = Grouping("all")
    checkpoint_stream = {CHECKPOINT_STREAM: StreamDef(CHECKPOINT_FIELDS)}
    for cid, spec in topology.components.items():
        if spec.kind == "spout":
            if exactly_once:
                feed = Input(CHECKPOINT_SPOUT, CHECKPOINT_STREAM, all_grouping)
                spec = replace(spec, inputs=(*spec.inputs, feed),
                               streams={**spec.streams, **checkpoint_stream})
            components[cid] = spec
            continue
        sources = []
        for inp in spec.inputs:
            from_spout = topology.components[inp.component].kind == "spout"
            source = CHECKPOINT_SPOUT if from_spout and not exactly_once else inp.component
            if source not in sources:
                sources.append(source)
        inputs = spec.inputs + tuple(Input(s, CHECKPOINT_STREAM, all_grouping) for s in sources)
        components[cid] = replace(spec, inputs=inputs, streams={**spec.streams, **checkpoint_stream})
    components[CHECKPOINT_SPOUT] = ComponentSpec(
        id=CHECKPOINT_SPOUT, kind="spout",
        class_name=f"{CheckpointSpout.__module__}.CheckpointSpout",
        payload=cloudpickle.dumps(CheckpointSpout(), protocol=pickle.HIGHEST_PROTOCOL),
        parallelism=1, num_tasks=1, inputs=(),
        streams=dict(checkpoint_stream),
    )
    return StormTopology(components)
