"""Run the benchmarks: ``python -m benchmarks [--quick]``.

Prints a table and writes ``benchmarks/results/latest.json``: a list of rows with the keys
``workload``, ``system``, ``acking``, ``throughput_tps``, ``latency_p50_ms``,
``latency_p99_ms``, ``rss_mb``, ``duration_s`` and ``tuples`` (and a few more).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import wordcount_local

RESULTS = Path(__file__).resolve().parent / "results" / "latest.json"

Row = dict[str, Any]


def workloads(args: argparse.Namespace) -> list[tuple[str, Callable[[], Row]]]:
    """The measurements to run, by label, each a function returning a row."""
    common = {"duration_s": args.duration, "warmup_s": args.warmup, "workers": args.workers}
    return [
        ("wordcount, ackers on", lambda: wordcount_local.run(acking=True, **common)),
        ("wordcount, ackers off", lambda: wordcount_local.run(acking=False, **common)),
    ]


def _fmt(value: Any, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def table(rows: list[Row]) -> str:
    """The rows as a text table."""
    columns = [
        ("workload", "workload", "<10", "s"),
        ("system", "system", "<13", "s"),
        ("acking", "acking", "<6", "s"),
        ("sentences/s", "throughput_tps", ">11", ",.0f"),
        ("words/s", "words_per_s", ">9", ",.0f"),
        ("p50 ms", "latency_p50_ms", ">8", ".1f"),
        ("p99 ms", "latency_p99_ms", ">8", ".1f"),
        ("rss MB", "rss_mb", ">7", ".1f"),
        ("secs", "duration_s", ">5", ".1f"),
        ("tuples", "tuples", ">9", ",d"),
    ]
    lines = [" ".join(format(title, width) for title, _, width, _ in columns)]
    lines.append(" ".join("-" * int(width[1:]) for _, _, width, _ in columns))
    for row in rows:
        cells = []
        for _, key, width, spec in columns:
            value = row.get(key)
            text = str(value) if spec == "s" else _fmt(value, spec)
            cells.append(format(text, width))
        lines.append(" ".join(cells))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description="squall benchmarks")
    parser.add_argument("--quick", action="store_true",
                        help="short runs (3 s warm-up, 5 s measured each): under a minute in all")
    parser.add_argument("--duration", type=float, default=None, help="measured seconds per run (20)")
    parser.add_argument("--warmup", type=float, default=None, help="warm-up seconds per run (5)")
    parser.add_argument("--workers", type=int, default=2, help="LocalCluster workers (2)")
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"result file ({RESULTS})")
    args = parser.parse_args(argv)
    if args.duration is None:
        args.duration = 5.0 if args.quick else 20.0
    if args.warmup is None:
        args.warmup = 3.0 if args.quick else 5.0

    rows = []
    for label, workload in workloads(args):
        print(f"running {label} ({args.warmup:g}s warm-up, {args.duration:g}s measured)...",
              file=sys.stderr, flush=True)
        rows.append(workload())
    print(table(rows))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=2) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)
    return 1 if any(row.get("errors") for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
