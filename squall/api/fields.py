"""Ordered field names of a stream."""

from __future__ import annotations

from collections.abc import Iterable, Iterator


class Fields:
    """Ordered, hashable list of field names, as Storm's ``Fields``.

    >>> f = Fields("word", "count")
    >>> f.index("count")
    1
    >>> list(f)
    ['word', 'count']
    """

    __slots__ = ("_names", "_index")

    def __init__(self, *names: str | Iterable[str]) -> None:
        flat: list[str] = []
        for name in names:
            if isinstance(name, str):
                flat.append(name)
            elif isinstance(name, (list, tuple, Fields)):
                flat.extend(name)
            else:
                raise ValueError(f"field names must be non-empty strings, got {name!r}")
        for name in flat:
            if not isinstance(name, str) or not name:
                raise ValueError(f"field names must be non-empty strings, got {name!r}")
        self._names: tuple[str, ...] = tuple(flat)
        self._index = {name: i for i, name in enumerate(self._names)}
        if len(self._index) != len(self._names):
            dupes = sorted({n for n in self._names if self._names.count(n) > 1})
            raise ValueError(f"duplicate field names {dupes} in Fields{self._names}")

    def index(self, name: str) -> int:
        """Position of ``name``; raises ``KeyError`` naming the known fields."""
        try:
            return self._index[name]
        except KeyError:
            raise KeyError(f"no field {name!r} in {self!r}") from None

    def contains(self, name: str) -> bool:
        """True if ``name`` is one of the fields."""
        return name in self._index

    def select(self, selector: Fields, values: list) -> list:
        """The values of the fields named by ``selector``, in its order."""
        return [values[self._index[name]] for name in selector._names]

    def to_list(self) -> list[str]:
        """The field names as a list."""
        return list(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __getitem__(self, i: int) -> str:
        return self._names[i]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Fields) and other._names == self._names

    def __hash__(self) -> int:
        return hash(self._names)

    def __repr__(self) -> str:
        return "Fields(" + ", ".join(repr(n) for n in self._names) + ")"

    def __getstate__(self) -> tuple[str, ...]:
        return self._names

    def __setstate__(self, names: tuple[str, ...]) -> None:
        self._names = names
        self._index = {name: i for i, name in enumerate(names)}
