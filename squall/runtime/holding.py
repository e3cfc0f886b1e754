"""A bolt that keeps input of its own beyond its task's queue: ``HoldingBoltTask``.

A ``ShellBolt`` hands each tuple to a subprocess and acks it later, when the subprocess
answers: between the two, the tuple has left the task's receive queue but is still input
not handled. A bolt that says so (``held_input()``: how many it holds; ``input_room()``:
how many more it may take now) runs in a ``HoldingBoltTask``, which

- takes no more from its queue than ``input_room()`` allows, so the rest waits in the
  receive queue, where it fills the queue and throttles the spouts (backpressure), as a
  Storm executor blocked in ``execute`` does;
- reports ``held_input()``, which the round adds to the task's queue for the spouts' gate
  (``round.Round.pressure``) and the load-aware shuffle adds to the load it reads
  (``assembly.load_awareness``).

Both methods are called on the task's thread.
"""

from __future__ import annotations

from typing import Any

from squall.runtime.tasks import BoltTask


def holds_input(bolt: Any) -> bool:
    """True when ``bolt`` says what it holds beyond its queue (see the module)."""
    return callable(getattr(bolt, "input_room", None)) and callable(getattr(bolt, "held_input", None))


class HoldingBoltTask(BoltTask):
    """A ``BoltTask`` whose bolt holds input of its own (see the module's docstring)."""

    def process(self, budget: int) -> int:
        """Handle up to ``budget`` queued tuples, no more than the bolt has room for."""
        bolt: Any = self.bolt  # a bolt that ``holds_input``: checked when the task was made
        room = int(bolt.input_room())
        if room <= 0:
            return 0
        return BoltTask.process(self, min(budget, room))

    def held_input(self) -> int:
        """Tuples the bolt took from the queue and has not acked or failed yet."""
        bolt: Any = self.bolt
        return int(bolt.held_input())
