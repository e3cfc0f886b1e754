"""How many seeds a fault loop runs: ``SQUALL_FAULT_SEEDS`` (a count, or ``all``).

``make test`` sets a count (one seed per loop), ``make faults`` sets ``all``; a loop run
alone without it runs its own default.
"""

from __future__ import annotations

import os


def fault_seeds(all_seeds: int, default: int = 2) -> range:
    """The seeds to run, out of ``all_seeds`` (unset: ``default``)."""
    wanted = os.environ.get("SQUALL_FAULT_SEEDS", "").strip().lower() or str(default)
    return range(all_seeds if wanted == "all" else min(all_seeds, max(1, int(wanted))))
