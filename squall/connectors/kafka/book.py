"""What a spout task knows of its partitions, shared by the spout's parts (plain data)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from squall.connectors.kafka.offsets import OffsetManager, TopicPartition


@dataclass
class Book:
    """Per partition: its offset manager, whether it is fetched, and where it stands.

    Dicts keyed by ``TopicPartition`` are also looked up with plain ``(topic, partition)``
    tuples (equal, same hash).
    """

    managers: dict[Any, OffsetManager] = field(default_factory=dict)  # AT_LEAST_ONCE only
    assigned: set[TopicPartition] = field(default_factory=set)        # fetched now
    fetched: dict[TopicPartition, int] = field(default_factory=dict)  # next offset to fetch
    upto: dict[Any, int] = field(default_factory=dict)                # next offset to emit (position())
    started: dict[Any, int] = field(default_factory=dict)             # where this task took it over
    sought: dict[Any, int] = field(default_factory=dict)              # seek() offsets of ones not yet taken
    watermarks: dict[TopicPartition, tuple[int, int]] = field(default_factory=dict)
    # a committed checkpoint's offsets (``committed``) the group offset may lag: committed
    # with the next commit of the partition's acks, even when nothing new was acked
    owed: dict[Any, int] = field(default_factory=dict)
