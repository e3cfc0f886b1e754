"""The results: the text table with squall's ratios, ``latest.json`` and its metadata.

``latest.json`` is a list of rows, one per case run (errors and skipped systems
included, with ``error`` set). Every row has ``workload``, ``variant``, ``system``,
``acking``, ``throughput_tps`` (sentences/s completed), ``words_per_s``,
``latency_p50_ms``/``latency_p99_ms``/``latency_p999_ms``, ``rss_mb`` and
``squall_ratio`` (squall's figure divided by this row's; see ``ratio``). The machine,
versions and configuration go to ``latest-meta.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.workloads import SQUALL_SYSTEMS

Row = dict[str, Any]
REQUIRED = ("workload", "variant", "system", "acking", "throughput_tps", "words_per_s",
            "latency_p50_ms", "latency_p99_ms", "latency_p999_ms", "rss_mb")


def ratio(row: Row, rows: list[Row], squall: str) -> float | None:
    """``squall``'s figure divided by ``row``'s, on the same workload and variant.

    The figure is sentences/s, or the p99 latency on the latency workload (below 1 there:
    squall is faster). A squall row with the same acking is preferred; a peer without
    acking is compared with squall's ackers-off row where there is one.
    """
    if row["system"] == squall or row.get("error"):
        return None
    same = [r for r in rows if r["system"] == squall and r["workload"] == row["workload"]
            and r["variant"] == row["variant"] and not r.get("error")]
    if not same:
        return None
    match = next((r for r in same if bool(r.get("acking")) == bool(row.get("acking"))), same[0])
    key = "latency_p99_ms" if row["workload"] == "latency" else "throughput_tps"
    mine, theirs = match.get(key), row.get(key)
    if not mine or not theirs:
        return None
    return mine / theirs


def complete(rows: list[Row]) -> list[Row]:
    """The rows with every required key and their ratios to squall."""
    out = []
    for row in rows:
        row = {**{k: None for k in REQUIRED}, **row}
        row["squall_ratio"] = {s: ratio(row, rows, s) for s in SQUALL_SYSTEMS}
        out.append(row)
    return out


def _num(value: Any, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _ratio(value: float | None) -> str:
    if value is None:
        return "-"
    return format(value, ".0f" if value >= 100 else ".3g")


def _ack(row: Row) -> str:
    if row["system"] not in ("squall-local", "squall-spark", "squall-standalone", "squall-shipped", "raw"):
        return "-"
    return "on" if row.get("acking") else "off"


def _variant(row: Row) -> str:
    """The variant; on latency rows, the share and the rate offered (``10%=553/s``)."""
    if row["workload"] == "latency" and row.get("rate_tps"):
        return f"{row['variant'].split()[0]}={row['rate_tps']:,.0f}/s"
    return str(row["variant"])


COLUMNS = [  # title, width, cell
    ("workload", 18, lambda r: r["workload"]),
    ("variant", 13, _variant),
    ("system", 17, lambda r: r["system"]),
    ("ack", 3, _ack),
    ("sentences/s", 11, lambda r: _num(r["throughput_tps"], ",.0f")),
    ("words/s", 10, lambda r: _num(r["words_per_s"], ",.0f")),
    ("p50 ms", 8, lambda r: _num(r["latency_p50_ms"], ",.1f")),
    ("p99 ms", 8, lambda r: _num(r["latency_p99_ms"], ",.1f")),
    ("p999 ms", 8, lambda r: _num(r["latency_p999_ms"], ",.1f")),
    ("RSS MB", 7, lambda r: _num(r["rss_mb"], ",.0f")),
    ("local÷", 7, lambda r: _ratio(r["squall_ratio"]["squall-local"])),
    ("spark÷", 7, lambda r: _ratio(r["squall_ratio"]["squall-spark"])),
]
LEFT = 4  # the first LEFT columns are text, left-aligned


def table(rows: list[Row]) -> str:
    """The rows as a text table, with a legend."""
    def fmt(cells: list[str]) -> str:
        return " ".join(format(c, f"<{w}" if i < LEFT else f">{w}")
                        for i, (c, (_, w, _)) in enumerate(zip(cells, COLUMNS, strict=True)))

    lines = [fmt([title for title, _, _ in COLUMNS]), fmt(["-" * w for _, w, _ in COLUMNS])]
    previous = None
    for row in rows:
        if previous is not None and row["workload"] != previous:
            lines.append("")
        previous = row["workload"]
        if row.get("error"):
            head = fmt([str(col(row)) for _, _, col in COLUMNS[:LEFT]] + [""] * (len(COLUMNS) - LEFT))
            lines.append(head[: sum(w + 1 for _, w, _ in COLUMNS[:LEFT])] + _short(row["error"]))
            continue
        lines.append(fmt([str(col(row)) for _, _, col in COLUMNS]))
    lines.append("")
    lines.append("sentences/s: sentences completed (acked with ackers on, all words counted without);")
    lines.append("latency: sentence emit -> completion, paced at a share of the system's maximum (=offered);")
    lines.append("RSS: resident memory of all the system's processes, summed;")
    lines.append("local÷ / spark÷: squall-local's / squall-spark's sentences/s divided by this row's")
    lines.append("(p99 latency on latency rows, where below 1 means squall is faster).")
    lines.extend(shipped_lines(rows))
    return "\n".join(lines)


def shipped_lines(rows: list[Row]) -> list[str]:
    """squall-shipped beside squall-standalone: the shipped environment against the shared one."""
    out = []
    for row in rows:
        if row["system"] != "squall-shipped" or not row.get("throughput_tps"):
            continue
        twin = next((r for r in rows if r["system"] == "squall-standalone"
                     and r["workload"] == row["workload"] and r["variant"] == row["variant"]
                     and r.get("acking") == row.get("acking") and r.get("throughput_tps")), None)
        if twin is not None:
            mine, theirs = row["throughput_tps"], twin["throughput_tps"]
            out.append(f"{row['workload']} {row['variant']} ack {'on' if row.get('acking') else 'off'}: "
                       f"shipped environment {mine:,.0f}/s, shared virtualenv {theirs:,.0f}/s "
                       f"(x{mine / theirs:.2f}, same standalone cluster)")
    return ["", *out] if out else []


def _short(error: str, width: int = 80) -> str:
    text = " ".join(str(error).split())
    if not text.startswith(("skipped", "error", "no result")):
        text = f"error: {text}"
    return text if len(text) <= width else text[: width - 3] + "..."


def write(rows: list[Row], meta: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    """Write ``latest.json`` (the rows) and ``latest-meta.json``; returns both paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rows_path, meta_path = out_dir / "latest.json", out_dir / "latest-meta.json"
    rows_path.write_text(json.dumps(rows, indent=1) + "\n")
    meta_path.write_text(json.dumps(meta, indent=1) + "\n")
    return rows_path, meta_path
