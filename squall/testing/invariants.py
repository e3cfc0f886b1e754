"""At-least-once, checked: a replayable sequence spout and a checker bolt.

``SequenceSpout(out_dir, keys=4, count=500)`` emits ``[key, seq]`` for seq 0..count-1 of
each key, with msg id ``(key, seq)``, replaying whatever fails (it never gives a message
up). ``SequenceChecker(out_dir)`` records every ``[key, seq]`` it receives. Both write to
files in ``out_dir``, so they work on ``LocalCluster`` and in Spark's worker processes alike,
and survive the processes they ran in. ``check(out_dir, keys, count)`` then says what was
lost, duplicated or out of order, per key.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from squall.api.components import BasicBolt, OutputFieldsDeclarer, Spout
from squall.api.fields import Fields


class SequenceSpout(Spout):
    """Emits ``[key, seq]`` (msg id ``(key, seq)``) and replays every failure.

    Messages acked by an earlier process of this spout (files in ``out_dir``) are not
    emitted again after a restart: the spout resumes where acking left off.
    """

    def __init__(self, out_dir: str, keys: int = 4, count: int = 500, rate: float = 0.0) -> None:
        self.out_dir = out_dir
        self.keys = keys
        self.count = count
        self.rate = rate  # new messages per second per task (0: as fast as allowed)

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        """Pick this task's keys; skip what earlier processes saw acked."""
        self.collector = collector
        index, tasks = context.get_this_task_index(), len(context.get_this_component_tasks())
        done = set(_read(self.out_dir, "acked"))
        self.todo = [(k, s) for s in range(self.count) for k in range(self.keys)
                     if k % tasks == index and (k, s) not in done]
        self.todo.reverse()
        self._due = time.monotonic()
        self._acked = _writer(self.out_dir, "acked", context.task_id)
        self._failed = _writer(self.out_dir, "failed", context.task_id)

    def next_tuple(self) -> None:
        """Emit the next message, replays first (new ones at most ``rate`` per second)."""
        if self.todo:
            if self.rate:
                now = time.monotonic()
                if now < self._due:
                    return
                self._due = max(self._due + 1.0 / self.rate, now - 1.0)
            key, seq = self.todo.pop()
            self.collector.emit([key, seq], msg_id=(key, seq))

    def ack(self, msg_id: Any) -> None:
        """Record the ack."""
        self._acked.write(f"{msg_id[0]} {msg_id[1]}\n")
        self._acked.flush()

    def fail(self, msg_id: Any) -> None:
        """Record the failure and replay the message."""
        self._failed.write(f"{msg_id[0]} {msg_id[1]}\n")
        self._failed.flush()
        self.todo.append((msg_id[0], msg_id[1]))

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """``key``, ``seq``."""
        declarer.declare(Fields("key", "seq"))


class SequenceChecker(BasicBolt):
    """Records every ``[key, seq]`` it receives (fields-group it on ``key``)."""

    def __init__(self, out_dir: str) -> None:
        self.out_dir = out_dir

    def prepare(self, conf: dict, context: Any) -> None:
        """Open this task's record."""
        self._seen = _writer(self.out_dir, "seen", context.task_id)

    def execute(self, tup: Any, collector: Any) -> None:
        """Record the message (acked after, as a BasicBolt)."""
        self._seen.write(f"{tup[0]} {tup[1]}\n")
        self._seen.flush()


@dataclass
class Report:
    """What ``check`` found: ``lost`` must be empty under at-least-once."""

    acked: int
    failed: int
    received: int
    lost: list[tuple[int, int]] = field(default_factory=list)
    unacked: list[tuple[int, int]] = field(default_factory=list)
    duplicates: int = 0
    out_of_order: int = 0

    def __str__(self) -> str:
        return (f"acked {self.acked}, failed {self.failed} (replayed), received {self.received}, "
                f"duplicates {self.duplicates}, out of order {self.out_of_order}, "
                f"lost {len(self.lost)}, never acked {len(self.unacked)}")


def check(out_dir: str, keys: int, count: int) -> Report:
    """Compare what the spouts acked and the checkers received with every message sent."""
    acked = set(_read(out_dir, "acked"))
    failed = list(_read(out_dir, "failed"))
    seen_order: dict[int, list[int]] = defaultdict(list)
    received = 0
    for key, seq in _read(out_dir, "seen"):
        seen_order[key].append(seq)
        received += 1
    expected = {(k, s) for k in range(keys) for s in range(count)}
    seen = {(k, s) for k, seqs in seen_order.items() for s in seqs}
    duplicates = received - len(seen)
    out_of_order = sum(1 for seqs in seen_order.values()
                       for a, b in zip(seqs, seqs[1:], strict=False) if b < a)
    return Report(acked=len(acked), failed=len(failed), received=received,
                  lost=sorted(expected - seen), unacked=sorted(expected - acked),
                  duplicates=duplicates, out_of_order=out_of_order)


def _writer(out_dir: str, kind: str, task: int) -> Any:
    os.makedirs(out_dir, exist_ok=True)
    return open(os.path.join(out_dir, f"{kind}-{os.getpid()}-{task}.txt"), "a")  # noqa: SIM115


def _read(out_dir: str, kind: str) -> Any:
    for f in sorted(Path(out_dir).glob(f"{kind}-*.txt")):
        for line in f.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2:  # a line cut short by a SIGKILL is skipped
                yield int(parts[0]), int(parts[1])


@dataclass
class Tally:
    """What ``tally`` found: both lists empty is exactly-once."""

    lost: list[Any] = field(default_factory=list)  # (item, times missing)
    duplicated: list[Any] = field(default_factory=list)  # (item, times too many)


def tally(expected: Mapping[Any, int], seen: Mapping[Any, int]) -> Tally:
    """Compare how often each item should have been counted with how often it was."""
    lost = sorted((k, n - seen.get(k, 0)) for k, n in expected.items() if seen.get(k, 0) < n)
    dup = sorted((k, n - expected.get(k, 0)) for k, n in seen.items() if n > expected.get(k, 0))
    return Tally(lost, dup)
