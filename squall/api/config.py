"""Topology configuration: a dict with Storm's key names and typed helpers."""

from __future__ import annotations

import copy
import difflib
import logging
from dataclasses import dataclass
from functools import cache
from typing import Any

from squall.api.errors import InvalidTopologyError

log = logging.getLogger("squall.conf")
# an unknown topology.* key at least this similar (difflib's ratio) to a known one is a typo
CLOSE = 0.9

TOPOLOGY_WORKERS = "topology.workers"
TOPOLOGY_ACKER_EXECUTORS = "topology.acker.executors"
TOPOLOGY_MESSAGE_TIMEOUT_SECS = "topology.message.timeout.secs"
TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS = "topology.enable.message.timeouts"
TOPOLOGY_MAX_SPOUT_PENDING = "topology.max.spout.pending"
TOPOLOGY_TICK_TUPLE_FREQ_SECS = "topology.tick.tuple.freq.secs"
TOPOLOGY_DEBUG = "topology.debug"
TOPOLOGY_TASKS = "topology.tasks"
TOPOLOGY_MAX_TASK_PARALLELISM = "topology.max.task.parallelism"
TOPOLOGY_DISABLE_LOADAWARE_MESSAGING = "topology.disable.loadaware.messaging"
TOPOLOGY_LOCALITYAWARE_HIGHER_BOUND = "topology.localityaware.higher.bound"
TOPOLOGY_LOCALITYAWARE_LOWER_BOUND = "topology.localityaware.lower.bound"
TOPOLOGY_STATE_CHECKPOINT_INTERVAL = "topology.state.checkpoint.interval.ms"
TOPOLOGY_STATE_PROVIDER = "topology.state.provider"
TOPOLOGY_STATE_PROVIDER_CONFIG = "topology.state.provider.config"
TOPOLOGY_KEY_GROUPS = "topology.key.groups"
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
    Setting(TOPOLOGY_TASKS, None, "tasks per component; None: its parallelism (set_num_tasks)"),
    Setting(TOPOLOGY_MAX_TASK_PARALLELISM, None,
            "cap on the tasks (and so the executors) of each component; None: no cap"),
    Setting(TOPOLOGY_DISABLE_LOADAWARE_MESSAGING, False,
            "True: shuffle is always balanced over every target task, never worker-local first "
            "and never chained"),
    Setting(TOPOLOGY_LOCALITYAWARE_HIGHER_BOUND, 0.8,
            "load-aware shuffle: mean queue fill of the local targets above which it spreads "
            "over every target"),
    Setting(TOPOLOGY_LOCALITYAWARE_LOWER_BOUND, 0.2,
            "load-aware shuffle: mean queue fill of the local targets below which it goes "
            "back to them"),
    Setting(TOPOLOGY_STATE_CHECKPOINT_INTERVAL, 1000, "milliseconds between state checkpoints"),
    Setting(TOPOLOGY_STATE_PROVIDER, "squall.state.memory.InMemoryStateProvider", "state provider"),
    Setting(TOPOLOGY_STATE_PROVIDER_CONFIG, {}, "the state provider's configuration"),
    Setting(TOPOLOGY_KEY_GROUPS, 4096,
            "key groups of fields groupings and keyed state, fixed per topology once it has "
            "state; a component's parallelism may grow up to it"),
    Setting(TOPOLOGY_EXECUTOR_RECEIVE_BUFFER_SIZE, 32768, "capacity of each task's receive queue"),
    Setting(TOPOLOGY_EXECUTOR_SEND_BUFFER_SIZE, 32768,
            "the send buffer per peer, in tuples: as frames of squall.transfer.batch.size (at "
            "least 4) it bounds the frames queued for each other worker, in the transport and "
            "in the worker; at the bound the worker's bolts wait and every spout of the "
            "topology stops (docs/worker.md)"),
    Setting(TOPOLOGY_STATS_SAMPLE_RATE, 0.05,
            "fraction of executes and of spout tuple trees timed for latency metrics"),
    Setting(TOPOLOGY_BACKPRESSURE_HIGH, 0.8, "queue fill that stops the spouts"),
    Setting(TOPOLOGY_BACKPRESSURE_LOW, 0.2, "queue fill that lets the spouts run again"),
    Setting(SQUALL_TRANSFER_BATCH_SIZE, 512, "tuples per batch sent to another worker"),
    Setting("squall.transfer.batch.time.ms", 1.0,
            "the longest a busy worker holds tuples batched for another worker (and leaves "
            "arrived frames untaken) before sending and taking mid-round"),
    Setting("squall.metrics.window.secs", 10,
            "metrics window: capacity, and the recent figures of user histograms, timers, meters"),
    Setting("topology.auto.task.hooks", None,
            "task hook classes (import paths) added to every spout and bolt task (docs/metrics.md)"),
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
    Setting("squall.chaining", True,
            "bolts fused with their upstream into one task where allowed (docs/groupings.md, "
            "Chaining); False in the topology's or a bolt's configuration turns it off"),
    Setting(SQUALL_SPOUT_MAX_RETRIES, None,
            "failures of one spout msg id before it is given up (error reported, spout's ack "
            "called); None: the spout's fail decides forever"),
    Setting("topology.max.error.report.per.interval", 5,
            "errors each task reports per topology.error.throttle.interval.secs; the others are "
            "logged and counted, not shown (Storm's throttle, docs/metrics.md)"),
    Setting("topology.error.throttle.interval.secs", 10,
            "the interval of topology.max.error.report.per.interval (seconds)"),
)

