"""What the checkpoint spout reports about its transactions, as metrics of its task.

Registered on ``$checkpointspout``'s context, so they reach ``get_topology_info``,
``squall info``, the UI and ``/metrics`` (``squall_user_metric{component="$checkpointspout"}``)
like any component's metrics (docs/metrics.md):

- ``checkpoint/lastCommittedTxid`` (gauge): the last transaction committed everywhere;
- ``checkpoint/secsSinceCommit`` (gauge): seconds since a commit completed (since the spout
  opened, before the first): the figure to alert on, as exactly-once output waits for commits;
- ``checkpoint/prepareMs`` (timer): PREPARE emitted to acked: the barrier's trip through
  every task, each task's alignment wait included;
- ``checkpoint/commitMs`` (timer): COMMIT emitted to acked;
- ``checkpoint/rollbacks`` (counter): checkpoint tuples that failed or timed out, each of
  which sends the topology back to its last commit.
"""

from __future__ import annotations

from typing import Any

from squall.runtime import clock as runtime_clock
from squall.runtime.checkpoint import Action, Phase, TxState


class CheckpointFigures:
    """The figures of one checkpoint spout task; ``record()`` reads its durable record."""

    def __init__(self, context: Any, record: Any) -> None:
        self._record = record
        self._committed_at = runtime_clock.monotonic()
        self._sent: tuple[int, str, float] | None = None
        self._prepare = context.register_timer("checkpoint/prepareMs")
        self._commit = context.register_timer("checkpoint/commitMs")
        self._rollbacks = context.register_counter("checkpoint/rollbacks")
        context.register_gauge("checkpoint/lastCommittedTxid", self.last_committed)
        context.register_gauge("checkpoint/secsSinceCommit", self.secs_since_commit)

    def last_committed(self) -> int:
        """The last transaction committed (a PREPARING or COMMITTING record's is the one before)."""
        record: TxState = self._record()
        return record.txid if record.phase is Phase.COMMITTED else record.txid - 1

    def secs_since_commit(self) -> float:
        """Seconds since the last commit completed."""
        return round(runtime_clock.monotonic() - self._committed_at, 3)

    def emitted(self, txid: int, action: str) -> None:
        """A checkpoint tuple went out."""
        self._sent = (txid, action, runtime_clock.monotonic())

    def acked(self, txid: int, action: str) -> None:
        """The checkpoint tuple in flight was acked by every task."""
        sent, self._sent = self._sent, None
        if sent is None or sent[:2] != (txid, action):
            return
        now = runtime_clock.monotonic()
        ms = (now - sent[2]) * 1000.0
        if action == Action.PREPARE.value:
            self._prepare.update(ms)
        elif action == Action.COMMIT.value:
            self._commit.update(ms)
            self._committed_at = now

    def failed(self) -> None:
        """A checkpoint tuple failed or timed out: the topology rolls back."""
        self._sent = None
        self._rollbacks.inc()
