"""Which part of a source is safely done: a watermark over out-of-order acks (pure).

Records are read in order, each spanning ``[start, end)`` (bytes of a file, rows of a
DataFrame); they complete in any order. The watermark is the end of the longest prefix of
records all done, so a restart from it replays every record not done, and the ones done
after a gap again (at-least-once).
"""

from __future__ import annotations

from collections import deque


class Watermark:
    """The committed position of one ordered source, advanced only over done records."""

    def __init__(self, position: int = 0) -> None:
        self.position = position  # everything before it is done
        self.read = position      # where reading goes on
        self._open: deque[tuple[int, int]] = deque()  # records read, not yet under the mark
        self._done: set[int] = set()  # starts of records done above the mark

    def __len__(self) -> int:
        """Records read and not yet under the watermark."""
        return len(self._open)

    def emitted(self, start: int, end: int) -> None:
        """A record ``[start, end)`` was read (records come in order, without gaps)."""
        if start != self.read or end <= start:
            raise ValueError(f"record [{start}, {end}) does not follow position {self.read}")
        self._open.append((start, end))
        self.read = end

    def done(self, start: int) -> bool:
        """The record starting at ``start`` is done; True if the watermark moved."""
        if start < self.position or start >= self.read:
            return False  # under the mark already (a duplicate verdict), or not read (since a seek)
        self._done.add(start)
        moved = False
        open_ = self._open
        while open_ and open_[0][0] in self._done:
            first, end = open_.popleft()
            self._done.discard(first)
            self.position = end
            moved = True
        return moved

    def seek(self, position: int) -> None:
        """Reading goes on at ``position``, a committed checkpoint's: everything before it is done.

        Records read past it are dropped (they are read again); the mark moves to it, up or down.
        """
        if position < 0:
            raise ValueError(f"cannot seek to negative position {position}")
        self.position = self.read = position
        self._open.clear()
        self._done.clear()
