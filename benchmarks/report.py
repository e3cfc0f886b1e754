"""The results: the text table with squall's ratios, ``latest.json`` and its metadata.

``python -m benchmarks.report FILE`` prints a results file's table again;
``python -m benchmarks.report --compare OLD NEW [--threshold 0.15]`` compares two: per row
(same workload, variant, system, acking; a rescale or autoscale row by what was asked, as its
variant column shows the run's outcome) NEW's figure divided by OLD's, rows beyond the
threshold flagged, exit status 1 when any row regressed.

``latest.json`` is a list of rows, one per case run (errors and skipped systems
included, with ``error`` set). Every row has ``workload``, ``variant``, ``system``,
``acking``, ``throughput_tps`` (sentences/s completed), ``words_per_s``,
``latency_p50_ms``/``latency_p99_ms``/``latency_p999_ms``, ``rss_mb`` and
``squall_ratio`` (squall's figure divided by this row's; see ``ratio``). The machine,
versions and configuration go to ``latest-meta.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
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
    if row["system"] not in ("squall-local", "squall-spark", "squall-standalone", "squall-shipped", "raw",
                             "floor"):
        return "-"
    return "on" if row.get("acking") else "off"


def _variant(row: Row) -> str:
    """The variant; on latency rows, the share and the rate offered (``10%=553/s``)."""
    if row["workload"] == "latency" and row.get("rate_tps"):
        return f"{row['variant'].split()[0]}={row['rate_tps']:,.0f}/s"
    return str(row["variant"])


COLUMNS = [  # title, width, cell
    ("workload", 18, lambda r: r["workload"]),
    ("variant", 18, _variant),  # fits redis-exactly-once
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
    if any(r["workload"] == "rescale" for r in rows):
        lines.append("rescale: the stateful count bolt 4 -> 12 -> 4 (2,000 sentences/s local, half the most")
        lines.append("acked on squall-spark); variant = how each move was made and its pause_ms; latency")
        lines.append("over the 6 s after each move was asked (p99_during_ms and recover_s: per move).")
    if any(r["workload"] == "autoscale" for r in rows):
        lines.append("autoscale: a 2x step of the offered load under topology.autoscale; variant = decisions")
        lines.append("applied and seconds until the spout emitted the offered load again; latency from the")
        lines.append("step to 10 s after (docs/autoscale.md).")
    if any(r["system"] == "floor" for r in rows):
        lines.append("floor: no engine, Storm's API calls alone on the workers' cores (benchmarks.floor):")
        lines.append("the ceiling of any engine calling these components; spark÷ on it: squall-spark's share")
    lines.extend(shipped_lines(rows))
    lines.extend(same_run_lines(rows))
    lines.extend(stateful_lines(rows))
    return "\n".join(lines)


def stateful_lines(rows: list[Row]) -> list[str]:
    """Each stateful row beside its cap (held acks), and the same-run ratios issue 40 names.

    The cap is spout tasks x ``max.spout.pending`` / checkpoint interval
    (``stateful_wordcount.cap``): a figure near it measures the setting, not the state.
    """
    from benchmarks.workloads import stateful_wordcount as sw

    ok = [r for r in rows if r["workload"] == sw.NAME and not r.get("error") and r.get("throughput_tps")]
    out = []
    for system in dict.fromkeys(r["system"] for r in ok):
        mine = {r["variant"]: r for r in ok if r["system"] == system}
        for variant, row in mine.items():
            made = sw.cap(row)
            if made is None:
                continue
            tps, how = made
            line = (f"{system} {sw.NAME} {variant}: {row['throughput_tps']:,.0f}/s, cap {tps:,.0f}/s "
                    f"({how}) = {row['throughput_tps'] / tps:.2f} of it")
            interval_ms = (row.get("params") or {}).get("checkpoint_interval_ms")
            if row.get("latency_p50_ms") is not None and interval_ms:
                line += (f"; p50 {row['latency_p50_ms']:,.0f} ms = {row['latency_p50_ms'] / interval_ms:.2f}"
                         " intervals")
            out.append(line)
        pairs = [("memory", "plain"), (sw.EXACTLY_ONCE, "redis")]
        ratios = [f"{a} ÷ {b} {mine[a]['throughput_tps'] / mine[b]['throughput_tps']:.2f}"
                  for a, b in pairs if a in mine and b in mine]
        if ratios:
            out.append(f"{system} {sw.NAME}: " + "; ".join(ratios))
    return ["", *out] if out else []


def same_run_lines(rows: list[Row]) -> list[str]:
    """The same-run ratios the targets are about: Kafka ÷ in-memory, squall ÷ its ceiling."""
    def tps(workload: str, system: str, acking: bool | None = True) -> float | None:
        for r in rows:
            if (r["workload"] == workload and r["system"] == system and not r.get("error")
                    and (acking is None or bool(r.get("acking")) == acking) and r.get("throughput_tps")):
                return float(r["throughput_tps"])
        return None

    out = []
    for system in SQUALL_SYSTEMS:
        kafka, memory = tps("kafka-wordcount", system), tps("wordcount", system)
        if kafka and memory:
            out.append(f"{system}: kafka-wordcount {kafka:,.0f}/s ÷ its wordcount (acked) {memory:,.0f}/s "
                       f"= {kafka / memory:.2f}")
        bytewax = tps("kafka-wordcount", "bytewax", None)
        if kafka and bytewax:
            out.append(f"{system}: kafka-wordcount ÷ Bytewax's KafkaSource word count {bytewax:,.0f}/s "
                       f"= {kafka / bytewax:.2f}")
        for workload in ("pipeline", "wordcount"):
            mine, ceiling = tps(workload, system), tps(workload, "floor")
            if mine and ceiling:
                out.append(f"{system}: {workload} (acked) {mine:,.0f}/s ÷ its ceiling (floor) "
                           f"{ceiling:,.0f}/s = {mine / ceiling:.2f}")
    return ["", *out] if out else []


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


THRESHOLD = 0.15  # the quick runs' own noise on a shared machine is about this (docs/performance.md)
P99_FLOOR_MS = 1.0  # a p99 must also rise by this much: sub-ms tails move by one scheduler tick


# workloads whose variant column carries the run's outcome (the moves' pauses, the
# autoscaler's decisions), which differs between any two runs: compared by what was asked
OUTCOME_VARIANTS = {"rescale": lambda v: v.split()[0], "autoscale": lambda v: "2x step"}


def _key(row: Row) -> tuple[str, str, str, bool]:
    variant = str(row["variant"])
    asked = OUTCOME_VARIANTS.get(row["workload"])
    if asked is not None and variant:
        variant = asked(variant)
    return (row["workload"], variant, row["system"], bool(row.get("acking")))


def compare(old: list[Row], new: list[Row], threshold: float = THRESHOLD) -> list[dict[str, Any]]:
    """One entry per row of either file: NEW's figures against OLD's, and whether it regressed.

    The figure is sentences/s, higher is better, except on ``latency`` rows, where the rate is
    the one offered and the figure is the p99, lower is better. A row regressed when its
    figure is worse by more than ``threshold`` (a share: 0.15 is 15%; a p99 must also rise by
    ``P99_FLOOR_MS``), when it has an error now and had a figure before, or when it is gone.
    Each entry has ``key``, ``old``/``new`` (the rows or None), ``tps_ratio`` and
    ``p99_ratio`` (NEW / OLD, None where either is missing), ``regressed`` and ``why``.
    """
    if threshold < 0:
        raise ValueError(f"compare: threshold must be >= 0, got {threshold}")
    old_by = {_key(r): r for r in old}
    new_by = {_key(r): r for r in new}
    out = []
    for key in list(old_by) + [k for k in new_by if k not in old_by]:
        before, after = old_by.get(key), new_by.get(key)
        entry: dict[str, Any] = {"key": key, "old": before, "new": after, "tps_ratio": None,
                                 "p99_ratio": None, "regressed": False, "why": ""}
        out.append(entry)
        had = before is not None and not before.get("error")
        if after is None:
            entry["regressed"], entry["why"] = had, "only in OLD"
            continue
        if before is None:
            entry["why"] = "only in NEW"
            continue
        if after.get("error"):
            entry["regressed"] = had
            entry["why"] = "error in NEW" if had else "error in both"
            continue
        if not had:
            entry["why"] = "error in OLD"
            continue
        entry["tps_ratio"] = _div(after.get("throughput_tps"), before.get("throughput_tps"))
        entry["p99_ratio"] = _div(after.get("latency_p99_ms"), before.get("latency_p99_ms"))
        if key[0] == "latency":
            p99_old, p99_new = before.get("latency_p99_ms"), after.get("latency_p99_ms")
            if (entry["p99_ratio"] is not None and p99_old is not None and p99_new is not None
                    and entry["p99_ratio"] > 1 + threshold and p99_new - p99_old > P99_FLOOR_MS):
                entry["regressed"] = True
                entry["why"] = f"p99 {p99_old:,.1f} -> {p99_new:,.1f} ms"
        elif entry["tps_ratio"] is not None and entry["tps_ratio"] < 1 - threshold:
            entry["regressed"] = True
            entry["why"] = (f"{before['throughput_tps']:,.0f} -> {after['throughput_tps']:,.0f} "
                            "sentences/s")
    return out


def _div(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def comparison_table(entries: list[dict[str, Any]], threshold: float = THRESHOLD) -> str:
    """The comparison as text: one line per row, then a line counting the regressions."""
    head = (f"{'workload':<18} {'variant':<18} {'system':<17} {'ack':<3} {'old/s':>10} {'new/s':>10} "
            f"{'new÷old':>7} {'old p99':>8} {'new p99':>8} {'p99 n÷o':>7}  flag")
    lines = [head, "-" * len(head)]
    for e in entries:
        workload, variant, system, acking = e["key"]
        before, after = e["old"] or {}, e["new"] or {}
        ack = "on" if acking else ("off" if system in ("squall-local", "squall-spark", "raw") else "-")
        flag = ("REGRESSION " if e["regressed"] else "") + e["why"]
        lines.append(f"{workload:<18} {variant:<18} {system:<17} {ack:<3} "
                     f"{_num(before.get('throughput_tps'), ',.0f'):>10} "
                     f"{_num(after.get('throughput_tps'), ',.0f'):>10} {_ratio(e['tps_ratio']):>7} "
                     f"{_num(before.get('latency_p99_ms'), ',.1f'):>8} "
                     f"{_num(after.get('latency_p99_ms'), ',.1f'):>8} {_ratio(e['p99_ratio']):>7}  "
                     f"{flag}".rstrip())
    bad = sum(e["regressed"] for e in entries)
    lines.append("")
    lines.append(f"{bad} regression(s) beyond {threshold:.0%} (sentences/s; p99 on latency rows, "
                 f"which must also rise by {P99_FLOOR_MS:g} ms) in {len(entries)} rows")
    return "\n".join(lines)


def load(path: Path) -> list[Row]:
    """The rows of a results file (``latest.json``), or a one-line error naming it."""
    try:
        rows = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise SystemExit(f"benchmarks.report: cannot read {path}: {e}") from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "workload" in r for r in rows):
        raise SystemExit(f"benchmarks.report: {path} is not a results file (a list of rows)")
    return rows


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.report``: a file's table, or ``--compare OLD NEW``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.report", description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", type=Path, help="a results file whose table to print")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"),
                        help="compare two results files; exit status 1 when a row regressed")
    parser.add_argument("--threshold", type=float, default=THRESHOLD,
                        help=f"the share a figure may worsen before it is flagged ({THRESHOLD})")
    args = parser.parse_args(argv)
    if args.compare:
        if args.file is not None:
            parser.error("give either FILE or --compare OLD NEW")
        if args.threshold < 0:
            parser.error("--threshold must be >= 0")
        entries = compare(load(args.compare[0]), load(args.compare[1]), args.threshold)
        print(comparison_table(entries, args.threshold))
        return 1 if any(e["regressed"] for e in entries) else 0
    if args.file is None:
        parser.error("give a results file, or --compare OLD NEW")
    print(table(complete(load(args.file))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
