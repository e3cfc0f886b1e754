"""Faults to inject in tests: frames dropped, duplicated or corrupted between workers.

``cluster.set_transport_fault(name, drop_frames(0.2, seed=7))`` makes a ``LocalCluster``
topology lose a fifth of the frames between its workers (tuples, acks and verdicts alike),
reproducibly. Under at-least-once nothing may be lost: the trees whose frames vanished time
out and their spouts replay them.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable

Fault = Callable[[int, int, bytes], list[bytes]]


class _Counted:
    """A fault that counts what it did (``seen``, ``hit``), thread-safely."""

    def __init__(self, probability: float, seed: int | None, change: Callable[[bytes], list[bytes]],
                 between: tuple[int, int] | None) -> None:
        if not 0.0 <= probability <= 1.0:
            raise ValueError(f"probability must be within [0, 1], got {probability}")
        self.probability = probability
        self.change = change
        self.between = between
        self.seen = 0
        self.hit = 0
        self._random = random.Random(seed)
        self._lock = threading.Lock()

    def __call__(self, sender: int, receiver: int, frame: bytes) -> list[bytes]:
        with self._lock:
            self.seen += 1
            if self.between is not None and (sender, receiver) != self.between:
                return [frame]
            if self._random.random() >= self.probability:
                return [frame]
            self.hit += 1
        return self.change(frame)


def drop_frames(probability: float, seed: int | None = None,
                between: tuple[int, int] | None = None) -> _Counted:
    """Lose each frame with ``probability`` (only from worker a to b with ``between=(a, b)``)."""
    return _Counted(probability, seed, lambda frame: [], between)


def duplicate_frames(probability: float, seed: int | None = None,
                     between: tuple[int, int] | None = None) -> _Counted:
    """Deliver each frame twice with ``probability``."""
    return _Counted(probability, seed, lambda frame: [frame, frame], between)


def corrupt_frames(probability: float, seed: int | None = None,
                   between: tuple[int, int] | None = None) -> _Counted:
    """Flip a byte in the payload of each frame with ``probability`` (its CRC then fails)."""
    def flip(frame: bytes) -> list[bytes]:
        data = bytearray(frame)
        data[-1] ^= 0xFF
        return [bytes(data)]
    return _Counted(probability, seed, flip, between)
