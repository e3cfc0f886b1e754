"""Storm's grouping classes as ``CustomStreamGrouping`` objects, for code ported from Storm.

``partial_key_grouping`` on the declarer is the fast way; ``PartialKeyGrouping`` is the same
routing as an object, for ``custom_grouping(component, PartialKeyGrouping(fields))`` as
Storm's ``TopologyBuilder`` does it, and for unit tests that call ``prepare``/``choose_tasks``.
"""

from __future__ import annotations

from typing import Any

from squall.api.components import CustomStreamGrouping, GlobalStreamId
from squall.api.context import WorkerTopologyContext
from squall.api.fields import Fields
from squall.runtime.hashing import hash_values, stable_hash
from squall.runtime.routing import two_choices


class PartialKeyGrouping(CustomStreamGrouping):
    """Storm's ``PartialKeyGrouping``: the less used of a key's two candidate tasks.

    The key is ``fields`` of the input (looked up by name through ``prepare``'s stream), or
    the first value without ``fields``, as Storm's. Candidates and choices are those of
    ``partial_key_grouping``; the use counts are this emitter's.

    >>> g = PartialKeyGrouping()
    >>> g.prepare(None, None, [0, 1, 2, 3, 4, 5])
    >>> a, b, c = (g.choose_tasks(0, ["key1"]) for _ in range(3))
    >>> a != b and a == c
    True
    """

    def __init__(self, fields: Fields | Any = None) -> None:
        if fields is not None and not isinstance(fields, Fields):
            fields = Fields(fields)  # a name, or an iterable of names
        self.fields = fields
        self._targets: list[int] = []
        self._indexes: list[int] = [0]
        self._used: list[int] = []

    def prepare(self, context: WorkerTopologyContext | None, stream: GlobalStreamId | None,
                target_tasks: list[int]) -> None:
        """Keep the targets (in the order given, as Storm) and find the key's fields."""
        self._targets = list(target_tasks)
        self._used = [0] * len(self._targets)
        if self.fields is not None:
            if context is None or stream is None:
                raise ValueError("PartialKeyGrouping with fields needs the context and the stream")
            out = context.get_component_output_fields(stream.component_id, stream.stream_id)
            self._indexes = [out.index(f) for f in self.fields]

    def choose_tasks(self, task_id: int, values: list) -> list[int]:
        """The less used of the key's two candidates (none for an empty tuple, as Storm)."""
        if not values:
            return []
        if len(self._indexes) == 1:
            h = stable_hash(values[self._indexes[0]])
        else:
            h = hash_values([values[i] for i in self._indexes])
        first, second = two_choices(h, len(self._targets))
        used = self._used
        pick = first if used[first] <= used[second] else second
        used[pick] += 1
        return [self._targets[pick]]
