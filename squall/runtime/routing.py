"""Stream groupings: which tasks receive a tuple, computed at emit time (pure)."""

from __future__ import annotations

import random
from collections.abc import Callable

from squall.api.components import CustomStreamGrouping
from squall.api.context import WorkerTopologyContext
from squall.api.fields import Fields
from squall.api.topology import Grouping
from squall.runtime.hashing import hash_values, stable_hash

Router = Callable[[list], list[int]]


class ShuffleRouter:
    """Cycles through the targets in an order reshuffled every cycle (balanced)."""

    __slots__ = ("_singles", "_order", "_pos", "_rng")

    def __init__(self, targets: list[int], seed: int) -> None:
        self._singles = [[t] for t in targets]  # reused: no list allocated per tuple
        self._order = list(self._singles)
        self._rng = random.Random(seed)
        self._rng.shuffle(self._order)
        self._pos = 0

    def __call__(self, values: list) -> list[int]:
        """Target task ids for ``values``."""
        pos = self._pos
        if pos == len(self._order):
            self._rng.shuffle(self._order)
            pos = 0
        self._pos = pos + 1
        return self._order[pos]


class FieldsRouter:
    """Equal values of the grouping fields go to the same task, in every process."""

    __slots__ = ("_singles", "_indexes", "_n")

    def __init__(self, targets: list[int], stream_fields: Fields, fields: Fields) -> None:
        self._singles = [[t] for t in sorted(targets)]
        self._indexes = [stream_fields.index(f) for f in fields]
        self._n = len(targets)

    def __call__(self, values: list) -> list[int]:
        """Target task ids for ``values``."""
        if len(self._indexes) == 1:
            h = stable_hash(values[self._indexes[0]])
        else:
            h = hash_values([values[i] for i in self._indexes])
        return self._singles[h % self._n]


class ConstantRouter:
    """The same targets every time (all and global groupings)."""

    __slots__ = ("_targets",)

    def __init__(self, targets: list[int]) -> None:
        self._targets = targets

    def __call__(self, values: list) -> list[int]:
        """Target task ids for ``values``."""
        return self._targets


class CustomRouter:
    """A user ``CustomStreamGrouping``, with its answers checked."""

    __slots__ = ("_grouping", "_task", "_targets", "_component")

    def __init__(self, grouping: CustomStreamGrouping, task: int, targets: list[int],
                 component: str) -> None:
        self._grouping = grouping
        self._task = task
        self._targets = frozenset(targets)
        self._component = component

    def __call__(self, values: list) -> list[int]:
        """Target task ids for ``values``."""
        chosen = self._grouping.choose_tasks(self._task, values)
        chosen = list(chosen)
        for t in chosen:
            if t not in self._targets:
                raise ValueError(
                    f"custom grouping {type(self._grouping).__name__} chose task {t!r}, which "
                    f"is not a task of {self._component!r} (its tasks: {sorted(self._targets)})"
                )
        return chosen


class DirectOnly:
    """Marks a direct stream: ``emit`` is refused, ``emit_direct`` picks the task."""

    __slots__ = ("targets",)

    def __init__(self, targets: list[int]) -> None:
        self.targets = frozenset(targets)


def make_router(
    grouping: Grouping,
    *,
    task: int,
    targets: list[int],
    local_tasks: set[int],
    stream: str,
    stream_fields: Fields,
    context: WorkerTopologyContext,
    component: str,
) -> Router | DirectOnly:
    """The router one emitting ``task`` uses for one subscription."""
    kind = grouping.kind
    targets = sorted(targets)
    if kind in ("shuffle", "none"):
        return ShuffleRouter(targets, seed=task)
    if kind == "local_or_shuffle":
        local = [t for t in targets if t in local_tasks]
        return ShuffleRouter(local or targets, seed=task)
    if kind == "fields":
        assert grouping.fields is not None
        return FieldsRouter(targets, stream_fields, grouping.fields)
    if kind == "all":
        return ConstantRouter(targets)
    if kind == "global":
        return ConstantRouter(targets[:1])
    if kind == "direct":
        return DirectOnly(targets)
    if kind == "custom":
        assert grouping.custom is not None
        grouping.custom.prepare(context, stream, targets)
        return CustomRouter(grouping.custom, task, targets, component)
    raise ValueError(f"unknown grouping {kind!r}")
