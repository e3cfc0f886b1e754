"""wordcount: sentence spout -> split (shuffle) -> count (fields grouping on the word).

storm-starter's WordCountTopology. The five sentences are cycled; split emits each word;
count keeps a dict of counts and emits ``[word, count]``. Measured: sentences and words
completed per second (a sentence is complete when acked with ackers on, when its words
are counted with them off), emit -> ack latency with ackers on, memory. squall and raw run
with ackers on and off; the peers have no per-tuple acking and run once.
"""

from __future__ import annotations

from typing import Any

from squall import Config, Fields, TopologyBuilder

NAME = "wordcount"
SYSTEMS = ("squall-local", "squall-spark", "squall-standalone", "squall-shipped", "raw", "floor", "bytewax",
           "spark-ss", "pyflink")
MAX_SPOUT_PENDING = 500  # per spout task, as the earlier LocalCluster benchmark


def cases(profile: Any, system: str) -> list[dict]:
    from benchmarks.workloads import MAX_RATE, acking_variants, make_case

    return [make_case(NAME, MAX_RATE, system, profile, acking=ack)
            for ack in acking_variants(system)]


def squall_conf(case: dict, *, max_spout_pending: int = MAX_SPOUT_PENDING) -> Config:
    """Workers from the case; ackers and ``max.spout.pending`` on, or no ackers."""
    conf = Config()
    conf.set_num_workers(case["workers"])
    if case["acking"]:
        conf.set_max_spout_pending(int(case["params"].get("max_spout_pending", max_spout_pending)))
    else:
        conf.set_num_ackers(0)
    return conf


def topology(probe_dir: str, parallelism: int, *, rate_tps: float | None = None,
             count_bolt: Any = None) -> Any:
    """The word count topology, ``parallelism`` tasks per component (one per worker)."""
    from benchmarks.workloads.components import SentenceSpout, SplitSentence, WordCount

    builder = TopologyBuilder()
    builder.set_spout("sentence", SentenceSpout(probe_dir, rate_tps), parallelism=parallelism)
    builder.set_bolt("split", SplitSentence(), parallelism=parallelism).shuffle_grouping("sentence")
    counter = count_bolt if count_bolt is not None else WordCount(probe_dir)
    builder.set_bolt("count", counter, parallelism=parallelism).fields_grouping("split", Fields("word"))
    return builder.create_topology()


def build(case: dict, probe_dir: str) -> tuple[Any, Config]:
    return topology(probe_dir, case["workers"]), squall_conf(case)