DEFAULTS: dict[str, Any] = {s.key: s.default for s in SETTINGS}

# Keys read where they are used, with the default applied there: declared here for the checks
# and docs/configuration.md, but kept out of DEFAULTS (effective_conf must not add them to
# every configuration, and a component's own keys, such as the windows', must stay its own).
# To add a key: a Setting here (or in SETTINGS if effective_conf should fill it in), a check
# in squall/api/conf_checks.py CHECKS if its values can be wrong, then run
# scripts/gen_configuration.py. tests/unit/test_configuration.py fails until all three agree.
MORE_SETTINGS: tuple[Setting, ...] = (
    Setting("topology.guarantee", "at_least_once",
            "at_least_once (replays, Storm's) or exactly_once (checkpoint-aligned, docs/state.md)"),
    Setting("topology.state.key", None,
            "a secret string; state pickles are signed with a key derived from it, and unsigned "
            "or foreign pickles are refused (docs/state.md)"),
    Setting("topology.name", None,
            "the topology's name, set by squall at submit (multilang components read it)"),
    Setting("topology.transactional.id", None,
            "Storm's transactional id; kept per component, not otherwise used"),
    Setting("topology.spout.wait.strategy", None,
            "Storm's spout wait strategy class; kept per component, squall waits by the "
            "topology.spout.wait.progressive.* keys"),
    Setting("topology.sleep.spout.wait.strategy.time.ms", None,
            "Storm's sleep wait strategy time; kept per component"),
    Setting("topology.spout.max.batch.size", 128, "next_tuple calls per spout task per round at most"),
    Setting("squall.exactly_once.max.spout.pending", 100_000,
            "topology.max.spout.pending under exactly_once when it is unset: bounds what a spout "
            "emits past the last barrier, and with it what alignment holds (docs/state.md)"),
    Setting("topology.exactly_once.max.replays", 5,
            "under exactly_once, how often one record may fail in a bolt, each failure rolling "
            "the topology back, before topology.exactly_once.poison applies (docs/state.md)"),
    Setting("topology.exactly_once.poison", "stop",
            "under exactly_once, a record that failed topology.exactly_once.max.replays times: "
            "stop (the topology stops, one error naming it) or dead_letter (__dead_letter, go on)"),
    Setting("squall.task.threaded", False,
            "True: a thread per task (the topology's, or one component's), for code that blocks"),
    Setting("topology.component.cpu.pcore.percent", None,
            "component key (Storm's): CPU a task asks, in percent of a core (set_cpu_load)"),
    Setting("topology.component.resources.onheap.memory.mb", None,
            "component key (Storm's): memory a task asks, in MB (set_memory_load)"),
    # windows (docs/windows.md); component keys set by BaseWindowedBolt's with_* methods
    Setting("topology.bolts.window.length.count", None, "window length in tuples"),
    Setting("topology.bolts.window.length.duration.ms", None, "window length in milliseconds"),
    Setting("topology.bolts.window.sliding.interval.count", None, "sliding interval in tuples"),
    Setting("topology.bolts.window.sliding.interval.duration.ms", None,
            "sliding interval in milliseconds"),
    Setting("topology.bolts.late.tuple.stream", None, "stream that late tuples go to (none: dropped)"),
    Setting("topology.bolts.tuple.timestamp.max.lag.ms", 0,
            "event time: how far out of order a tuple's timestamp may be"),
    Setting("topology.bolts.watermark.event.interval.ms", 1000,
            "event time: milliseconds between watermarks"),
    Setting("topology.bolts.tuple.timestamp.field.name", None, "event time: the field holding the timestamp"),
    Setting("topology.bolts.message.id.field.name", None,
            "stateful windows: the field holding a tuple's message id"),
    Setting("squall.bolts.window.session.gap.ms", None, "session windows: the gap that closes a session"),
    Setting("squall.bolts.window.session.key.fields", None, "session windows: the fields keying sessions"),
    Setting("squall.bolts.window.persistent", False, "stateful windows: the window itself is in state"),
    # the autoscaler (docs/autoscale.md); min/max parallelism may also be set per component
    Setting("topology.autoscale", False, "True: the autoscaler sets each component's parallelism"),
    Setting("topology.autoscale.mode", "apply",
            "apply, or recommend: decisions are computed and shown, not applied"),
    Setting("topology.autoscale.target.utilization", 0.7,
            "the share of its time a task should spend in its own code"),
    Setting("topology.autoscale.interval.secs", 30, "the shortest time between two decisions"),
    Setting("topology.autoscale.max.factor", 2.0,
            "one decision changes a parallelism by at most this factor (up or down)"),
    Setting("topology.autoscale.min.parallelism", 1, "the least parallelism a decision gives"),
    Setting("topology.autoscale.max.parallelism", None,
            "the most parallelism a decision gives; None: topology.key.groups"),
    # multilang (docs/multilang.md)
    Setting("topology.multilang.serializer", "json", "ShellBolt/ShellSpout wire format: json or msgpack"),
    Setting("topology.shellbolt.max.pending", 100,
            "tuples a ShellBolt task holds not yet acked or failed (in its subprocess or waiting "
            "to be written); at the bound its input waits in the task's queue (backpressure)"),
    Setting("topology.subprocess.timeout.secs", 30.0,
            "seconds a multilang subprocess may go without a heartbeat before it is killed"),
    # Nimbus (docs/nimbus.md)
    Setting("topology.min.replication.count", 1,
            "Nimbus hosts that must hold the code before the topology is activated (HA)"),
    Setting("topology.max.replication.wait.time.sec", 60,
            "longest wait for topology.min.replication.count; -1 waits forever"),
    Setting("topology.upgrade.worker.num", None, "gray upgrade: how many workers take the new version"),
    Setting("topology.upgrade.component", None, "gray upgrade: the component whose workers take it"),
    Setting("topology.upgrade.workers", None, "gray upgrade: the workers (host:port) that take it"),
    Setting("topology.upgrade.expire.secs", 1800.0,
            "gray upgrade: seconds after which an upgrade neither completed nor rolled back "
            "is rolled back"),
    Setting("squall.nimbus.url", None, "where the client finds Nimbus (cluster file or conf)"),
    Setting("squall.conf.cluster.keys", None,
            "written by Nimbus in a stored configuration: the keys the cluster file gave"),
    Setting("squall.conf.cluster.file", None,
            "written by Nimbus in a stored configuration: the cluster file read"),
    # DRPC and connectors
    Setting("squall.drpc.token", None, "the DRPC server's token (docs/drpc.md)"),
    Setting("squall.drpc.token.file", None, "a file holding the DRPC server's token"),
    Setting("squall.connectors.spark.master", None,
            "Spark master of the DataFrame connectors' own session (docs/connectors.md)"),
    # a worker's memory limit on Spark (squall.spark.memory, docs/scheduler.md)
    Setting("topology.worker.max.heap.size.mb", None,
            "Storm's key: the most memory (RSS, MB) a worker process may hold on Spark; over it "
            "the worker is stopped and relaunched (docs/scheduler.md). None: its tasks' memory asks plus "
            "squall.spark.worker.memory.base.mb, or no limit when none asks (LocalCluster: none)"),
)

