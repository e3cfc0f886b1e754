"""Figures of a run: counters and latencies (in files, across processes), rates, memory.

Standard library only, like ``_common``. A rate is taken between samples of a cumulative
counter, so it counts completed work only; latencies are (completion time, seconds) pairs
on ``time.perf_counter()``, the machine-wide monotonic clock on Linux.
"""

from __future__ import annotations

import os
import time
from array import array
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from benchmarks.peers._common import WORDS_PER_SENTENCE

# ---- figures -----------------------------------------------------------------------------

def rate_between(samples: Sequence[tuple[float, float]], t0: float, t1: float) -> float | None:
    """Units per second of a cumulative counter over [t0, t1].

    ``samples`` are (time, cumulative count) in time order, taken at the source's own pace
    (a flush, a batch): the rate is taken between the last sample at or before ``t0`` and
    the last one at or before ``t1``, so it counts only completed work and no estimate.
    """
    before = [s for s in samples if s[0] <= t0]
    upto = [s for s in samples if s[0] <= t1]
    if not upto:
        return None
    a = before[-1] if before else samples[0]
    b = upto[-1]
    if b[0] - a[0] < 1e-6:
        return None
    return (b[1] - a[1]) / (b[0] - a[0])


def total_rate(series: Iterable[Sequence[tuple[float, float]]], t0: float, t1: float) -> float | None:
    """The sum of ``rate_between`` over several counters (one per task or process)."""
    rates = [r for r in (rate_between(s, t0, t1) for s in series if s) if r is not None]
    return sum(rates) if rates else None


def percentiles_ms(latencies_s: Sequence[float]) -> dict[str, float | None]:
    """p50, p99 and p999 (nearest rank) of latencies given in seconds, in milliseconds."""
    data = sorted(latencies_s)

    def rank(q: float) -> float | None:
        if not data:
            return None
        k = min(len(data) - 1, max(0, int(q * len(data) + 0.5) - 1))
        return data[k] * 1000.0

    return {"latency_p50_ms": rank(0.50), "latency_p99_ms": rank(0.99),
            "latency_p999_ms": rank(0.999), "latency_samples": len(data)}


def in_window(samples: Iterable[tuple[float, float]], t0: float, t1: float) -> list[float]:
    """The latencies of (completion time, latency) pairs completed inside [t0, t1]."""
    return [lat for done, lat in samples if t0 <= done <= t1]


# ---- probes: counters and latencies written to files, for runs that span processes -------

class Probe:
    """A cumulative counter plus latency samples that one task or process writes to files.

    ``count`` and ``latency`` are cheap; every ``FLUSH_SECS`` (checked every 64 calls) the
    probe appends ``time count`` to ``<dir>/<name>.progress`` and the pending latency pairs
    to ``<dir>/<name>.latency`` (float64 pairs: completion time, latency in seconds).
    Call ``flush`` when idle, so that a slow source still reports.
    """

    FLUSH_SECS = 0.2

    def __init__(self, directory: str, name: str) -> None:
        base = Path(directory) / name
        self._progress = open(f"{base}.progress", "a", buffering=1)  # noqa: SIM115
        self._latency = open(f"{base}.latency", "ab")  # noqa: SIM115
        self.total = 0
        self._lat = array("d")
        self._calls = 0
        self._last = time.perf_counter()

    def count(self, n: int = 1) -> None:
        self.total += n
        self._calls += 1
        if not self._calls & 63:
            self.maybe_flush()

    def latency(self, done: float, seconds: float) -> None:
        self._lat.append(done)
        self._lat.append(seconds)

    def maybe_flush(self) -> None:
        now = time.perf_counter()
        if now - self._last >= self.FLUSH_SECS:
            self.flush(now)

    def flush(self, now: float | None = None) -> None:
        now = time.perf_counter() if now is None else now
        self._last = now
        if self._lat:
            self._lat.tofile(self._latency)
            self._latency.flush()
            self._lat = array("d")
        self._progress.write(f"{now!r} {self.total}\n")


