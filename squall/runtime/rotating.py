"""``RotatingMap``: timeouts by rotating buckets, as Storm's, with no scan per entry."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


class RotatingMap:
    """Keys live in the newest bucket; ``rotate`` drops and returns the oldest bucket.

    With ``b`` buckets rotated every ``T / (b - 1)`` seconds, an entry expires between
    ``T`` and ``T * (1 + 1 / (b - 1))`` seconds after it was last put.
    """

    def __init__(self, buckets: int = 3) -> None:
        if buckets < 2:
            raise ValueError("a RotatingMap needs at least 2 buckets")
        self._buckets: list[dict[Any, Any]] = [{} for _ in range(buckets)]

    def put(self, key: Any, value: Any) -> None:
        """Put ``key`` in the newest bucket, removing it from older ones."""
        buckets = self._buckets
        buckets[0][key] = value
        for i in range(1, len(buckets)):
            buckets[i].pop(key, None)

    def put_new(self, key: Any, value: Any) -> None:
        """Put a key known to be absent (skips the removal from older buckets)."""
        self._buckets[0][key] = value

    def get(self, key: Any, default: Any = None) -> Any:
        """The value of ``key``, wherever it is."""
        for bucket in self._buckets:
            if key in bucket:
                return bucket[key]
        return default

    def pop(self, key: Any, default: Any = None) -> Any:
        """Remove ``key`` and return its value."""
        for bucket in self._buckets:
            if key in bucket:
                return bucket.pop(key)
        return default

    def touch(self, key: Any) -> bool:
        """Move ``key`` to the newest bucket (restarting its timeout); False if absent."""
        for i, bucket in enumerate(self._buckets):
            if key in bucket:
                if i:
                    self._buckets[0][key] = bucket.pop(key)
                return True
        return False

    def rotate(self) -> dict[Any, Any]:
        """Expire the oldest bucket and return what it held."""
        expired = self._buckets.pop()
        self._buckets.insert(0, {})
        return expired

    def __contains__(self, key: object) -> bool:
        return any(key in b for b in self._buckets)

    def __len__(self) -> int:
        return sum(len(b) for b in self._buckets)

    def __iter__(self) -> Iterator[Any]:
        for bucket in self._buckets:
            yield from bucket