# Keys declared with their default and meaning in a table of a layer above this one
# (squall.spark.settings.SPARK_SETTINGS, squall.scheduler.keys.SCHEDULER_SETTINGS), named
# here so that every door (submit, Flux, the cluster file) knows them. A new key there is
# added here too: tests/unit/test_configuration.py checks that the names agree.
OTHER_TABLES: frozenset[str] = frozenset({
    "squall.spark.master", "squall.spark.master.bind.host", "squall.spark.master.timeout.secs",
    "squall.spark.master.ui.url", "squall.spark.worker.bind.host", "squall.spark.master.port",
    "squall.spark.master.control.port", "squall.spark.worker.port",
    "squall.spark.worker.heartbeat.secs", "squall.spark.worker.heartbeat.timeout.secs",
    "squall.spark.worker.start.timeout.secs", "squall.spark.executor.wait.secs",
    "squall.topology.start.inactive", "squall.spark.worker.resource.profiles", "squall.spark.env",
    "squall.spark.env.packages", "squall.spark.env.python", "squall.spark.env.cache.dir",
    "squall.use.old.assignment", "squall.use.userdefine.assignment", "squall.scheduler",
    "squall.scheduler.reserved.workers", "squall.scheduler.isolation",
    "squall.scheduler.cpu.slot.percent", "squall.scheduler.memory.slot.mb",
    "squall.scheduler.host.disk.slots", "squall.scheduler.host.memory.mb", "squall.task.disk.slots",
    "squall.spark.worker.memory.base.mb", "squall.spark.worker.cpu.pin",
})

