"""Bolts for the chaining tests, in an importable module so cloudpickle pickles them by reference."""

from __future__ import annotations

import sys
import threading
from collections import defaultdict
from typing import Any

from squall import BasicBolt, Bolt, FailedException, Fields

SEEN: dict[str, list] = defaultdict(list)
_lock = threading.Lock()


def note(key: str, value: Any) -> None:
    with _lock:
        SEEN[key].append(value)


def in_call_of(name: str) -> bool:
    """True when a frame of a function called ``name`` is on the stack (a chained hop's caller)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == name:
            return True
        frame = frame.f_back
    return False


class Step(BasicBolt):
    """Appends its name to the value; fails (FailedException) ``fail_on``, raises on ``raise_on``.

    Notes whether it ran inside the spout's ``next_tuple`` (fused) and what it emitted.
    """

    def __init__(self, name: str, fail_on: Any = None, raise_on: Any = None) -> None:
        self.name = name
        self.fail_on = fail_on
        self.raise_on = raise_on

    def execute(self, tup, collector):
        note(f"{self.name}.inside_next_tuple", in_call_of("next_tuple"))
        value = tup[0]
        if value == self.fail_on:
            raise FailedException(f"{self.name} fails {value!r}")
        if value == self.raise_on:
            raise RuntimeError(f"{self.name} cannot take {value!r}")
        note(f"{self.name}.out", value)
        collector.emit([value])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("value"))


class HoldStep(Bolt):
    """A rich bolt that declares itself chainable: forwards and acks all but ``hold`` (never acked)."""

    chainable = True

    def __init__(self, hold: Any) -> None:
        self.hold = hold

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        if tup[0] == self.hold:
            note("hold.held", tup[0])
            return
        self.collector.emit(tup.values, anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("value"))


GATE = threading.Event()
ENTERED = threading.Event()


def wait_on_the_database() -> None:
    """Where a blocked bolt waits (the stuck report must point here)."""
    GATE.wait(30)


class Blocking(BasicBolt):
    """Blocks in ``execute`` on ``block`` until ``GATE`` opens (a bolt waiting on a database)."""

    def __init__(self, block: Any) -> None:
        self.block = block

    def execute(self, tup, collector):
        if tup[0] == self.block:
            ENTERED.set()
            wait_on_the_database()
        collector.emit([tup[0]])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("value"))


class Spends(BasicBolt):
    """Spends ``ms`` of simulated time in each ``execute`` (moves the simulated clock)."""

    def __init__(self, ms: float) -> None:
        self.ms = ms

    def execute(self, tup, collector):
        from squall.runtime import clock

        sim = clock.simulated()
        if sim is not None and self.ms:
            sim.advance(self.ms / 1000.0)
        collector.emit([tup[0]])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("value"))


class Tally(BasicBolt):
    """Notes (its own task, the emitting task) of every tuple it takes."""

    def prepare(self, conf, context):
        self.task = context.task_id

    def execute(self, tup, collector):
        note("tally", (self.task, tup.task))
