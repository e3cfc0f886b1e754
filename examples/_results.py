"""Results the example bolts publish so that the program that ran them can read them.

Components are pickled when the topology is built and unpickled per task, so a bolt that
appends to a list defined next to it appends to a copy. This module is different: it is
imported by name, so every task of a topology on ``LocalCluster`` (which runs its workers as
threads of this process) sees the very same registry as the main program.

Each bolt task registers its own ``Counter`` in ``prepare`` and then updates it in place from
its worker thread; nothing else writes to it. Readers take copies (``dict(counter)`` copies
in one step under the GIL), ideally once the topology is quiet (every spout tuple acked) or
killed. This only works in-process: on a cluster whose workers are other processes the bolts
would have to write their results somewhere shared (a file, a database, a stream).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Hashable

_lock = threading.Lock()
_registry: dict[str, dict[Hashable, Counter]] = {}


def register(topology: str, key: Hashable) -> Counter:
    """A new, empty counter for ``key`` (e.g. ``("count", task_id)``) of ``topology``."""
    counter: Counter = Counter()
    with _lock:
        _registry.setdefault(topology, {})[key] = counter
    return counter


def snapshot(topology: str) -> dict[Hashable, Counter]:
    """A copy of every counter registered for ``topology``, by key."""
    with _lock:
        counters = dict(_registry.get(topology, {}))
    return {key: Counter(dict(c)) for key, c in counters.items()}


def reset(topology: str) -> None:
    """Forget what ``topology`` published (call before submitting it again)."""
    with _lock:
        _registry.pop(topology, None)
