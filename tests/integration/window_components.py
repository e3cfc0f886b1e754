"""Windowed bolts and sinks shared by the window tests (importable: pickled by reference)."""

from __future__ import annotations

from squall import Bolt, Fields, StatefulWindowedBolt, WindowedBolt
from tests.integration.components import record


class WindowRecorder(WindowedBolt):
    """Records each window (values of ``field`` in the window, new and expired) and emits its sum."""

    def __init__(self, tag: str = "window", field: str = "value") -> None:
        super().__init__()
        self.tag = tag
        self.field = field

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, window):
        values = [t[self.field] for t in window.get()]
        record(self.tag, {
            "values": values,
            "new": [t[self.field] for t in window.get_new()],
            "expired": [t[self.field] for t in window.get_expired()],
            "start": window.start_timestamp,
            "end": window.end_timestamp,
        })
        self.collector.emit([sum(v for v in values if isinstance(v, (int, float)))])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("sum"))


class StatefulWindowSum(StatefulWindowedBolt):
    """Keeps a running total of every window's sum in its state."""

    def __init__(self, tag: str = "swindow") -> None:
        super().__init__()
        self.tag = tag

    def prepare(self, conf, context, collector):
        self.collector = collector

    def init_state(self, state):
        self.state = state
        record(f"{self.tag}.init", state.get("total", 0))

    def execute(self, window):
        values = [t["value"] for t in window.get()]
        self.state.put("total", self.state.get("total", 0) + sum(values))
        record(self.tag, values)


class Sink(Bolt):
    """Records and acks (or fails, when ``fail`` is set) every input."""

    def __init__(self, tag: str = "sink", fail: bool = False) -> None:
        self.tag = tag
        self.fail = fail

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        record(self.tag, (tup.stream, list(tup.values)))
        if self.fail:
            self.collector.fail(tup)
        else:
            self.collector.ack(tup)
