"""The benchmark workloads: what each measures, its cases, and squall's topology for it.

A workload module has ``NAME``, ``SYSTEMS`` (the systems it runs on), ``cases(profile,
system)`` (its cases on ``system``) and ``build(case, probe_dir)`` (squall's topology and
conf for a case). Peers implement the same steps in ``benchmarks/peers/<peer>.py``.

On each system the workloads run in this order: ``latency`` paces its spout at shares of
``wordcount``'s measured maximum, so it comes after it.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

from benchmarks.workloads import (
    autoscale,
    iowait,
    kafka_wordcount,
    latency,
    multilang,
    pipeline,
    rescale,
    scaling,
    stateful_wordcount,
    windowed_wordcount,
    wordcount,
)

WORKLOADS: dict[str, ModuleType] = {
    m.NAME: m for m in (wordcount, kafka_wordcount, pipeline, stateful_wordcount, windowed_wordcount, latency,
                        scaling, iowait, multilang, rescale, autoscale)
}
SQUALL_SYSTEMS = ("squall-local", "squall-spark")
SHIPPED_SYSTEMS = ("squall-standalone", "squall-shipped")  # squall-spark on a standalone cluster
# per-tuple acking; peers have none. The floor calls the spout's ack per sentence
ACKING_SYSTEMS = (*SQUALL_SYSTEMS, *SHIPPED_SYSTEMS, "raw", "floor")
# bytewax's run_main runs one worker; raw's 1 is a producer/consumer pair: 2 processes
DEFAULT_WORKERS = {"bytewax": 1, "raw": 1}  # the floor's workers: its cores (2, as squall's)


@dataclass(frozen=True)
class Profile:
    """How long each case runs: ``warmup_s`` unmeasured, then ``duration_s`` measured."""

    name: str
    warmup_s: float
    duration_s: float


QUICK = Profile("quick", warmup_s=1.0, duration_s=3.0)
FULL = Profile("full", warmup_s=5.0, duration_s=20.0)


def make_case(workload: str, variant: str, system: str, profile: Profile, *,
              acking: bool = False, workers: int | None = None, rate_tps: float | None = None,
              **params: Any) -> dict[str, Any]:
    """One case: a plain dict, passed as JSON to the system's runner."""
    return {
        "id": f"{workload}/{variant}/{system}/{'ack' if acking and system in ACKING_SYSTEMS else 'noack'}",
        "workload": workload, "variant": variant, "system": system,
        "acking": acking and system in ACKING_SYSTEMS,
        "workers": workers if workers is not None else DEFAULT_WORKERS.get(system, 2),
        "warmup_s": profile.warmup_s, "duration_s": profile.duration_s,
        "rate_tps": rate_tps, "params": params,
    }


MAX_RATE = "max rate"  # the variant of the unpaced throughput cases


def acking_variants(system: str) -> list[bool]:
    """Ackers on and off where the system has acking; off only elsewhere; the floor acks."""
    if system == "floor":
        return [True]
    return [True, False] if system in ACKING_SYSTEMS else [False]
