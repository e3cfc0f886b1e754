"""Topology configuration: a dict with Storm's key names and typed helpers."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

TOPOLOGY_WORKERS = "topology.workers"
TOPOLOGY_ACKER_EXECUTORS = "topology.acker.executors"
TOPOLOGY_MESSAGE_TIMEOUT_SECS = "topology.message.timeout.secs"
TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS = "topology.enable.message.timeouts"
TOPOLOGY_MAX_SPOUT_PENDING = "topology.max.spout.pending"
TOPOLOGY_TICK_TUPLE_FREQ_SECS = "topology.tick.tuple.freq.secs"
TOPOLOGY_DEBUG = "topology.debug"
TOPOLOGY_STATE_CHECKPOINT_INTERVAL = "topology.state.checkpoint.interval.ms"
TOPOLOGY_STATE_PROVIDER = "topology.state.provider"
TOPOLOGY_STATE_PROVIDER_CONFIG = "topology.state.provider.config"
TOPOLOGY_EXECUTOR_RECEIVE_BUFFER_SIZE = "topology.executor.receive.buffer.size"
TOPOLOGY_EXECUTOR_SEND_BUFFER_SIZE = "topology.executor.send.buffer.size"
TOPOLOGY_STATS_SAMPLE_RATE = "topology.stats.sample.rate"
TOPOLOGY_BACKPRESSURE_HIGH = "topology.backpressure.water.mark.high"
TOPOLOGY_BACKPRESSURE_LOW = "topology.backpressure.water.mark.low"
SQUALL_TRANSFER_BATCH_SIZE = "squall.transfer.batch.size"
SQUALL_SPARK_MASTER = "squall.spark.master"
SQUALL_SPOUT_MAX_RETRIES = "squall.spout.max.retries"


@dataclass(frozen=True)
class Setting:
    """One configuration key: its default and what it means."""

    key: str
    default: Any
    doc: str


SETTINGS: tuple[Setting, ...] = (
    Setting(TOPOLOGY_WORKERS, 1, "worker processes (LocalCluster: worker threads) for the topology"),
    Setting(TOPOLOGY_ACKER_EXECUTORS, None, "acker tasks; None means one per worker, 0 disables acking"),
    Setting(TOPOLOGY_MESSAGE_TIMEOUT_SECS, 30, "seconds before an un-acked spout tuple is failed"),
    Setting(TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS, True, "False disables the message timeout"),
    Setting(TOPOLOGY_MAX_SPOUT_PENDING, None, "tuples in flight per spout task; None is unbounded"),
    Setting(TOPOLOGY_TICK_TUPLE_FREQ_SECS, None, "seconds between tick tuples to every bolt"),
    Setting(TOPOLOGY_DEBUG, False, "log every emitted tuple"),
    Setting(TOPOLOGY_STATE_CHECKPOINT_INTERVAL, 1000, "milliseconds between state checkpoints"),
    Setting(TOPOLOGY_STATE_PROVIDER, "squall.state.memory.InMemoryStateProvider", "state provider"),
    Setting(TOPOLOGY_STATE_PROVIDER_CONFIG, {}, "the state provider's configuration"),
    Setting(TOPOLOGY_EXECUTOR_RECEIVE_BUFFER_SIZE, 32768, "capacity of each task's receive queue"),
    Setting(TOPOLOGY_EXECUTOR_SEND_BUFFER_SIZE, 32768, "tuples buffered per worker for remote peers"),
    Setting(TOPOLOGY_STATS_SAMPLE_RATE, 0.05, "fraction of executes timed for latency metrics"),
    Setting(TOPOLOGY_BACKPRESSURE_HIGH, 0.8, "queue fill that stops the spouts"),
    Setting(TOPOLOGY_BACKPRESSURE_LOW, 0.2, "queue fill that lets the spouts run again"),
    Setting(SQUALL_TRANSFER_BATCH_SIZE, 512, "tuples per batch sent to another worker"),
    Setting("squall.metrics.window.secs", 10, "window over which capacity is computed"),
    Setting("topology.spout.wait.progressive.level1.count", 0,
            "empty next_tuple calls retried in the next round before the spout waits"),
    Setting("topology.spout.wait.progressive.level2.count", 0,
            "further empty calls after which the spout waits 0.1 ms each"),
    Setting("topology.spout.wait.progressive.level3.sleep.millis", 1,
            "the wait after every further empty next_tuple call (ms)"),
    Setting("squall.spout.round.budget.ms", 5,
            "time a worker spends calling its spouts per round, so ticks, timeouts and "
            "commands stay on time however slow a spout is"),
    Setting("squall.max.tuple.bytes", 16 * 1024 * 1024,
            "largest tuple (serialized) that may cross workers; a larger one fails at emit"),
    Setting("squall.task.stuck.secs", 30,
            "a task inside one call of its code this long is reported as stuck, with its "
            "stack (0 turns the watchdog off)"),
    Setting("squall.backpressure.cycle.secs", 30,
            "a worker throttled this long while the graph has a cycle is reported"),
    Setting(SQUALL_SPOUT_MAX_RETRIES, None,
            "failures of one spout msg id before it is given up (error reported, spout's ack "
            "called); None: the spout's fail decides forever"),
)

DEFAULTS: dict[str, Any] = {s.key: s.default for s in SETTINGS}


class Config(dict):
    """Topology configuration: Storm's key names, with typed setters.

    >>> conf = Config()
    >>> conf.set_num_workers(2)
    >>> conf["topology.workers"]
    2
    """

    def set_num_workers(self, n: int) -> None:
        """Set ``topology.workers``."""
        self[TOPOLOGY_WORKERS] = n

    def set_num_ackers(self, n: int) -> None:
        """Set ``topology.acker.executors``; 0 turns acking off."""
        self[TOPOLOGY_ACKER_EXECUTORS] = n

    def set_message_timeout_secs(self, secs: float) -> None:
        """Set ``topology.message.timeout.secs``."""
        self[TOPOLOGY_MESSAGE_TIMEOUT_SECS] = secs

    def set_max_spout_pending(self, n: int | None) -> None:
        """Set ``topology.max.spout.pending`` (per spout task)."""
        self[TOPOLOGY_MAX_SPOUT_PENDING] = n

    def set_tick_tuple_freq_secs(self, secs: float | None) -> None:
        """Set ``topology.tick.tuple.freq.secs``."""
        self[TOPOLOGY_TICK_TUPLE_FREQ_SECS] = secs

    def set_debug(self, debug: bool) -> None:
        """Set ``topology.debug``."""
        self[TOPOLOGY_DEBUG] = debug


def effective_conf(*layers: dict | None) -> dict[str, Any]:
    """Defaults overlaid by each layer in turn (later layers win)."""
    merged: dict[str, Any] = copy.deepcopy(DEFAULTS)  # no caller may mutate the defaults
    for layer in layers:
        if layer:
            merged.update(layer)
    return merged
