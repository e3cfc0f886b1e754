"""The tuple a bolt receives."""

from __future__ import annotations

from typing import Any

from squall.api.fields import Fields

try:
    import cython
except ImportError:  # plain Python without Cython installed: the decorators change nothing
    class _NoCython:
        compiled = False

        @staticmethod
        def freelist(size: int) -> Any:
            return lambda cls: cls

        @staticmethod
        def cclass(cls: Any) -> Any:
            return cls

    cython = _NoCython()  # type: ignore[assignment]

SYSTEM_COMPONENT = "__system"
TICK_STREAM = "__tick"
DEFAULT_STREAM = "default"


class MessageId:
    """Which tuple trees a tuple belongs to: root id -> this tuple's edge value."""

    __slots__ = ("anchors_to_ids",)

    def __init__(self, anchors_to_ids: dict[int, int] | None) -> None:
        self.anchors_to_ids: dict[int, int] = anchors_to_ids or {}

    def roots(self) -> list[int]:
        """Root ids of the spout tuples this tuple descends from."""
        return list(self.anchors_to_ids)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MessageId) and other.anchors_to_ids == self.anchors_to_ids

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.anchors_to_ids.items())))

    def __repr__(self) -> str:
        inner = ", ".join(f"{r:x}:{v:x}" for r, v in self.anchors_to_ids.items())
        return "MessageId{" + inner + "}"


# Compiled, recycled through a free list: every queued or fused hop makes one and frees it.
# Cython applies ``freelist`` only from here, with ``cclass``: the same decorator in
# tuple.pxd alone was ignored, and each Tuple went through the allocator and the GC's lists.
@cython.freelist(512)
@cython.cclass
class Tuple:
    """A received tuple: values with their stream's fields and where they came from.

    Values are read by position (``tup[0]``) or by field name (``tup["word"]``).
    """

    __slots__ = ("values", "fields", "component", "stream", "task", "_nroots", "_root", "_edge",
                 "_idmap", "_ack_val", "_done", "_t0")

    def __init__(
        self,
        values: list,
        fields: Fields,
        component: str,
        stream: str,
        task: int,
        ids: dict[int, int] | None = None,
    ) -> None:
        self.values = values
        self.fields = fields
        self.component = component
        self.stream = stream
        self.task = task
        # the trees it belongs to: none (0), one root with this tuple's edge in two fixed
        # fields (1, the common case: no dict per tuple), or a {root: edge} map (2)
        self._nroots = 0
        self._root = 0
        self._edge = 0
        self._idmap: dict[int, int] | None = None
        self._ids = ids
        # XOR of the edge ids of tuples anchored to this one; sent to the acker on ack.
        self._ack_val = 0
        self._done = False
        self._t0 = 0.0

    @property
    def _ids(self) -> dict[int, int] | None:
        """Root id -> this tuple's edge value for each tree it belongs to (None: untracked)."""
        if self._nroots == 1:
            return {self._root: self._edge}
        return self._idmap

    @_ids.setter
    def _ids(self, ids: dict[int, int] | None) -> None:
        self._idmap = ids
        self._nroots = 2 if ids else 0

    @property
    def id(self) -> MessageId:
        """The tuple's message id (its roots and edge values; empty when untracked)."""
        return MessageId(self._ids)

    def is_tick(self) -> bool:
        """True for the system's tick tuples."""
        return self.stream == TICK_STREAM and self.component == SYSTEM_COMPONENT

    def get_value_by_field(self, name: str) -> Any:
        """The value of field ``name``."""
        return self.values[self.fields.index(name)]

    def select(self, fields: Fields) -> list:
        """The values of ``fields``, in that order."""
        return self.fields.select(fields, self.values)

    def __getitem__(self, key: int | str) -> Any:
        if isinstance(key, str):
            return self.values[self.fields.index(key)]
        return self.values[key]

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.values)

    def __repr__(self) -> str:
        return (
            f"Tuple(component={self.component!r}, stream={self.stream!r}, task={self.task}, "
            f"values={self.values!r})"
        )


def new_tuple(values: list, fields: Fields, component: str, stream: str, task: int,
              ids: dict[int, int] | None) -> Tuple:
    """``Tuple(...)`` for the runtime's hot path: compiled, it fills the C fields directly."""
    t = Tuple.__new__(Tuple)
    t.values = values
    t.fields = fields
    t.component = component
    t.stream = stream
    t.task = task
    t._nroots = 2 if ids else 0
    t._idmap = ids
    if not cython.compiled:  # compiled, a new Tuple's C fields are zero already (tp_new)
        t._root = 0
        t._edge = 0
        t._ack_val = 0
        t._done = False
        t._t0 = 0.0
    return t


def new_tuple1(values: list, fields: Fields, component: str, stream: str, task: int,
               root: int, edge: int) -> Tuple:
    """``new_tuple`` for a tuple of one tree: ``root`` and its ``edge`` in the fixed fields."""
    t = Tuple.__new__(Tuple)
    t.values = values
    t.fields = fields
    t.component = component
    t.stream = stream
    t.task = task
    t._nroots = 1
    t._root = root
    t._edge = edge
    if not cython.compiled:  # compiled, tp_new made these None and zero (free list included)
        t._idmap = None
        t._ack_val = 0
        t._done = False
        t._t0 = 0.0
    return t
