"""Errors reported by tasks: logged, cut to size, throttled per task, kept for topology info.

Storm's ``ReportError``: each task reports at most ``topology.max.error.report.per.interval``
errors (default 5) per ``topology.error.throttle.interval.secs`` (default 10) to where they
are shown (here: topology info, the master's heartbeat, the store's ``taskerrors``); the
others are logged on one line each and counted, and the task's next reported error carries
the count (``suppressed``, also said at the end of its message). A task that raises on every
tuple therefore cannot flood the heartbeats, the master or the store. The interval runs on
the runtime's clock (``squall.testing.simulated_time`` moves it in tests).

Every error is cut before it is kept: ``message`` to ``MESSAGE_CHARS``, each traceback line
to ``MESSAGE_CHARS`` and the traceback to its last ``TRACEBACK_CHARS``. A message often
echoes the input that broke the code (``ValueError(f"bad record {record}")``); its head
names the error, and the rest would only carry the input, which may be large and private.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from squall.api.redaction import redact_text
from squall.runtime import clock as runtime_clock

log = logging.getLogger("squall.errors")

MAX_PER_INTERVAL = "topology.max.error.report.per.interval"
THROTTLE_INTERVAL_SECS = "topology.error.throttle.interval.secs"
# a message's head says what went wrong; the rest is mostly the echoed input
MESSAGE_CHARS = 1000
# the innermost frames and the error line; the same cut the store's record applies
TRACEBACK_CHARS = 4000


def cut(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters: its head, and how long it was."""
    if len(text) <= limit:
        return text
    tail = f"... ({len(text)} characters, cut)"
    return text[:limit - len(tail)] + tail


def cut_traceback(tb: str, line_chars: int = MESSAGE_CHARS, limit: int = TRACEBACK_CHARS) -> str:
    """``tb`` with each line cut to ``line_chars`` and the whole to its last ``limit`` characters.

    Lines first: the error's line repeats the message, which would otherwise fill the
    tail kept and push every frame out.
    """
    text = "\n".join(cut(line, line_chars) for line in tb.split("\n"))
    if len(text) <= limit:
        return text
    head = f"... ({len(text)} characters, the first cut)\n"
    return head + text[len(text) - limit + len(head):]  # at most limit: cutting again changes nothing


def without_texts(errors: list[dict]) -> list[dict]:
    """``errors`` without their message and traceback: enough to count them, by component."""
    return [{k: v for k, v in e.items() if k not in ("message", "traceback")} for e in errors]


def cut_entry(entry: Mapping[str, Any]) -> dict:
    """An error entry with ``message`` and ``traceback`` cut (entries of any origin)."""
    return {**entry, "message": cut(str(entry.get("message") or ""), MESSAGE_CHARS + 200),
            "traceback": cut_traceback(str(entry.get("traceback") or ""))}


def _positive(conf: Mapping[str, Any], key: str, default: float) -> float:
    value = conf.get(key)
    if value is None:
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = 0.0
    if not number > 0:  # also NaN
        log.warning("%s must be a positive number, got %r: using %g", key, value, default)
        return default
    return number


class ErrorLog:
    """The last ``limit`` reported errors of a topology (or worker); safe to use from any thread.

    ``max_per_interval`` errors per task per ``interval_secs`` are reported (Storm's
    defaults: 5 per 10 s); ``suppressed`` counts the others.
    """

    def __init__(self, limit: int = 1000, *, max_per_interval: int = 5, interval_secs: float = 10.0,
                 clock: Callable[[], float] | None = None) -> None:
        self._errors: deque[dict] = deque(maxlen=limit)
        self._lock = threading.Lock()
        self._max = int(max_per_interval)
        self._interval = float(interval_secs)
        self._clock = clock or runtime_clock.monotonic
        self._tasks: dict[tuple[str, int], list] = {}  # (component, task) -> [start, count, dropped]
        self.total = 0  # errors kept since the start (the heartbeat's cursor)
        self.suppressed = 0  # errors not reported (over the throttle) since the start

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any], limit: int = 1000) -> ErrorLog:
        """An ``ErrorLog`` with the topology's throttle settings (Storm's defaults if unset).

        A value that is not a positive number is logged and replaced by the default: a
        worker does not fail over how many of its errors it shows.
        """
        return cls(limit, max_per_interval=max(1, int(_positive(conf, MAX_PER_INTERVAL, 5))),
                   interval_secs=_positive(conf, THROTTLE_INTERVAL_SECS, 10))

    def report(self, component: str, task: int, error: BaseException, stack: str | None = None) -> dict:
        """Record ``error`` raised by ``task`` of ``component`` (unless throttled), and log it.

        ``stack``: the traceback to show instead of the error's own (a stuck task's stack).
        Returns the entry, also when it was throttled (then it is not kept).
        """
        tb = stack if stack is not None else "".join(
            traceback.format_exception(type(error), error, error.__traceback__))
        # an error often echoes its input or a connection string: secrets in either are hidden
        # before the entry is logged, sent in a heartbeat or stored
        message = redact_text(cut(f"{type(error).__name__}: {error}", MESSAGE_CHARS))
        tb = redact_text(cut_traceback(tb))
        entry: dict[str, Any] = {
            "component": component,
            "task": task,
            "time": time.time(),
            "message": message,
            "traceback": tb,
        }
        with self._lock:
            dropped = self._throttle((component, task))
            if dropped is not None:
                entry["suppressed"] = dropped
                if dropped:
                    entry["message"] = message = (f"{message} [{dropped} earlier error(s) of this task "
                                                  f"not reported: over {self._max} per {self._interval:g} s]")
                self._errors.append(entry)
                self.total += 1
            else:
                self.suppressed += 1
        if dropped is None:
            log.error("component %r task %d (not reported: over %d per %gs): %s", component, task,
                      self._max, self._interval, message)
        else:
            log.error("component %r task %d: %s\n%s", component, task, message, tb.rstrip())
        return entry

    def _throttle(self, key: tuple[str, int]) -> int | None:
        """None if the task is over its quota (counted), else the count dropped since its last report.

        Storm's rule: an interval starts with the task's first error and ends once more
        than ``interval_secs`` have passed; then the next error starts a new one.
        """
        now = self._clock()
        state = self._tasks.get(key)
        if state is None or now - state[0] > self._interval:
            state = self._tasks[key] = [now, 0, state[2] if state is not None else 0]
        state[1] += 1
        if state[1] > self._max:
            state[2] += 1
            return None
        dropped, state[2] = state[2], 0
        return dropped

    def since(self, cursor: int, limit: int) -> tuple[list[dict], int]:
        """Up to ``limit`` errors kept after the first ``cursor`` ones, oldest first, and the new cursor.

        Errors that left the log before they were read are skipped.
        """
        with self._lock:
            first = self.total - len(self._errors)  # the number of the oldest still kept
            start = max(cursor, first)
            out = [self._errors[i - first] for i in range(start, min(self.total, start + limit))]
            return out, start + len(out)

    def list(self) -> list[dict]:
        """The recorded errors, oldest first."""
        with self._lock:
            return list(self._errors)
