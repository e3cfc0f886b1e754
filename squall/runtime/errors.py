"""Errors reported by tasks: logged with their traceback and kept for topology info."""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections import deque

log = logging.getLogger("squall.errors")


class ErrorLog:
    """The last ``limit`` errors of a topology; safe to use from any thread."""

    def __init__(self, limit: int = 1000) -> None:
        self._errors: deque[dict] = deque(maxlen=limit)
        self._lock = threading.Lock()
        self.total = 0

    def report(self, component: str, task: int, error: BaseException, stack: str | None = None) -> dict:
        """Record ``error`` raised by ``task`` of ``component``, and log it.

        ``stack``: the traceback to show instead of the error's own (a stuck task's stack).
        """
        tb = stack if stack is not None else "".join(
            traceback.format_exception(type(error), error, error.__traceback__))
        entry = {
            "component": component,
            "task": task,
            "time": time.time(),
            "message": f"{type(error).__name__}: {error}",
            "traceback": tb,
        }
        with self._lock:
            self._errors.append(entry)
            self.total += 1
        log.error("component %r task %d: %s\n%s", component, task, entry["message"], tb.rstrip())
        return entry

    def list(self) -> list[dict]:
        """The recorded errors, oldest first."""
        with self._lock:
            return list(self._errors)
