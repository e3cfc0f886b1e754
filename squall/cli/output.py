"""How the command prints: tables for people, ``--json`` for scripts, progress on a TTY.

Results go to stdout; errors and progress to stderr. Progress (an elapsed-seconds line
redrawn in place) is shown only when stderr is a terminal, so piped and tested output
stays deterministic.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any


def print_json(value: Any) -> None:
    """``value`` as indented JSON on stdout."""
    print(json.dumps(value, indent=2, sort_keys=True, default=str))


def cell(value: Any) -> str:
    """One table cell: blanks for None, rounded floats."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.1f}"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value) or "-"
    return str(value)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Rows under headers, columns aligned (two spaces apart).

    >>> print(table(["NAME", "N"], [["wc", 2]]))
    NAME  N
    wc    2
    """
    cells = [[cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    for r in cells:
        lines.append("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())
    return "\n".join(lines)


def duration(secs: float | None) -> str:
    """``secs`` as 1h2m3s, 2m3s or 3s.

    >>> duration(3723)
    '1h2m3s'
    """
    if secs is None:
        return "-"
    s = int(secs)
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m}m{s}s" if h else f"{m}m{s}s" if m else f"{s}s"


@contextmanager
def progress(what: str) -> Iterator[None]:
    """Show ``what`` with the seconds elapsed on stderr while the block runs (TTY only)."""
    if not sys.stderr.isatty():
        yield
        return
    done = threading.Event()
    start = time.monotonic()

    def draw() -> None:
        while not done.wait(0.5):
            sys.stderr.write(f"\r{what}... {time.monotonic() - start:.0f}s")
            sys.stderr.flush()
    thread = threading.Thread(target=draw, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()
