"""A worker's periodic actions: message timeouts, tick tuples, metric windows.

``Timers`` is a fixed-rate schedule on the topology's clock (simulated under
``squall.testing.simulated_time``): the loop asks it, between rounds, to fire what is due
(``fire``) and how long it may sleep (``next_due``). ``worker_timers`` makes the worker's
own timers from its configuration and tasks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from squall.api.fields import Fields
from squall.api.tuple import SYSTEM_COMPONENT, TICK_STREAM, Tuple
from squall.runtime.host import Task
from squall.runtime.tasks import PENDING_BUCKETS, AckerTask, BoltTask, SpoutTask

TIMER_SLACK = 1e-9  # float sums of intervals must not make a timer a round late
EMPTY = Fields()


class Timer:
    """A periodic action of the loop."""

    __slots__ = ("due", "interval", "action")

    def __init__(self, due: float, interval: float, action: Callable[[], Any]) -> None:
        self.due = due
        self.interval = interval
        self.action = action


class Timers:
    """Periodic actions at a fixed rate, as Storm's recurring timers."""

    def __init__(self) -> None:
        self.timers: list[Timer] = []

    def every(self, now: float, interval: float, action: Callable[[], Any]) -> None:
        """Run ``action`` every ``interval`` seconds, the first time at ``now + interval``."""
        self.timers.append(Timer(now + interval, interval, action))

    def fire(self, now: float) -> int:
        """Run the actions due at ``now``; how many ran.

        A late call does not shift later firings; missed ones are skipped rather than fired
        in a burst.
        """
        fired = 0
        for timer in self.timers:
            if now + TIMER_SLACK >= timer.due:
                timer.due += timer.interval
                if timer.due <= now + TIMER_SLACK:
                    timer.due = now + timer.interval
                timer.action()
                fired += 1
        return fired

    def next_due(self, now: float, longest: float) -> float:
        """Seconds from ``now`` until the next action is due, at most ``longest``."""
        wait = longest
        for timer in self.timers:
            wait = min(wait, max(0.0, timer.due - now))
        return wait


def added_spout_timeouts(timers: Timers, now: float, conf: dict, acking: bool, spouts: list[SpoutTask],
                         current: Callable[[SpoutTask], bool]) -> None:
    """Rotate the pending maps of spout tasks added to a running worker (a live move).

    ``worker_timers`` rotates the tasks a worker was built with only: without this a tree
    of a task added live that is lost downstream (a worker SIGKILLed holding it) never
    times out, so its message is never failed nor replayed. ``current(task)``: still the
    worker's (a retired task's pending went with it).
    """
    if not spouts or not acking or not conf.get("topology.enable.message.timeouts", True):
        return
    timeout = float(conf.get("topology.message.timeout.secs") or 30)

    def expire() -> None:
        for t in spouts:
            if current(t):
                t.expire()
    timers.every(now, timeout / (PENDING_BUCKETS - 1), expire)


def worker_timers(timers: Timers, now: float, conf: dict, acking: bool, tasks: Iterable[Task],
                  threads: list[Any], system_task: int) -> None:
    """Add a worker's timers: pending rotation (timeouts), tick tuples, metric windows.

    A spout on a thread of its own (in ``threads``) rotates its pending map on that thread.
    """
    tasks = list(tasks)
    if acking and conf.get("topology.enable.message.timeouts", True):
        timeout = float(conf.get("topology.message.timeout.secs") or 30)
        own = {th.task.task_id for th in threads}
        expirable = [t for t in tasks
                     if isinstance(t, (SpoutTask, AckerTask)) and t.task_id not in own]
        posted = [th for th in threads if th.spout is not None]
        if expirable or posted:
            def expire() -> None:
                for t in expirable:
                    t.expire()
                for th in posted:
                    th.post(th.spout.expire)
            timers.every(now, timeout / (PENDING_BUCKETS - 1), expire)
    for task in tasks:
        if isinstance(task, BoltTask):
            freq = task.conf.get("topology.tick.tuple.freq.secs")
            if freq:
                timers.every(now, float(freq), _ticker(task, system_task))
    window = float(conf.get("squall.metrics.window.secs") or 10)

    def roll() -> None:
        for task in tasks:
            task.metrics.roll_window(window)
    timers.every(now, window, roll)


def _ticker(task: Task, system_task: int) -> Callable[[], None]:
    def tick() -> None:
        task.inbox.append(Tuple([], EMPTY, SYSTEM_COMPONENT, TICK_STREAM, system_task, None))
    return tick