def read_probes(directory: str, suffix: str = "") -> tuple[list[list[tuple[float, float]]], Latencies]:
    """Progress series (one per probe) and all latency pairs of the probes in ``directory``.

    ``suffix`` picks probes whose name ends with it (e.g. ``"-spout"``). Torn tails (a line
    or pair still being written) are ignored.
    """
    series: list[list[tuple[float, float]]] = []
    latencies = Latencies()
    for path in sorted(Path(directory).glob(f"*{suffix}.progress")):
        points = []
        for line in path.read_text().splitlines(keepends=True):
            parts = line.split()
            if line.endswith("\n") and len(parts) == 2:
                points.append((float(parts[0]), float(parts[1])))
        series.append(points)
        lat_path = path.with_suffix(".latency")
        raw = lat_path.read_bytes() if lat_path.exists() else b""
        latencies.pairs.frombytes(raw[: len(raw) // 16 * 16])
    return series, latencies


class Latencies:
    """(completion time, latency in seconds) pairs, flat in one ``array`` to stay small.

    The runners measure their memory while they hold these, and a list of tuples would
    cost some 80 bytes a sample.
    """

    def __init__(self) -> None:
        self.pairs = array("d")

    def add(self, done: float, seconds: float) -> None:
        self.pairs.append(done)
        self.pairs.append(seconds)

    def __iter__(self) -> Iterator[tuple[float, float]]:
        pairs = self.pairs
        return zip(pairs[0::2], pairs[1::2], strict=True)


# ---- memory ------------------------------------------------------------------------------

def children() -> dict[int, list[int]]:
    """Each process's direct children, by parent pid (from ``/proc``)."""
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def _rss_kb(pid: int) -> tuple[str, int]:
    try:
        with open(f"/proc/{pid}/comm") as f:
            comm = f.read().strip()
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return comm, int(line.split()[1])
    except OSError:
        pass
    return "", 0


def tree_rss(pid: int | None = None) -> dict[str, Any]:
    """Resident memory of process ``pid`` (default: this one) and all its descendants.

    Returns ``rss_mb`` (the sum), ``rss_python_mb``, ``rss_jvm_mb`` and ``rss_processes``.
    Pages shared between processes (a forked worker's) count once per process.
    """
    root = os.getpid() if pid is None else pid
    kids = children()
    todo, seen = [root], []
    while todo:
        p = todo.pop()
        seen.append(p)
        todo.extend(kids.get(p, []))
    totals = {"python": 0, "java": 0, "other": 0}
    for p in seen:
        comm, kb = _rss_kb(p)
        kind = "python" if comm.startswith("python") else "java" if comm == "java" else "other"
        totals[kind] += kb
    return {
        "rss_mb": round(sum(totals.values()) / 1024.0, 1),
        "rss_python_mb": round(totals["python"] / 1024.0, 1),
        "rss_jvm_mb": round(totals["java"] / 1024.0, 1),
        "rss_processes": len(seen),
    }


# ---- a case's figures --------------------------------------------------------------------

def sink_units_per_sentence(workload: str, variant: str = "") -> float:
    """What a sink counts per input sentence: its words, or the sentence itself (pipeline)."""
    if workload == "iowait":  # wordcount-threaded counts words; the wait steps, sentences
        return WORDS_PER_SENTENCE if variant == "wordcount-threaded" else 1.0
    return 1.0 if workload == "pipeline" else WORDS_PER_SENTENCE


def figures(case: dict[str, Any], t0: float, t1: float, *,
            sink: Iterable[Sequence[tuple[float, float]]],
            acked: Iterable[Sequence[tuple[float, float]]] | None = None,
            latencies: Iterable[tuple[float, float]] = ()) -> dict[str, Any]:
    """Throughput, words/s and latency percentiles of a case measured over [t0, t1].

    ``sink``: cumulative counters of what the last step completed (words for the word
    counts, sentences for the pipeline); ``acked``: cumulative counters of sentences acked
    at the source (ackers on); ``latencies``: (completion time, seconds) pairs.
    Sentences/s are the acked ones when the case has ackers, else the sink's count turned
    into sentences: completed work either way, never what a source merely emitted.
    """
    units = sink_units_per_sentence(case["workload"], case.get("variant", ""))
    sink_rate = total_rate(sink, t0, t1)
    acked_rate = total_rate(acked, t0, t1) if (case.get("acking") and acked is not None) else None
    if acked_rate is not None:
        tps = acked_rate
    else:
        tps = sink_rate / units if sink_rate is not None else None
    out: dict[str, Any] = {
        "throughput_tps": tps,
        "words_per_s": sink_rate if units != 1.0 else None,
        "measured_s": round(t1 - t0, 3),
    }
    out.update(percentiles_ms(in_window(latencies, t0, t1)))
    return out
