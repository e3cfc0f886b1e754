"""pipeline: sentence spout -> upper -> exclaim -> length, each hop a shuffle grouping.

Three cheap map steps (``str.upper``, ``+ "!"``, ``len``) in a chain of three bolts: the
cost of moving a tuple through a topology when the user code costs next to nothing.
Measured: sentences through the whole chain per second, latency with ackers on, memory.
"""

from __future__ import annotations

from typing import Any

from squall import Config, TopologyBuilder

NAME = "pipeline"
SYSTEMS = ("squall-local", "squall-spark", "raw", "floor", "bytewax", "spark-ss", "pyflink")


def cases(profile: Any, system: str) -> list[dict]:
    from benchmarks.workloads import MAX_RATE, acking_variants, make_case

    return [make_case(NAME, MAX_RATE, system, profile, acking=ack)
            for ack in acking_variants(system)]


def build(case: dict, probe_dir: str) -> tuple[Any, Config]:
    from benchmarks.peers._common import PIPELINE_STEPS
    from benchmarks.workloads.components import MapStep, SentenceSpout
    from benchmarks.workloads.wordcount import squall_conf

    n = case["workers"]
    builder = TopologyBuilder()
    builder.set_spout("sentence", SentenceSpout(probe_dir), parallelism=n)
    upstream = "sentence"
    for i, step in enumerate(PIPELINE_STEPS):
        last = i == len(PIPELINE_STEPS) - 1
        name = f"map{i + 1}"
        builder.set_bolt(name, MapStep(step, probe_dir if last else None),
                         parallelism=n).shuffle_grouping(upstream)
        upstream = name
    return builder.create_topology(), squall_conf(case)