# Storm's topology keys that squall accepts and does not use (its JVM, Kryo, ZooKeeper, RAS
# and Trident keys): a Storm configuration passes with one warning naming them.
STORM_UNUSED: frozenset[str] = frozenset({
    "topology.tuple.serializer", "topology.testing.always.try.serialize", "topology.blobstore.map",
    "topology.backpressure.enable", "topology.users", "topology.groups", "topology.readonly.users",
    "topology.readonly.groups", "topology.version", "topology.multilang.log.handler",
    "topology.component.resources.map", "topology.component.resources.offheap.memory.mb",
    "topology.acker.resources.onheap.memory.mb", "topology.acker.resources.offheap.memory.mb",
    "topology.acker.cpu.pcore.percent", "topology.metrics.consumer.resources.onheap.memory.mb",
    "topology.metrics.consumer.resources.offheap.memory.mb",
    "topology.metrics.consumer.cpu.pcore.percent", "topology.enable.v2.metrics.tick",
    "topology.scheduler.strategy",
    "topology.ras.order.executors.by.proximity.needs", "topology.ras.constraints",
    "topology.spread.components", "topology.ras.constraint.max.state.search",
    "topology.ras.one.executor.per.worker", "topology.ras.one.component.per.worker",
    "topology.ras.constraint.max.time.secs", "topology.scheduler.favored.nodes",
    "topology.scheduler.unfavored.nodes", "topology.event.logger.register",
    "topology.eventlogger.executors", "topology.kryo.register", "topology.kryo.decorators",
    "topology.kryo.factory", "topology.skip.missing.kryo.registrations",
    "topology.state.kryo.register", "topology.metrics.consumer.register",
    "topology.serialized.message.size.metrics", "topology.worker.metrics",
    "topology.state.synchronization.timeout.secs", "topology.builtin.metrics.bucket.size.secs",
    "topology.fall.back.on.java.serialization", "topology.worker.childopts",
    "topology.worker.gc.childopts", "topology.worker.logwriter.childopts", "topology.classpath",
    "topology.classpath.beginning", "topology.environment", "topology.transfer.buffer.size",
    "topology.transfer.batch.size", "topology.producer.batch.size",
    "topology.executor.overflow.limit", "topology.backpressure.check.millis",
    "topology.batch.flush.interval.millis", "topology.worker.shared.thread.pool.size",
    "topology.trident.batch.emit.interval.millis", "topology.trident.windowing.cache.tuple.limit",
    "topology.submitter.principal", "topology.submitter.user", "topology.auto-credentials",
    "topology.logging.sensitivity", "topology.logging.config", "topology.priority",
    "topology.isolate.machines", "topology.spout.wait.park.microsec", "topology.bolt.wait.strategy",
    "topology.bolt.wait.park.microsec", "topology.bolt.wait.progressive.level1.count",
    "topology.bolt.wait.progressive.level2.count", "topology.bolt.wait.progressive.level3.sleep.millis",
    "topology.backpressure.wait.strategy", "topology.backpressure.wait.park.microsec",
    "topology.backpressure.wait.progressive.level3.sleep.millis",
    "topology.backpressure.wait.progressive.level1.count",
    "topology.backpressure.wait.progressive.level2.count", "topology.spout.recvq.skips",
    "topology.worker.timeout.secs",
})


