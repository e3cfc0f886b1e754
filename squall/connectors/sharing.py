"""Which of a spout's tasks reads a file: ``owner_of(name, tasks)``.

``FileSpout`` and ``DataFrameSpout`` share their files among their tasks by name alone: every
task decides alone, a restart or another process decides the same, and ``merge_positions``
gives each file's position to the task that reads it after a rescale.

``stable_hash(name) % tasks`` piled similar names onto a few tasks: CRC-32 is linear, so
``part-00000.txt``..``part-00039.txt`` went 8,8,8,8,2,2,2,2 over 8 tasks and 30 daily files
8,8,7,2,2,2,1,0. A finaliser on the CRC (murmur3's fmix32) only makes the place random, and
a task's share binomial (those 40 files on 8 tasks: 9 on one task, 2 on another). Names of
files are mostly a fixed text with numbers that count (a part, a day, an hour, a host), so
the numbers place a file: the fixed text (each run of digits masked) hashes to a point of
the circle [0, 2**64), each run of digits moves it by its value times a constant of its own
(the golden ratio's for the last run), and the point's ``tasks``-th of the circle is the
owner. The points of counting numbers are a Weyl sequence, about as even as points on a
circle get: those 40 files go 6,6,5,5,5,5,4,4 on 8 tasks, the 30 days 5,5,4,4,3,3,3,3.
Names without digits keep the hash's random place.

Changing this function moves files between tasks (the move from ``stable_hash % tasks`` did).
Progress files are one per file, so reading goes on from them whichever task owns a file; in
exactly-once mode a rescale's ``merge_positions`` gives each entry to the new owner, and at the
same task count a task's ``seek`` hands a listed file it no longer owns over (its progress
catches up to the committed offset). A new owner that reads such a file before its old owner's
seek wrote that reads the lines between the two once more: acks of the last commit that the
old run had not written to the progress when it stopped.
"""

from __future__ import annotations

import re
from functools import lru_cache

from squall.runtime.hashing import stable_hash

_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF
_DIGITS = re.compile("([0-9]+)")
_GOLDEN = 0x9E3779B97F4A7C15  # 2**64 / the golden ratio: the evenest step around the circle


def _fmix32(h: int) -> int:
    """murmur3's finaliser: every bit of ``h`` moves every bit of the result."""
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK32
    return h ^ (h >> 16)


def _splitmix64(x: int) -> int:
    """splitmix64's output for counter ``x``: a fixed, well-mixed 64-bit constant."""
    x = (x + _GOLDEN) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


# the step of each run of digits, counted from the name's end (the last run counts the most
# often: part numbers, days); odd, so no run's values fold onto fewer points
_STEPS = [_GOLDEN] + [_splitmix64(k) | 1 for k in range(1, 16)]


@lru_cache(maxsize=1 << 16)
def owner_of(name: str, tasks: int) -> int:
    """The index (``0 <= index < tasks``) of the task that reads file ``name``.

    A function of ``name`` and ``tasks`` only, the same in every process, run and platform;
    similar names (numbered, dated) spread evenly over the tasks (module docs).
    """
    if tasks < 1:
        raise ValueError(f"owner_of: tasks must be at least 1, got {tasks}")
    parts = _DIGITS.split(name)  # text, digits, text, ...: one pass over the name
    point = _fmix32(stable_hash("\0".join(parts[0::2]))) << 32
    for k, run in enumerate(reversed(parts[1::2])):
        # the last 18 digits: a long run's value stays a 64-bit int, and counting moves them
        point += int(run[-18:]) * _STEPS[k % len(_STEPS)]
    return ((point & _MASK64) * tasks) >> 64
