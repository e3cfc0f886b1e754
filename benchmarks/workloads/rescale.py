"""rescale: a stateful count bolt 4 -> 12 -> 4 while it runs, live and by restart (issue 38).

The two variants run side by side. The spout offers ``RATE_TPS`` sentences/s; count keeps
its counts in the in-memory state, checkpointed every 200 ms (at-least-once). Each move is
asked with ``rebalance(name, parallelism={"count": n})``; the runner waits until the
``rescale`` record is no longer ``running``. Reported per variant: sentences/s over the run,
the sentences' latency percentiles over the 3 s after each move was asked, and in the
variant column the moves' ``pause_ms`` (what the record measures: for a live move, the time
the new owners held input for the key groups they took; for a restart, stop to running
again). The ``restart`` variant asks the same moves with the live path turned off in the
runner's process (the module attribute ``squall.local.cluster.live_refusal`` answers
"restart"; on squall-spark ``squall.spark.cluster.live_refusal``), so the two differ only in
how the move is made.

Per move also: ``p99_during_ms`` (the p99 complete latency of the sentences completed in the
``SETTLE_S`` after the move was asked), ``recover_s`` (seconds from the ask until the first
1 s window whose acked rate is at least 90% of the rate in the 2 s before the ask) and
``before_tps`` (that rate). On squall-spark the spout offers ``RATES["squall-spark"]``: half
the most it acked with this topology on the bench machine: ``SQUALL_BENCH_RESCALE_TPS``
overrides the offered rate (set it far above what a system takes, and ``before_tps`` is the
most it acked).
"""

from __future__ import annotations

import os
import time
from typing import Any

from squall import Config, Fields, TopologyBuilder

NAME = "rescale"
SYSTEMS = ("squall-local", "squall-spark")
RATE_TPS = 2000.0
# the offered rate per system: squall-spark's is half the most it acked (see the module)
RATES = {"squall-local": RATE_TPS, "squall-spark": 10_000.0}
MOVES = (12, 4)
SETTLE_S = 6.0
BEFORE_S = 2.0  # the rate before a move: over this long before it was asked


def cases(profile: Any, system: str) -> list[dict]:
    from benchmarks.workloads import make_case

    out = []
    rate = float(os.environ.get("SQUALL_BENCH_RESCALE_TPS") or RATES.get(system, RATE_TPS))
    for variant in ("live", "restart"):
        case = make_case(NAME, variant, system, profile, acking=True, rate_tps=rate)
        case.update(warmup_s=0.0, duration_s=60.0)  # the runner's time limit: the moves' longest run
        out.append(case)
    return out


def build(case: dict, probe_dir: str) -> tuple[Any, Config]:
    from benchmarks.workloads.components import SentenceSpout, SplitSentence, StatefulWordCount

    b = TopologyBuilder()
    b.set_spout("sentence", SentenceSpout(probe_dir, float(case.get("rate_tps") or RATE_TPS)), 1)
    b.set_bolt("split", SplitSentence(), 2).shuffle_grouping("sentence")
    b.set_bolt("count", StatefulWordCount(probe_dir), 4).fields_grouping("split", Fields("word"))
    conf = Config()
    conf.set_num_workers(case["workers"])
    conf.set_max_spout_pending(10_000)
    conf.update({"topology.state.checkpoint.interval.ms": 200, "squall.chaining": False})
    return b.create_topology(), conf


def measure(cluster: Any, name: str, case: dict, probe_dir: str) -> dict[str, Any]:
    """Ask the moves, wait for each, and return the row's figures."""
    import squall.local.cluster as local
    import squall.spark.cluster as spark
    from benchmarks.peers._measure import percentiles_ms, read_probes, total_rate

    restore = {m: getattr(m, "live_refusal", None) for m in (local, spark)}
    if case["variant"] == "restart":
        for m, was in restore.items():
            if was is not None:
                m.live_refusal = lambda *args, **kw: "restart asked by the benchmark"  # type: ignore[attr-defined]
    try:
        time.sleep(3.0)  # warm up at the offered rate
        start = time.perf_counter()
        windows, pauses, modes, reasons = [], [], [], []
        for n in MOVES:
            asked = time.perf_counter()
            cluster.rebalance(name, parallelism={"count": n})
            deadline = time.monotonic() + 30
            record = cluster.get_topology_info(name).get("rescale") or {}
            while record.get("status") == "running" and time.monotonic() < deadline:
                time.sleep(0.05)
                record = cluster.get_topology_info(name).get("rescale") or {}
            pauses.append(record.get("pause_ms"))
            modes.append("live" if record.get("live") else "restart")
            reasons.append(record.get("reason"))
            windows.append((asked, asked + SETTLE_S))
            time.sleep(SETTLE_S)
        end = time.perf_counter()
    finally:
        for m, was in restore.items():
            if was is not None:
                m.live_refusal = was  # type: ignore[attr-defined]
    acked, latencies = read_probes(probe_dir, "-spout")
    acked = [stitched(series) for series in acked]
    during = [lat for done, lat in latencies if any(a <= done <= b for a, b in windows)]
    per_move = [percentiles_ms([lat for done, lat in latencies if a <= done <= b])["latency_p99_ms"]
                for a, b in windows]
    shown = "/".join("-" if p is None else f"{p:.0f}" for p in pauses)
    out: dict[str, Any] = {
        "throughput_tps": total_rate(acked, start, end), "words_per_s": None,
        "measured_s": round(end - start, 3), "pause_ms": pauses, "moves": modes, "reasons": reasons,
        "p99_during_ms": per_move, "recover_s": [recovery_s(acked, a, b) for a, b in windows],
        "before_tps": [rate(acked, a - BEFORE_S, a) for a, _ in windows],
        "variant": f"{modes[0]} {shown}ms",
    }
    out.update(percentiles_ms(during))
    return out


def recovery_s(acked: Any, asked: float, until: float, window: float = 1.0,
               step: float = 0.05) -> float | None:
    """Seconds from ``asked`` to the first ``window`` acking 90% of the rate before it.

    The rate before: over the ``BEFORE_S`` before ``asked``. None: not within ``until``.
    """
    before = rate(acked, asked - BEFORE_S, asked)
    if not before:
        return None
    i = 0
    while asked + i * step + window <= until + 1e-9:
        t = asked + i * step
        now = rate(acked, t, t + window)
        if now >= 0.9 * before:
            return round(i * step, 2)
        i += 1
    return None


def stitched(series: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """A probe's cumulative counter made cumulative across restarts.

    A restarted spout task writes to the same probe file, counting from 0 again: each later
    count goes on from the last one its predecessor wrote.
    """
    out: list[tuple[float, float]] = []
    offset, last = 0.0, 0.0
    for t, count in series:
        if count < last:
            offset += last
        last = count
        out.append((t, count + offset))
    return out


def count_at(series: list[tuple[float, float]], t: float) -> float:
    """A cumulative counter's value at ``t``, interpolated between its samples.

    A window with no sample in it (the process stopped) counts what the samples around it
    say, not the rate of the last stretch that had samples.
    """
    before = [p for p in series if p[0] <= t]
    after = [p for p in series if p[0] > t]
    if not before:
        return 0.0
    (t0, c0) = before[-1]
    if not after:
        return c0
    (t1, c1) = after[0]
    return c0 + (c1 - c0) * (t - t0) / (t1 - t0)


def rate(acked: Any, t0: float, t1: float) -> float:
    """Sentences acked per second over [t0, t1], over every spout probe."""
    return sum(count_at(s, t1) - count_at(s, t0) for s in acked) / (t1 - t0)