@cache
def known_keys() -> frozenset[str]:
    """Every ``topology.*`` and ``squall.*`` key squall reads (not Storm's unused ones)."""
    return frozenset(s.key for s in SETTINGS + MORE_SETTINGS) | OTHER_TABLES


def _spelling(key: str) -> str | None:
    close = difflib.get_close_matches(key, sorted(known_keys() | STORM_UNUSED), n=1, cutoff=0.75)
    return close[0] if close else None


def check_key(key: str, where: str = "config") -> None:
    """Refuse an unknown ``squall.*`` key, or a near miss of a known ``topology.*`` key.

    Other unknown ``topology.*`` keys get a warning (``squall.api.conf_checks`` says why).

    >>> try:
    ...     check_key("topology.guarantees")
    ... except InvalidTopologyError as e:
    ...     print(str(e).split(" (")[0])
    config: unknown key 'topology.guarantees': did you mean 'topology.guarantee'?
    """
    if not key.startswith(("topology.", "squall.")) or key in known_keys():
        return
    if key in STORM_UNUSED:
        log.warning("%s: %s is a Storm key squall does not use; ignored", where, key)
        return
    guess = _spelling(key)
    similar = guess is not None and difflib.SequenceMatcher(None, key, guess).ratio() >= CLOSE
    if key.startswith("squall.") or similar:
        hint = f"did you mean {guess!r}?" if guess else "squall reads no such key"
        raise InvalidTopologyError(f"{where}: unknown key {key!r}: {hint} "
                                   f"(docs/configuration.md lists every key)")
    log.warning("%s: %s is not a key squall reads; kept for your components (a typo? "
                "docs/configuration.md lists every key)", where, key)


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

    def set_max_task_parallelism(self, n: int | None) -> None:
        """Set ``topology.max.task.parallelism`` (caps every component's tasks)."""
        self[TOPOLOGY_MAX_TASK_PARALLELISM] = n


def effective_conf(*layers: dict | None) -> dict[str, Any]:
    """Defaults overlaid by each layer in turn (later layers win)."""
    merged: dict[str, Any] = copy.deepcopy(DEFAULTS)  # no caller may mutate the defaults
    for layer in layers:
        if layer:
            merged.update(layer)
    return merged


