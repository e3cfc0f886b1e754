"""Poison records under exactly-once: a record that fails every attempt (issue 41 item 3a).

Under exactly-once a data tuple failed in a bolt fails the next PREPARE, and the rollback
reads the record again, so a record that fails every time (a poison record) would roll the
topology back for ever. Each aligned bolt task counts the failures of each record (its
upstream component and task, stream and values) since its last commit; at the
``topology.exactly_once.max.replays``-th failure of one record, ``topology.exactly_once.poison``
decides:

- ``stop`` (the default): one error names the record, where it failed and the committed
  positions the topology reads it again after; the task writes a halt mark
  (``<topology>/$halt``) that the checkpoint spout reads when a checkpoint fails: it then
  emits no more checkpoints, so nothing commits or rolls back any more, and the spouts
  stop once ``topology.max.spout.pending`` records wait. Kill the topology, fix the record
  (or the bolt), and submit it again: the checkpoint spout clears the mark when it opens.
- ``dead_letter``: the record is given up: emitted on the bolt's ``__dead_letter`` stream
  if the bolt declares it (``squall.connectors.reliable.declare_dead_letter``), reported as
  an error, and acked instead of failed, so the checkpoint commits and the topology goes on.

The counts live in the task's memory: a task restarted (its worker died) counts from zero.
"""

from __future__ import annotations

import logging
from typing import Any

from squall.api.tuple import Tuple

log = logging.getLogger("squall.exactly_once")

MAX_REPLAYS_KEY = "topology.exactly_once.max.replays"
POISON_KEY = "topology.exactly_once.poison"
DEFAULT_MAX_REPLAYS = 5
STOP, DEAD_LETTER = "stop", "dead_letter"
REASON = "replays"  # the dead letter's reason
# squall.connectors.reliable's stream and fields (the runtime does not import connectors)
DEAD_LETTER_STREAM = "__dead_letter"
WINDOW = 3  # commits after its last failure that a record's count is kept


class PoisonRecordError(RuntimeError):
    """A record failed ``topology.exactly_once.max.replays`` times under exactly-once."""


def _text(values: Any, limit: int = 200) -> str:
    text = repr(list(values))
    return text if len(text) <= limit else text[:limit] + "...]"


class PoisonWatch:
    """The failures of each record in one aligned bolt task since its last commit."""

    def __init__(self, task: Any, conf: dict) -> None:
        self.task = task
        self.conf = conf
        self.max_replays = int(conf.get(MAX_REPLAYS_KEY) or DEFAULT_MAX_REPLAYS)
        self.policy = str(conf.get(POISON_KEY) or STOP)
        # record -> (failures, the commit count at its last failure)
        self.counts: dict[tuple, tuple[int, int]] = {}
        self.stopped = False
        self.last_commit = -1  # the highest txid this task saw committed
        self.commits = 0  # commits of a new txid seen so far

    def committed(self, txid: int) -> None:
        """COMMIT(``txid``): records whose last failure is ``WINDOW`` commits old are forgotten.

        Between two attempts of a poison record a commit or two may pass (the records
        before it, or an empty checkpoint whose barrier came first); a record that failed
        once and then went through is forgotten after a few. A recovery sends COMMIT of the
        last committed txid again: that one is not counted.
        """
        if txid <= self.last_commit:
            return
        self.last_commit = txid
        self.commits += 1
        if self.counts:
            old = [k for k, (_, at) in self.counts.items() if self.commits - at > WINDOW]
            for k in old:
                del self.counts[k]

    def failed(self, tup: Tuple, error: str | None) -> bool:
        """``tup`` failed here; True: it is given up (dead-lettered) and must be acked instead."""
        key = (tup.component, tup.task, tup.stream, repr(list(tup.values)))
        n = self.counts.get(key, (0, 0))[0] + 1
        self.counts[key] = (n, self.commits)
        if n < self.max_replays:
            return False
        task = self.task
        where = f"bolt {task.component!r} task {task.task_id}"
        record = f"record {_text(tup.values)} from {tup.component!r} task {tup.task} (stream {tup.stream!r})"
        lines = [x for x in (error or "").splitlines() if x.strip()]
        # a traceback ends with the exception line
        why = f"last error: {lines[-1].strip()[:200]}" if lines else "failed by the bolt"
        if self.policy == DEAD_LETTER:
            del self.counts[key]
            sent = self._dead_letter(tup, error, n)
            task.host.report_error(task, PoisonRecordError(
                f"{where} gave up {record} after {n} failures ({MAX_REPLAYS_KEY}={self.max_replays}, "
                f"{why}); " + ("sent to __dead_letter" if sent else
                               "dropped: the bolt declares no __dead_letter stream")))
            return True
        if not self.stopped:
            self.stopped = True
            message = (f"topology stopped: {where} failed {record} {n} times "
                       f"({MAX_REPLAYS_KEY}={self.max_replays}, {why}); it is read again after "
                       f"{committed_positions(task)}; fix it, or set {POISON_KEY} to dead_letter, "
                       f"and submit again")
            log.error("%s", message)
            task.host.report_error(task, PoisonRecordError(message))
            halt(task, message)
        return False

    def _dead_letter(self, tup: Tuple, error: str | None, attempts: int) -> bool:
        task = self.task
        try:
            task.context.get_this_output_fields(DEAD_LETTER_STREAM)
        except (KeyError, ValueError):
            return False
        task.collector.emit([None, list(tup.values), REASON, error, task.component, task.task_id, attempts],
                            stream=DEAD_LETTER_STREAM)
        return True


def halt(task: Any, reason: str) -> None:
    """Write the halt mark the checkpoint spout reads when a checkpoint fails."""
    from squall.runtime.checkpoint_spout import HALT_KEY, HALT_NAMESPACE
    from squall.state import load_provider

    try:
        state: Any = load_provider(task.conf).new_state(
            f"{task.context.topology_name}/{HALT_NAMESPACE}", task.conf, task.context)
        state.put(HALT_KEY, reason)
        state.commit((state.committed_txid() or 0) + 1)
    except Exception as e:  # noqa: BLE001 - the store is down: the rollbacks go on, reported
        task.host.report_error(task, e)


def committed_positions(task: Any) -> str:
    """The spouts' committed positions, as one line ("the last committed positions" if unknown)."""
    from squall.runtime.exactly_once import POSITION_KEY
    from squall.runtime.stateful import HISTORY_KEY, committed_items, state_namespace
    from squall.state import load_provider

    topology = getattr(task.host, "topology", None)
    if topology is None:
        return "the last committed positions"
    parts = []
    try:
        provider = load_provider(task.conf)
        name = task.context.topology_name
        for spec in topology.spouts:
            if spec.id.startswith(("$", "__")):
                continue
            meta: Any = provider.new_state(f"{name}/{spec.id}/$tasks", task.conf, task.context)
            history = list(meta.get(HISTORY_KEY) or [])
            if not history:
                continue
            where = []
            for index in range(history[-1]):
                state = provider.new_state(state_namespace(name, spec.id, index, len(history) - 1),
                                           task.conf, task.context)
                position = dict(committed_items(state)).get(POSITION_KEY)
                where.append(f"task {index}: {_text([position], 120)[1:-1]}")
            parts.append(f"spout {spec.id!r} ({', '.join(where)})")
    except Exception as e:  # noqa: BLE001 - naming the positions must not hide the record
        return f"the last committed positions (not read: {type(e).__name__}: {e})"
    return "the committed positions of " + "; ".join(parts) if parts else "the last committed positions"
