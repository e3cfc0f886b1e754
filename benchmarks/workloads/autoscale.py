"""autoscale: the offered load stepped up 2x while ``topology.autoscale`` runs (issue 39).

A word count whose count bolt costs ten times its split, under-provisioned. The spout is
paced (``SteppedSentenceSpout``: the rate is read from a file every second, so the runner
can step it); split costs 0.05 ms per sentence, count waits 0.5 ms per word on its worker's
loop (a bolt that calls a store). Count starts with 1 task on 2 workers: the base load (150
sentences/s, about 1,000 words/s) keeps it half busy, the step saturates it, and a second
task adds capacity on the other worker (where the live rescale puts it). Reported: the
decisions applied until the spout emits the offered load again, the seconds that took
(``settled``), and the sentences' p50, p99, p999 latency from the step to 10 s after it
settled. A decision is applied only by a live rescale (docs/autoscale.md).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from benchmarks.workloads.components import SentenceSpout
from squall import BasicBolt, Config, Fields, TopologyBuilder

NAME = "autoscale"
SYSTEMS = ("squall-spark",)
BASE_TPS = 150.0
WORD_COST_S = 0.0005
INTERVAL_S = 10
SETTLE_DEADLINE_S = 150.0


class SteppedSentenceSpout(SentenceSpout):
    """``SentenceSpout`` paced at the rate written in ``rate_file`` (read every second)."""

    def __init__(self, probe_dir: str, rate_file: str) -> None:
        super().__init__(probe_dir, rate_tps=BASE_TPS)
        self.rate_file = rate_file

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        super().open(conf, context, collector)
        self._tasks = len(context.get_this_component_tasks())
        self._read_at = 0.0

    def next_tuple(self) -> None:
        now = time.perf_counter()
        if now >= self._read_at:
            self._read_at = now + 1.0
            rate = float(Path(self.rate_file).read_text() or BASE_TPS)
            interval = self._tasks / rate
            if interval != self._interval:
                self._interval, self._due = interval, now
        super().next_tuple()


class CheapSplit(BasicBolt):
    """storm-starter's split after 0.05 ms of work per sentence."""

    def execute(self, tup: Any, collector: Any) -> None:
        until = time.perf_counter() + WORD_COST_S / 10
        while time.perf_counter() < until:
            pass
        for word in tup[0].split():
            collector.emit([word])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word"))


class SlowCount(BasicBolt):
    """Counts words, waiting 0.5 ms on each (on its worker's loop)."""

    def prepare(self, conf: dict, context: Any) -> None:
        self.counts: dict[str, int] = {}

    def execute(self, tup: Any, collector: Any) -> None:
        time.sleep(WORD_COST_S)
        self.counts[tup[0]] = self.counts.get(tup[0], 0) + 1

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def cases(profile: Any, system: str) -> list[dict]:
    from benchmarks.workloads import make_case

    case = make_case(NAME, "2x step", system, profile, acking=True)
    # the runner's time limit counts these: the scenario's own longest run
    case.update(warmup_s=0.0, duration_s=90 + SETTLE_DEADLINE_S + 10)
    return [case]


def rate_file(probe_dir: str) -> Path:
    """Where the runner writes the offered rate (sentences/s) for the spout to read."""
    return Path(probe_dir) / "offered-rate"


def build(case: dict, probe_dir: str) -> tuple[Any, Config]:
    path = rate_file(probe_dir)
    path.write_text(str(BASE_TPS))
    b = TopologyBuilder()
    b.set_spout("sentence", SteppedSentenceSpout(probe_dir, str(path)), 1)
    b.set_bolt("split", CheapSplit(), 1).shuffle_grouping("sentence")
    b.set_bolt("count", SlowCount(), 1).fields_grouping("split", Fields("word"))
    conf = Config()
    conf.set_num_workers(case["workers"])
    conf.update({"topology.autoscale": True, "topology.autoscale.interval.secs": INTERVAL_S,
                 "squall.metrics.window.secs": 2, "squall.chaining": False})
    return b.create_topology(), conf


def measure(cluster: Any, name: str, case: dict, probe_dir: str) -> dict[str, Any]:
    """Run the step and return the row's figures (the runner adds the common fields)."""
    from benchmarks.peers._measure import percentiles_ms, read_probes, total_rate

    def info() -> dict:
        return cluster.get_topology_info(name)

    deadline = time.monotonic() + 90
    while (info()["autoscale"] or {}).get("windows", 0) < 2 and time.monotonic() < deadline:
        time.sleep(0.5)  # two windows at the base load
    before = len(info()["autoscale"]["decisions"])
    step = time.perf_counter()
    rate_file(probe_dir).write_text(str(2 * BASE_TPS))
    settled = None
    while time.perf_counter() - step < SETTLE_DEADLINE_S:
        time.sleep(1.0)
        applied = [d for d in info()["autoscale"]["decisions"][before:] if d["applied"]]
        now = time.perf_counter()
        acked, _ = read_probes(probe_dir, "-spout")
        recent = total_rate(acked, now - 5.0, now - 1.0)
        if applied and recent is not None and recent >= 0.9 * 2 * BASE_TPS:
            settled = now
            break
    end = (settled or time.perf_counter()) + 10.0
    while time.perf_counter() < end:
        time.sleep(0.5)
    acked, latencies = read_probes(probe_dir, "-spout")
    decisions = [d for d in info()["autoscale"]["decisions"][before:] if d["applied"]]
    out: dict[str, Any] = {
        "throughput_tps": total_rate(acked, step, end), "words_per_s": None,
        "measured_s": round(end - step, 3), "offered_tps": 2 * BASE_TPS,
        "decisions": len(decisions), "settled_s": None if settled is None else round(settled - step, 1),
        "changes": [d["changes"] for d in decisions],
        "variant": f"{len(decisions)} dec, " + (f"{settled - step:.0f}s" if settled else "unsettled"),
    }
    out.update(percentiles_ms([lat for done, lat in latencies if step <= done <= end]))
    return out