# Keys of Storm's that a component's configuration may override (Storm's Executor keeps these
# and drops every other key it knows; keys it does not know, the user's, are kept).
PER_COMPONENT_KEYS = frozenset({
    TOPOLOGY_DEBUG, TOPOLOGY_MAX_SPOUT_PENDING, TOPOLOGY_MAX_TASK_PARALLELISM,
    TOPOLOGY_TICK_TUPLE_FREQ_SECS, TOPOLOGY_STATE_PROVIDER, TOPOLOGY_STATE_PROVIDER_CONFIG,
    "topology.transactional.id", "topology.spout.wait.strategy",
    "topology.sleep.spout.wait.strategy.time.ms",
    "topology.bolts.window.length.count", "topology.bolts.window.length.duration.ms",
    "topology.bolts.window.sliding.interval.count", "topology.bolts.window.sliding.interval.duration.ms",
    "topology.bolts.tuple.timestamp.max.lag.ms", "topology.bolts.message.id.field.name",
    "topology.bolts.late.tuple.stream",
})
# Storm-wide keys that mean nothing per component: dropped from a task's component layer.
_TOPOLOGY_WIDE = frozenset(
    k for k in DEFAULTS if k.startswith("topology.") and k not in PER_COMPONENT_KEYS
)

# (key, integer only, None allowed) for the per-component keys whose type the runtime relies on
_TYPED = (
    (TOPOLOGY_TASKS, True, False),  # set_num_tasks
    (TOPOLOGY_MAX_TASK_PARALLELISM, True, True),
    (TOPOLOGY_MAX_SPOUT_PENDING, True, True),
    (TOPOLOGY_TICK_TUPLE_FREQ_SECS, False, True),
)


def check_positive(where: str, key: str, value: Any, *, integer: bool, allow_none: bool) -> None:
    """Raise ``InvalidTopologyError`` naming ``where``, ``key`` and ``value`` if it is bad.

    Good values are positive integers (positive numbers unless ``integer``), and None when
    ``allow_none``.
    """
    if value is None and allow_none:
        return
    ok_type = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, ok_type) or value <= 0:
        kind = "a positive integer" if integer else "a positive number"
        extra = " or None" if allow_none else ""
        raise InvalidTopologyError(f"{where}: {key} must be {kind}{extra}, got {value!r}")


def check_component_conf(component: str, conf: dict) -> None:
    """Check the keys of ``component``'s configuration, and the types of its per-component keys."""
    for key in conf:
        if isinstance(key, str):
            check_key(key, f"component {component!r}")
    for key, integer, allow_none in _TYPED:
        if key in conf:
            label = f"{key} (num_tasks)" if key == TOPOLOGY_TASKS else key
            check_positive(f"component {component!r}", label, conf[key],
                           integer=integer, allow_none=allow_none)


def task_conf(topology_conf: dict, component_conf: dict) -> dict:
    """The configuration a task sees, merged as Storm's: the topology's, then the component's.

    Of the keys Storm knows, a component may override only ``PER_COMPONENT_KEYS``; the
    others (``topology.workers``, ``topology.message.timeout.secs``...) apply to the whole
    topology and are dropped from the component's layer, as is ``topology.tasks``. Keys
    unknown to Storm (the user's, ``squall.*``) are kept.

    >>> conf = task_conf({"topology.workers": 2}, {"topology.workers": 9, "my.key": 1})
    >>> conf["topology.workers"], conf["my.key"]
    (2, 1)
    """
    merged = dict(topology_conf)
    for key, value in component_conf.items():
        if key != TOPOLOGY_TASKS and key not in _TOPOLOGY_WIDE:
            merged[key] = value
    return merged


def component_tasks(hint: int, conf: dict, topology_conf: dict | None = None) -> tuple[int, int]:
    """(tasks, executors) of a component with parallelism ``hint``, as Storm's.

    Tasks are ``topology.tasks`` (default: the hint), capped by
    ``topology.max.task.parallelism``, each looked up in the component's configuration then
    the topology's; executors are the hint, but never more than the tasks.

    >>> component_tasks(4, {"topology.tasks": 6}, {"topology.max.task.parallelism": 3})
    (3, 3)
    """
    top = topology_conf or {}
    tasks = conf[TOPOLOGY_TASKS] if TOPOLOGY_TASKS in conf else top.get(TOPOLOGY_TASKS)
    tasks = hint if tasks is None else tasks
    cap = (conf[TOPOLOGY_MAX_TASK_PARALLELISM] if TOPOLOGY_MAX_TASK_PARALLELISM in conf
           else top.get(TOPOLOGY_MAX_TASK_PARALLELISM))
    if cap is not None:
        tasks = min(tasks, cap)
    return tasks, min(hint, tasks)
