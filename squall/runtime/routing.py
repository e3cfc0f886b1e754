"""Stream groupings: which tasks receive a tuple, computed at emit time (pure)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from squall.api.components import CustomStreamGrouping, GlobalStreamId
from squall.api.context import WorkerTopologyContext
from squall.api.fields import Fields
from squall.api.topology import Grouping
from squall.runtime.hashing import crc32_ascii, hash_values, stable_hash
from squall.runtime.keygroups import DEFAULT_KEY_GROUPS, KEY_GROUPS, default_table

Router = Callable[[list], list[int]]
# the mean queue fill (0: empty, 1: full) of some of this worker's tasks
MeanLoad = Callable[[list[int]], float]

# compiled, an ASCII str key is hashed here with C ints (``stable_hash`` makes Python ints)
_COMPILED = not __file__.endswith(".py")

# a load-aware shuffle looks at its local targets' queues at most once per this many tuples
LOAD_CHECK_EVERY = 64
_MASK = 0xFFFFFFFF


class RouterBase:
    """A grouping's choice of targets: ``route(values)`` (compiled, a C-level call), or call it."""

    __slots__ = ()

    def route(self, values: list) -> list[int]:
        """Target task ids for ``values``."""
        raise NotImplementedError

    def __call__(self, values: list) -> list[int]:
        """Target task ids for ``values``."""
        return self.route(values)


class ShuffleRouter(RouterBase):
    """Cycles through the targets in an order reshuffled every cycle (balanced)."""

    __slots__ = ("_singles", "_order", "_pos", "_rng")

    def __init__(self, targets: list[int], seed: int) -> None:
        self._singles = [[t] for t in targets]  # reused: no list allocated per tuple
        self._order = list(self._singles)
        self._rng = random.Random(seed)
        self._rng.shuffle(self._order)
        self._pos = 0

    def route(self, values: list) -> list[int]:
        """Target task ids for ``values``."""
        pos = self._pos
        if pos == len(self._order):
            # one target (a worker-local scope, commonly) has one order: shuffling it would
            # be a Python call per tuple for nothing
            if pos > 1:
                self._rng.shuffle(self._order)
            pos = 0
        self._pos = pos + 1
        return self._order[pos]


class LoadAwareShuffleRouter(RouterBase):
    """Storm 2's load-aware shuffle: this worker's targets first, while their queues keep up.

    Two scopes, as Storm's ``LoadAwareShuffleGrouping`` with only worker-local and
    everything: it starts on the targets in the emitting worker and widens to every target
    when their mean queue fill rises above ``high``, then narrows back once it falls below
    ``low``. Within a scope it is the balanced shuffle, so while widened (remote load is not
    known here, so taken as even) counts differ by at most one per target. The queues are
    read at most once per ``LOAD_CHECK_EVERY`` tuples.
    """

    __slots__ = ("_local", "_all", "_current", "_local_targets", "_mean_load", "_high",
                 "_low", "_countdown", "local_scope")

    def __init__(self, targets: list[int], local_targets: list[int], seed: int,
                 mean_load: MeanLoad, high: float, low: float) -> None:
        self._local = ShuffleRouter(local_targets, seed)
        self._all = ShuffleRouter(targets, seed)
        self._current = self._local
        self._local_targets = list(local_targets)
        self._mean_load = mean_load
        self._high = high
        self._low = low
        self._countdown = 0
        self.local_scope = True

    def route(self, values: list) -> list[int]:
        """Target task ids for ``values``."""
        self._countdown -= 1
        if self._countdown <= 0:
            self._countdown = LOAD_CHECK_EVERY
            self.refresh()
        return self._current.route(values)

    def refresh(self) -> None:
        """Re-read the local queues and change scope if they crossed a bound."""
        load = self._mean_load(self._local_targets)
        if self.local_scope and load > self._high:
            self.local_scope = False
            self._current = self._all
        elif not self.local_scope and load < self._low:
            self.local_scope = True
            self._current = self._local


class FieldsRouter(RouterBase):
    """Equal values of the grouping fields go to the same task, in every process.

    A key goes to its key group (``keygroups.key_group``: ``stable_hash % K``) and the key
    group to a task by the routing table (a task index per key group, by default
    ``keygroups.default_table``), exactly as keyed state places it. ``set_table`` switches
    targets and table between two tuples (a live rescale).
    """

    __slots__ = ("_singles", "_indexes", "_n", "_index", "_groups", "_k", "table")

    def __init__(self, targets: list[int], stream_fields: Fields, fields: Fields,
                 key_groups: int = DEFAULT_KEY_GROUPS, table: list[int] | None = None) -> None:
        self._indexes = [stream_fields.index(f) for f in fields]
        self._index = self._indexes[0] if len(self._indexes) == 1 else -1  # -1: several fields
        self._k = key_groups
        self.set_table(targets, default_table(len(targets), key_groups) if table is None else table)

    def set_table(self, targets: list[int], table: list[int]) -> None:
        """Route by ``table`` (a task index into sorted ``targets`` per key group) from now on."""
        singles = [[t] for t in sorted(targets)]
        if len(table) != self._k:
            raise ValueError(f"a routing table of {len(table)} key groups for a fields grouping "
                             f"of {self._k} ({KEY_GROUPS} cannot change)")
        if table and (min(table) < 0 or max(table) >= len(singles)):
            raise ValueError(f"the routing table names task index {max(table)}, but there are "
                             f"{len(singles)} targets")
        self._singles = singles
        self._n = len(singles)
        self.table = list(table)
        # one list per key group, its target's: a route is one more list index than h % n
        self._groups = [singles[i] for i in table]  # assigned last: route reads it once

    def route(self, values: list) -> list[int]:
        """Target task ids for ``values``."""
        index = self._index
        if index >= 0:
            v = values[index]
            if _COMPILED and type(v) is str:
                # stable_hash's own value for a str, its CRC-32 from the ASCII characters,
                # kept in a C int (-1: not ASCII, left to stable_hash)
                crc = crc32_ascii(v)
                if crc >= 0:
                    return self._groups[crc % self._k]
            h = stable_hash(v)
        else:
            h = hash_values([values[i] for i in self._indexes])
        return self._groups[h % self._k]  # C arithmetic and a C index, compiled


