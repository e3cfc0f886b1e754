"""Who reads a partition, kept in Kafka itself so that tasks agree without talking.

Commit metadata would be the natural place (and the spout writes it there for tools), but
not every Kafka-compatible broker keeps it (Tansu 0.6 returns none), so the owner is also
committed as the "offset" of the partition in a side group, ``<group_id>.squall-owners``:
a tag of the topology and component, the owning task id, and whether it released the
partition. Any broker that stores offsets stores this.
"""

from __future__ import annotations

import zlib
from typing import NamedTuple

TASK_BITS = 19  # task ids below 2**19


class Owner(NamedTuple):
    """The task that reads (or read) a partition."""

    tag: int
    task: int
    released: bool


def owners_group(group_id: str) -> str:
    """The side group the owners are committed in."""
    return f"{group_id}.squall-owners"


def tag_of(topology: str, component: str) -> int:
    """A stable 31-bit tag of a topology's spout component."""
    return zlib.crc32(f"{topology}/{component}".encode()) & 0x7FFFFFFF


def encode(owner: Owner) -> int:
    """The owner as a non-negative int64 "offset"."""
    if not 0 <= owner.task < 2 ** TASK_BITS:
        raise ValueError(f"task id {owner.task} does not fit {TASK_BITS} bits")
    return (owner.tag << (TASK_BITS + 1)) | (owner.task << 1) | int(owner.released)


def decode(value: int | None) -> Owner | None:
    """The owner an "offset" of the side group stands for (None: no owner committed)."""
    if value is None or value < 0:
        return None
    return Owner(value >> (TASK_BITS + 1), (value >> 1) & (2 ** TASK_BITS - 1), bool(value & 1))
