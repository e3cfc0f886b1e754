"""storm-kafka-client's ``OffsetManager``: which offset of one partition may be committed.

Pure bookkeeping, no client calls: the spout records what it emitted and what was acked,
asks ``find_next_commit_offset`` at each commit period, and calls ``commit`` once Kafka
confirmed. Only the highest offset below which every emitted record is acked is committed,
so a failed record holds its partition's commit back until its retry is acked (or it is
given up). Offsets that were never emitted (compacted away, transaction markers) between an
acked offset and the last commit do not hold it back.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from typing import NamedTuple


class TopicPartition(NamedTuple):
    """A partition of a topic (sorted by topic, then partition, as Storm sorts them)."""

    topic: str
    partition: int


class OffsetManager:
    """Emitted, acked and committed offsets of one partition (Storm's ``OffsetManager``)."""

    def __init__(self, tp: TopicPartition, initial_fetch_offset: int) -> None:
        self.tp = tp
        self.committed_offset = initial_fetch_offset  # the next offset a restart reads
        self.committed = False                        # has this manager ever committed
        self.latest_emitted_offset: int | None = None
        self._emitted: list[int] = []                 # sorted; emits mostly come in order
        self._acked: set[int] = set()

    def add_to_ack_msgs(self, offset: int) -> None:
        """``offset``'s tuple tree completed (or it needs no tree: a null tuple)."""
        self._acked.add(offset)

    def add_to_emit_msgs(self, offset: int) -> None:
        """``offset`` was emitted (retries of an emitted offset are not added again)."""
        emitted = self._emitted
        if not emitted or offset > emitted[-1]:
            emitted.append(offset)
            if self.latest_emitted_offset is None or offset > self.latest_emitted_offset:
                self.latest_emitted_offset = offset
            return
        else:
            i = bisect_left(emitted, offset)
            if i == len(emitted) or emitted[i] != offset:
                insort(emitted, offset)
        if self.latest_emitted_offset is None or offset > self.latest_emitted_offset:
            self.latest_emitted_offset = offset

    def num_uncommitted_offsets(self) -> int:
        """Offsets emitted and not yet committed (what ``max_uncommitted_offsets`` bounds)."""
        return len(self._emitted)

    def nth_uncommitted_offset_after_committed_offset(self, index: int) -> int:
        """The ``index``-th (1-based) emitted offset not yet committed; IndexError past the end."""
        if index < 1 or index > len(self._emitted):
            raise IndexError(f"{self.tp}: {len(self._emitted)} uncommitted offsets, asked for #{index}")
        return self._emitted[index - 1]

    def contains(self, offset: int) -> bool:
        """Whether ``offset`` is acked and not yet committed."""
        return offset in self._acked

    def contains_emitted(self, offset: int) -> bool:
        """Whether ``offset`` is emitted and not yet committed."""
        i = bisect_left(self._emitted, offset)
        return i < len(self._emitted) and self._emitted[i] == offset

    def find_next_commit_offset(self) -> int | None:
        """The offset to commit (one past the last of the acked run), or None if none is ready."""
        found = False
        next_commit = self.committed_offset
        for offset in sorted(self._acked):
            if offset == next_commit:
                found, next_commit = True, offset + 1
            elif offset > next_commit:
                if self.contains_emitted(next_commit):
                    break  # a gap of emitted, unacked offsets: wait for them
                # next_commit was never emitted, so it is not in the topic (compacted away):
                # skip to the next emitted offset if that one is acked
                i = bisect_left(self._emitted, next_commit)
                if i < len(self._emitted) and self._emitted[i] == offset:
                    found, next_commit = True, offset + 1
                else:
                    break
            else:
                raise AssertionError(f"{self.tp}: offset {offset} is acked below the next commit "
                                     f"offset {next_commit}: the spout's ack or emit logic is wrong")
        return next_commit if found else None

    def commit(self, offset: int) -> int:
        """Kafka committed ``offset``: forget what lies below it; returns how many acked offsets."""
        self.committed = True
        self.committed_offset = offset
        done = [o for o in self._acked if o < offset]
        self._acked.difference_update(done)
        del self._emitted[:bisect_left(self._emitted, offset)]
        return len(done)

    def __repr__(self) -> str:
        return (f"OffsetManager({self.tp.topic}-{self.tp.partition}, committed={self.committed_offset}, "
                f"emitted={len(self._emitted)}, acked={len(self._acked)})")
