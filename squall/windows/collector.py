"""The collector a windowed bolt gets: emits without anchors are anchored to the window."""

from __future__ import annotations

from typing import Any

from squall.api.tuple import DEFAULT_STREAM, Tuple


class WindowedOutputCollector:
    """Wraps the task's ``OutputCollector`` (Storm's ``WindowedOutputCollector``).

    ``emit(values)`` and ``emit_direct(task, values)`` without ``anchors`` are anchored to
    the window being executed (to every tuple of it, or on count windows to the newest tuple
    of each of its trees: the same trees, see ``squall.windows.executor``); explicit
    anchors are kept as given.
    """

    def __init__(self, delegate: Any, anchor_to_window: bool = True) -> None:
        self._delegate = delegate
        self._anchor = anchor_to_window
        self._window: list[Tuple] | None = None

    def set_context(self, tuples: list[Tuple] | None) -> None:
        """The tuples that emits without anchors are anchored to (None: no window)."""
        self._window = tuples

    def emit(self, values: list, anchors: Tuple | list[Tuple] | None = None,
             stream: str = DEFAULT_STREAM) -> list[int]:
        """Emit, anchored to ``anchors`` or else to the window's tuples."""
        if anchors is None and self._anchor:
            anchors = self._window
        return self._delegate.emit(values, anchors, stream)

    def emit_direct(self, task: int, values: list, anchors: Tuple | list[Tuple] | None = None,
                    stream: str = DEFAULT_STREAM) -> None:
        """Emit on a direct stream, anchored as ``emit``."""
        if anchors is None and self._anchor:
            anchors = self._window
        self._delegate.emit_direct(task, values, anchors, stream)

    def ack(self, tup: Tuple) -> None:
        """Ack an input (windows ack their tuples themselves when they expire)."""
        self._delegate.ack(tup)

    def fail(self, tup: Tuple) -> None:
        """Fail an input."""
        self._delegate.fail(tup)

    def reset_timeout(self, tup: Tuple) -> None:
        """Restart the message timeout of ``tup``'s trees."""
        self._delegate.reset_timeout(tup)

    def report_error(self, error: BaseException) -> None:
        """Report an error of this component."""
        self._delegate.report_error(error)
