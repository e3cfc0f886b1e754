"""Task hooks (Storm's ``ITaskHook``) and the info objects they receive.

A hook is any object with some of these methods (the others are simply not called):
``prepare(conf, context)``, ``cleanup()``, ``emit(info)``, ``spout_ack(info)``,
``spout_fail(info)``, ``bolt_execute(info)``, ``bolt_ack(info)``, ``bolt_fail(info)``.
Add one with ``context.add_task_hook(hook)`` (its ``prepare`` is called at once, as in
Storm) or list hook classes by import path in ``topology.auto.task.hooks`` (one instance
per task, added before ``open``/``prepare``). Hooks run on the task's thread, right after
the event; a hook that raises is reported as an error of the component and the task goes on.

Latencies are milliseconds on the runtime's clock. While a task has hooks every execute is
timed, so they are never missing (Storm gives -1/None for unsampled tuples); a process or
fail latency is None only for a tuple the bolt never executed (nor was being executed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from squall.api.tuple import Tuple


@dataclass(slots=True)
class EmitInfo:
    """A task emitted ``values`` on ``stream`` to ``out_tasks`` (acker messages included)."""

    values: list
    stream: str
    task_id: int
    out_tasks: list[int]


@dataclass(slots=True)
class SpoutAckInfo:
    """The tree of spout message ``message_id`` completed ``complete_latency_ms`` after its emit."""

    message_id: Any
    spout_task_id: int
    complete_latency_ms: float | None


@dataclass(slots=True)
class SpoutFailInfo:
    """The tree of ``message_id`` failed or timed out ``fail_latency_ms`` after its emit."""

    message_id: Any
    spout_task_id: int
    fail_latency_ms: float | None


@dataclass(slots=True)
class BoltExecuteInfo:
    """The bolt's ``execute`` of ``tuple`` returned after ``execute_latency_ms``."""

    tuple: Tuple
    executing_task_id: int
    execute_latency_ms: float | None


@dataclass(slots=True)
class BoltAckInfo:
    """The bolt acked ``tuple``, ``process_latency_ms`` after its execute began."""

    tuple: Tuple
    acking_task_id: int
    process_latency_ms: float | None


@dataclass(slots=True)
class BoltFailInfo:
    """The bolt failed ``tuple``, ``fail_latency_ms`` after its execute began."""

    tuple: Tuple
    failing_task_id: int
    fail_latency_ms: float | None


HOOK_METHODS = ("prepare", "cleanup", "emit", "spout_ack", "spout_fail", "bolt_execute",
                "bolt_ack", "bolt_fail")


class BaseTaskHook:
    """A hook that does nothing: subclass it and override what you need (Storm's ``BaseTaskHook``)."""

    def prepare(self, conf: dict, context: Any) -> None:
        """Called once when the hook is added to a task."""

    def cleanup(self) -> None:
        """Called when the task shuts down gracefully, before the component's close/cleanup."""

    def emit(self, info: EmitInfo) -> None:
        """The task emitted a tuple."""

    def spout_ack(self, info: SpoutAckInfo) -> None:
        """A spout tuple tree completed."""

    def spout_fail(self, info: SpoutFailInfo) -> None:
        """A spout tuple tree failed or timed out."""

    def bolt_execute(self, info: BoltExecuteInfo) -> None:
        """The bolt executed a tuple."""

    def bolt_ack(self, info: BoltAckInfo) -> None:
        """The bolt acked a tuple."""

    def bolt_fail(self, info: BoltFailInfo) -> None:
        """The bolt failed a tuple."""
