"""Calling a task's hooks (Storm's ``ITaskHook``): the info objects, errors reported, not raised.

A task's ``hooks`` field is None until a hook is added, so a task without hooks pays one
None check per event. With hooks, each event builds its info object only when some hook
has that method (a ``BaseTaskHook`` method left as is does not count).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from squall.api.errors import TopologyStartError
from squall.api.hooks import (
    BaseTaskHook,
    BoltAckInfo,
    BoltExecuteInfo,
    BoltFailInfo,
    EmitInfo,
    SpoutAckInfo,
    SpoutFailInfo,
)
from squall.api.tuple import Tuple

AUTO_TASK_HOOKS = "topology.auto.task.hooks"
_EVENTS = ("cleanup", "emit", "spout_ack", "spout_fail", "bolt_execute", "bolt_ack", "bolt_fail")


def _overrides(hook: Any, name: str) -> Any:
    """``hook``'s bound method ``name``, or None if absent or BaseTaskHook's no-op."""
    fn = getattr(hook, name, None)
    if not callable(fn):
        return None
    if getattr(type(hook), name, None) is getattr(BaseTaskHook, name):
        return None
    return fn


class TaskHooks:
    """The hooks of one task, with a list of bound methods per event."""

    def __init__(self, task_id: int, report: Callable[[BaseException], None]) -> None:
        self._report = report  # the task's ``report``: a hook's error is the component's
        self.task_id = task_id
        self.hooks: list[Any] = []
        self._fns: dict[str, list[Any]] = {name: [] for name in _EVENTS}

    def add(self, hook: Any) -> None:
        """Start calling ``hook`` (already prepared)."""
        self.hooks.append(hook)
        for name in _EVENTS:
            fn = _overrides(hook, name)
            if fn is not None:
                self._fns[name].append(fn)

    def _call(self, name: str, info: Any) -> None:
        for fn in self._fns[name]:
            try:
                fn(info)
            except Exception as e:  # noqa: BLE001 - a hook's error is the component's, not a crash
                self._report(e)

    def emit(self, values: list, stream: str, out_tasks: list[int]) -> None:
        """The task emitted ``values`` on ``stream`` to ``out_tasks``."""
        if self._fns["emit"]:
            self._call("emit", EmitInfo(values, stream, self.task_id, list(out_tasks)))

    def spout_ack(self, message_id: Any, latency_ms: float | None) -> None:
        """A tree of this spout task completed."""
        if self._fns["spout_ack"]:
            self._call("spout_ack", SpoutAckInfo(message_id, self.task_id, latency_ms))

    def spout_fail(self, message_id: Any, latency_ms: float | None) -> None:
        """A tree of this spout task failed or timed out."""
        if self._fns["spout_fail"]:
            self._call("spout_fail", SpoutFailInfo(message_id, self.task_id, latency_ms))

    def bolt_execute(self, tup: Tuple, latency_ms: float | None) -> None:
        """The bolt executed ``tup``."""
        if self._fns["bolt_execute"]:
            self._call("bolt_execute", BoltExecuteInfo(tup, self.task_id, latency_ms))

    def bolt_ack(self, tup: Tuple, latency_ms: float | None) -> None:
        """The bolt acked ``tup``."""
        if self._fns["bolt_ack"]:
            self._call("bolt_ack", BoltAckInfo(tup, self.task_id, latency_ms))

    def bolt_fail(self, tup: Tuple, latency_ms: float | None) -> None:
        """The bolt failed ``tup``."""
        if self._fns["bolt_fail"]:
            self._call("bolt_fail", BoltFailInfo(tup, self.task_id, latency_ms))

    def cleanup(self) -> None:
        """The task is shutting down gracefully."""
        for fn in self._fns["cleanup"]:
            try:
                fn()
            except Exception as e:  # noqa: BLE001
                self._report(e)


def load_hook_class(path: Any, component: str) -> type:
    """The class at import path ``path`` (``package.module.Class``); a clear error otherwise."""
    where = f"component {component!r}: {AUTO_TASK_HOOKS}"
    if not isinstance(path, str) or "." not in path.strip("."):
        raise TopologyStartError(f"{where} entry {path!r} is not an import path like 'package.module.Class'")
    module_name, _, name = path.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # noqa: BLE001 - any import failure names the path
        raise TopologyStartError(f"{where}: cannot import module {module_name!r} of {path!r}: "
                                 f"{type(e).__name__}: {e}") from e
    cls = getattr(module, name, None)
    if not isinstance(cls, type):
        raise TopologyStartError(f"{where}: {path!r} is not a class (module {module_name!r} has "
                                 f"{'no attribute ' + repr(name) if cls is None else type(cls).__name__})")
    return cls


def auto_hook_paths(conf: dict, component: str) -> list[str]:
    """The hook class paths of ``topology.auto.task.hooks`` (a list; a bad value is an error)."""
    paths = conf.get(AUTO_TASK_HOOKS)
    if not paths:
        return []
    if isinstance(paths, str) or not isinstance(paths, (list, tuple)):
        raise TopologyStartError(f"component {component!r}: {AUTO_TASK_HOOKS} must be a list of "
                                 f"import paths, got {paths!r}")
    return list(paths)


def add_auto_hooks(conf: dict, component: str, context: Any) -> None:
    """Instantiate each class of ``topology.auto.task.hooks`` and add it to a task's ``context``."""
    for path in auto_hook_paths(conf, component):
        cls = load_hook_class(path, component)
        try:
            hook = cls()
        except Exception as e:  # noqa: BLE001
            raise TopologyStartError(f"component {component!r}: {AUTO_TASK_HOOKS} class {path!r} "
                                     f"cannot be instantiated: {type(e).__name__}: {e}") from e
        context.add_task_hook(hook)
