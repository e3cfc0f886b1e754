"""Driving a seekable spout by hand (no cluster): a task context and collector, pumping
``next_tuple`` on simulated time, and the seek scenario every source's tests run."""

from __future__ import annotations

import time
from typing import Any

import msgpack

from squall.connectors.reliable import DEAD_LETTER_STREAM


class Context:
    """What a spout reads of its task: component, task index among ``tasks``, gauges."""

    def __init__(self, component: str = "src", index: int = 0, tasks: int = 1) -> None:
        self.component_id, self.topology_name = component, "t"
        self._tasks = list(range(1, tasks + 1))
        self.task_id = self._tasks[index]
        self.gauges: dict = {}

    def get_this_task_index(self) -> int:
        return self._tasks.index(self.task_id)

    def get_this_component_tasks(self) -> list[int]:
        return list(self._tasks)

    def register_gauge(self, name: str, fn: Any) -> None:
        self.gauges[name] = fn


class Collector:
    """Records emits as ``(stream, values, msg_id)`` and reported errors."""

    def __init__(self) -> None:
        self.emitted: list[tuple[str, list, Any]] = []
        self.errors: list[BaseException] = []

    def emit(self, values: list, stream: str = "default", msg_id: Any = None) -> list:
        self.emitted.append((stream, list(values), msg_id))
        return []

    def report_error(self, error: BaseException) -> None:
        self.errors.append(error)

    def records(self, start: int = 0) -> list[tuple[list, Any]]:
        """(values, msg id) of the default stream's emits from ``start`` on."""
        return [(v, m) for s, v, m in self.emitted[start:] if s == "default"]

    def letters(self) -> list:
        return [m for s, _, m in self.emitted if s == DEAD_LETTER_STREAM]


def opened(spout: Any, conf: dict | None = None, **context: Any) -> Collector:
    """``spout`` opened as task ``index`` of ``tasks`` with a fresh collector."""
    out = Collector()
    spout.open({"topology.message.timeout.secs": 30, **(conf or {})}, Context(**context), out)
    return out


def pump(spout: Any, out: Collector, n: int, sim: Any, step: float = 0.05, timeout: float = 30.0) -> bool:
    """``next_tuple`` until ``n`` records are on the default stream (simulated time moves by
    ``step`` per call; a broker or Spark gets real time)."""
    deadline = time.monotonic() + timeout
    while len(out.records()) < n and time.monotonic() < deadline:
        spout.next_tuple()
        sim.advance(step)
        if len(out.records()) < n:
            time.sleep(0.001)
    return len(out.records()) == n


def quiet(spout: Any, out: Collector, sim: Any, calls: int = 100, step: float = 0.05) -> list:
    """``next_tuple`` ``calls`` more times; the records emitted meanwhile (none expected)."""
    before = len(out.emitted)
    for _ in range(calls):
        spout.next_tuple()
        sim.advance(step)
    return out.records(before)


def roundtrip(position: Any) -> Any:
    """``position`` as a checkpoint stores it: through msgpack and back."""
    return msgpack.unpackb(msgpack.packb(position, use_bin_type=True), raw=False)


def seek_back(spout: Any, out: Collector, sim: Any, first: int, total: int) -> tuple[Any, list]:
    """Emit ``first`` records, take the position, emit the rest (``total``), fail one after the
    position (its retry is pending), then seek back: returns the position and the records that
    followed it, which the caller expects again."""
    assert pump(spout, out, first, sim), f"only {len(out.records())} of {first} records came"
    position = roundtrip(spout.position())
    assert pump(spout, out, total, sim), f"only {len(out.records())} of {total} records came"
    after = out.records(first)
    assert len(after) == total - first
    if after:
        spout.fail(after[0][1])  # a retry would emit it once more: the seek must drop it
    spout.seek(position)
    return position, after
