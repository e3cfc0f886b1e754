"""``TupleWindow``: what a windowed bolt's ``execute`` receives."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


class TupleWindow:
    """The tuples of one evaluated window.

    ``get()`` the tuples in the window (oldest first), ``get_new()`` those added since
    the last evaluation, ``get_expired()`` those dropped since it; ``start_timestamp`` and
    ``end_timestamp`` in ms (``start_timestamp`` is None for count windows, whose
    ``end_timestamp`` is the evaluation time).
    """

    __slots__ = ("_tuples", "_new", "_expired", "start_timestamp", "end_timestamp")

    def __init__(self, tuples: list, new: list, expired: list,
                 start_timestamp: int | None = None, end_timestamp: int | None = None) -> None:
        self._tuples = tuples
        self._new = new
        self._expired = expired
        self.start_timestamp = start_timestamp
        self.end_timestamp = end_timestamp

    def get(self) -> list:
        """The tuples in the window, oldest first."""
        return self._tuples

    def get_new(self) -> list:
        """Tuples added since the last evaluation."""
        return self._new

    def get_expired(self) -> list:
        """Tuples dropped since the last evaluation."""
        return self._expired

    def get_start_timestamp(self) -> int | None:
        """Storm's name for ``start_timestamp``."""
        return self.start_timestamp

    def get_end_timestamp(self) -> int | None:
        """Storm's name for ``end_timestamp``."""
        return self.end_timestamp

    def __iter__(self) -> Iterator[Any]:
        return iter(self._tuples)

    def __len__(self) -> int:
        return len(self._tuples)

    def __repr__(self) -> str:
        return (f"TupleWindow({len(self._tuples)} tuples, {len(self._new)} new, "
                f"{len(self._expired)} expired, start={self.start_timestamp}, "
                f"end={self.end_timestamp})")
