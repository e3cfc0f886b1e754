"""PNG charts of ``latest.json``: ``python -m benchmarks.charts [RESULTS_DIR]``.

Runs in ``.bench/venvs/charts`` (matplotlib), never in squall's environment; the harness
calls it after a run. Writes into the results directory:

- ``throughput.png``: sentences/s of wordcount and pipeline per system (log scale);
- ``latency.png``: p50 and p99 end-to-end latency at 10/50/90% of each system's maximum;
- ``scaling.png``: sentences/s on 1, 2 and 4 workers;
- ``stateful.png``: squall's word count with no state, in-memory and local (SQLite) state;
- ``memory.png``: resident memory per system on wordcount.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ORDER = ["squall-local", "squall-spark", "squall-standalone", "squall-shipped", "raw", "bytewax", "spark-ss",
         "pyflink"]
COLORS = dict(zip(ORDER, ["#1f77b4", "#17becf", "#2ca02c", "#98df8a", "#7f7f7f", "#ff7f0e", "#d62728",
                          "#9467bd"], strict=True))


def _ok(rows: list[dict], workload: str) -> list[dict]:
    return [r for r in rows if r["workload"] == workload and not r.get("error") and r.get("throughput_tps")]


def _label(row: dict) -> str:
    if row["system"] in ("squall-local", "squall-spark", "squall-standalone", "squall-shipped", "raw"):
        return f"{row['system']}\nack {'on' if row.get('acking') else 'off'}"
    return row["system"]


def _sorted(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: (ORDER.index(r["system"]) if r["system"] in ORDER else 99,
                                       not r.get("acking")))


def throughput(rows: list[dict], out: Path) -> bool:
    panels = [w for w in ("wordcount", "pipeline") if _ok(rows, w)]
    if not panels:
        return False
    fig, axes = plt.subplots(1, len(panels), figsize=(7.5 * len(panels), 4.8), squeeze=False)
    for ax, workload in zip(axes[0], panels, strict=True):
        data = _sorted(_ok(rows, workload))
        x = range(len(data))
        tps = [r["throughput_tps"] for r in data]
        ax.bar(x, tps, color=[COLORS.get(r["system"], "k") for r in data], alpha=0.9)
        for i, value in zip(x, tps, strict=True):
            ax.text(i, value, f"{value:,.0f}", ha="center", va="bottom", fontsize=7)
        ax.set_xticks(list(x), [_label(r) for r in data], fontsize=7, rotation=35, ha="right")
        ax.set_yscale("log")
        ax.set_ylabel("sentences / s (log)")
        ax.set_title(f"{workload}: throughput")
    fig.tight_layout()
    fig.savefig(out / "throughput.png", dpi=110)
    plt.close(fig)
    return True


def latency(rows: list[dict], out: Path) -> bool:
    data = [r for r in rows if r["workload"] == "latency" and not r.get("error") and r.get("latency_p99_ms")]
    if not data:
        return False
    fig, ax = plt.subplots(figsize=(9, 4.8))
    for system in [s for s in ORDER if any(r["system"] == s for r in data)]:
        mine = sorted((r for r in data if r["system"] == system), key=lambda r: r["params_share"])
        shares = [r["params_share"] * 100 for r in mine]
        color = COLORS.get(system, "k")
        ax.plot(shares, [r["latency_p99_ms"] for r in mine], "o-", color=color, label=f"{system} p99")
        ax.plot(shares, [r["latency_p50_ms"] for r in mine], "s--", color=color, alpha=0.6,
                label=f"{system} p50")
    ax.set_yscale("log")
    ax.set_xlabel("offered load, % of the system's own maximum")
    ax.set_ylabel("end-to-end latency, ms (log)")
    ax.set_title("latency: sentence emit -> completion")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    fig.savefig(out / "latency.png", dpi=110)
    plt.close(fig)
    return True


def scaling(rows: list[dict], out: Path) -> bool:
    data = _ok(rows, "scaling")
    if not data:
        return False
    fig, ax = plt.subplots(figsize=(8.5, 4.5))
    for system in [s for s in ORDER if any(r["system"] == s for r in data)]:
        mine = sorted((r for r in data if r["system"] == system), key=lambda r: r["workers"])
        ax.plot([r["workers"] for r in mine], [r["throughput_tps"] for r in mine], "o-",
                color=COLORS.get(system, "k"), label=system)
    ax.set_xticks([1, 2, 4])
    ax.set_yscale("log")
    ax.set_xlabel("workers (2 cores: 4 is oversubscribed)")
    ax.set_ylabel("sentences / s (log)")
    ax.set_title("scaling: word count, ackers off")
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    fig.savefig(out / "scaling.png", dpi=110)
    plt.close(fig)
    return True


def stateful(rows: list[dict], out: Path) -> bool:
    data = _ok(rows, "stateful_wordcount")
    if not data:
        return False
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    labels = [f"{r['system']}\n{r['variant']}" for r in data]
    ax.bar(range(len(data)), [r["throughput_tps"] for r in data],
           color=[COLORS.get(r["system"], "k") for r in data])
    for i, r in enumerate(data):
        ax.text(i, r["throughput_tps"], f"{r['throughput_tps']:,.0f}\np99 {r['latency_p99_ms'] or 0:,.0f} ms",
                ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(data)), labels, fontsize=8)
    ax.set_ylim(0, max(r["throughput_tps"] for r in data) * 1.2)  # room for the labels
    ax.set_ylabel("sentences / s")
    ax.set_title("stateful word count: no state vs checkpointed state")
    fig.tight_layout()
    fig.savefig(out / "stateful.png", dpi=110)
    plt.close(fig)
    return True


def memory(rows: list[dict], out: Path) -> bool:
    data = [r for r in _sorted(_ok(rows, "wordcount")) if r.get("rss_mb")]
    if not data:
        return False
    fig, ax = plt.subplots(figsize=(7, 4.2))
    jvm = [r.get("rss_jvm_mb") or 0 for r in data]
    py = [r["rss_mb"] - j for r, j in zip(data, jvm, strict=True)]
    x = range(len(data))
    ax.bar(x, py, color=[COLORS.get(r["system"], "k") for r in data], label="Python processes")
    ax.bar(x, jvm, bottom=py, color="#bbbbbb", label="JVM")
    for i, r in zip(x, data, strict=True):
        ax.text(i, r["rss_mb"], f"{r['rss_mb']:,.0f}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(list(x), [_label(r) for r in data], fontsize=7, rotation=35, ha="right")
    ax.set_ylabel("resident memory, MB (all processes)")
    ax.set_title("memory: word count at max rate")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "memory.png", dpi=110)
    plt.close(fig)
    return True


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0]) if argv else Path(__file__).resolve().parent / "results"
    rows: list[dict[str, Any]] = json.loads((out / "latest.json").read_text())
    for row in rows:
        row["params_share"] = (row.get("params") or {}).get("share") or _share(row)
    made = [name for name, fn in (("throughput", throughput), ("latency", latency), ("scaling", scaling),
                                  ("stateful", stateful), ("memory", memory)) if fn(rows, out)]
    print(" ".join(f"{name}.png" for name in made))
    return 0


def _share(row: dict) -> float:
    try:
        return float(str(row.get("variant", "")).split("%")[0]) / 100
    except ValueError:
        return 0.0


if __name__ == "__main__":
    raise SystemExit(main())
