"""Reading what the test topology wrote (see ``topology_source``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

# chosen so that the fields grouping gives every count task at least one word at any
# parallelism from 1 to 6 (``test_topology_words``): a test that waits for a given worker's
# count task to record something waits for nothing otherwise
WORDS = ["apple", "olive", "plum", "date", "elder", "fig", "grape"]


def sentence(i: int) -> str:
    n = 3 + i % 4
    return " ".join(WORDS[(i + k * 3) % len(WORDS)] for k in range(n))


def expected_counts(ids) -> Counter:
    counts: Counter = Counter()
    for i in ids:
        counts.update(sentence(i).split())
    return counts


def _lines(out: Path, pattern: str) -> list[list[str]]:
    rows = []
    for f in out.glob(pattern):
        for line in f.read_text().splitlines():
            rows.append(line.split())
    return rows


@dataclass
class Record:
    id: int
    pos: int
    word: str
    version: str
    n: int
    time: float


def acked(out: Path) -> set[int]:
    return {int(r[0]) for r in _lines(out, "acked-*.txt") if len(r) == 1}


def emitted(out: Path) -> list[tuple[int, float]]:
    return [(int(r[0]), float(r[1])) for r in _lines(out, "emitted-*.txt") if len(r) == 2]


def events(out: Path) -> list[tuple[str, float]]:
    return sorted(((r[0], float(r[1])) for r in _lines(out, "events-*.txt") if len(r) == 2),
                  key=lambda e: e[1])


def records(out: Path) -> list[Record]:
    out_rows = []
    for r in _lines(out, "count-*.txt"):
        if len(r) == 6:  # a line cut short by a kill has fewer
            out_rows.append(Record(int(r[0]), int(r[1]), r[2], r[3], int(r[4]), float(r[5])))
    return out_rows


def counts_of_acked(out: Path) -> tuple[set[int], Counter, Counter]:
    """(acked ids, word counts of their records deduped by (id, pos), the expected counts)."""
    ids = acked(out)
    seen: dict[tuple[int, int], str] = {}
    for rec in records(out):
        if rec.id in ids:
            seen[(rec.id, rec.pos)] = rec.word
    return ids, Counter(seen.values()), expected_counts(ids)