def second_hash(h: int) -> int:
    """A second 32-bit hash derived from ``h`` (a murmur3 finalizer), stable everywhere."""
    h = (h ^ 0x9E3779B9) & _MASK
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK
    h ^= h >> 16
    return h


def two_choices(h: int, n: int) -> tuple[int, int]:
    """Two indexes below ``n`` for a key of hash ``h``: distinct when ``n`` > 1."""
    first = h % n
    second = second_hash(h) % n
    if second == first:
        second = (second + 1) % n
    return first, second


class PartialKeyRouter(RouterBase):
    """Storm's partial key grouping: the less loaded of a key's two candidate tasks.

    The candidates come from two stable hashes of the grouping fields (distinct tasks when
    there are two or more); the load is what this emitter has sent to each task so far, and
    a tie goes to the first candidate.
    """

    __slots__ = ("_singles", "_indexes", "_n", "_sent")

    def __init__(self, targets: list[int], stream_fields: Fields, fields: Fields) -> None:
        self._singles = [[t] for t in sorted(targets)]
        self._indexes = [stream_fields.index(f) for f in fields]
        self._n = len(targets)
        self._sent = [0] * len(targets)

    def candidates(self, values: list) -> tuple[int, int]:
        """The two candidate task ids of ``values``' key."""
        first, second = self._choices(values)
        return self._singles[first][0], self._singles[second][0]

    def _choices(self, values: list) -> tuple[int, int]:
        if len(self._indexes) == 1:
            h = stable_hash(values[self._indexes[0]])
        else:
            h = hash_values([values[i] for i in self._indexes])
        return two_choices(h, self._n)

    def route(self, values: list) -> list[int]:
        """Target task ids for ``values``."""
        first, second = self._choices(values)
        sent = self._sent
        pick = first if sent[first] <= sent[second] else second
        sent[pick] += 1
        return self._singles[pick]


class ConstantRouter(RouterBase):
    """The same targets every time (all and global groupings)."""

    __slots__ = ("_targets",)

    def __init__(self, targets: list[int]) -> None:
        self._targets = targets

    def route(self, values: list) -> list[int]:
        """Target task ids for ``values``."""
        return self._targets


class CustomRouter(RouterBase):
    """A user ``CustomStreamGrouping``, with its answers checked."""

    __slots__ = ("_grouping", "_task", "_targets", "_component")

    def __init__(self, grouping: CustomStreamGrouping, task: int, targets: list[int],
                 component: str) -> None:
        self._grouping = grouping
        self._task = task
        self._targets = frozenset(targets)
        self._component = component

    def route(self, values: list) -> list[int]:
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


@dataclass(frozen=True)
class LoadAwareness:
    """What a load-aware shuffle needs from its worker: its queues' fill and the bounds."""

    mean_load: MeanLoad
    high: float = 0.8
    low: float = 0.2


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
    source: str = "",
    load: LoadAwareness | None = None,
    key_groups: int = DEFAULT_KEY_GROUPS,
) -> Router | DirectOnly:
    """The router one emitting ``task`` of component ``source`` uses for one subscription.

    ``component`` is the subscriber; with ``load`` (None when
    ``topology.disable.loadaware.messaging`` is set) a shuffle prefers this worker's tasks;
    ``key_groups`` is the topology's ``topology.key.groups`` (fields groupings).
    """
    kind = grouping.kind
    targets = sorted(targets)
    if kind == "shuffle":
        local = [t for t in targets if t in local_tasks]
        if load is not None and local and len(local) < len(targets):
            return LoadAwareShuffleRouter(targets, local, task, load.mean_load, load.high, load.low)
        return ShuffleRouter(targets, seed=task)
    if kind == "none":
        return ShuffleRouter(targets, seed=task)
    if kind == "local_or_shuffle":
        local = [t for t in targets if t in local_tasks]
        return ShuffleRouter(local or targets, seed=task)
    if kind == "fields":
        assert grouping.fields is not None
        return FieldsRouter(targets, stream_fields, grouping.fields, key_groups)
    if kind == "partial_key":
        assert grouping.fields is not None
        return PartialKeyRouter(targets, stream_fields, grouping.fields)
    if kind == "all":
        return ConstantRouter(targets)
    if kind == "global":
        return ConstantRouter(targets[:1])
    if kind == "direct":
        return DirectOnly(targets)
    if kind == "custom":
        assert grouping.custom is not None
        grouping.custom.prepare(context, GlobalStreamId(source, stream), list(targets))
        return CustomRouter(grouping.custom, task, targets, component)
    raise ValueError(f"unknown grouping {kind!r}")
