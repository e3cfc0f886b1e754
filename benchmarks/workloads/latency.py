"""latency: the word count with its spout paced at 10%, 50% and 90% of the measured maximum.

The maximum is the system's own ``wordcount`` throughput measured earlier in the same run
(ackers on for squall and raw; ``benchmarks.peers._common.pace``). Reported: end-to-end
latency p50/p99/p999 of each sentence, from its emit to the completion of its tuple tree
(squall, raw: the spout's ack callback; peers: the sink seeing the sentence's words
counted), and squall's own complete latency (its mean, as ``get_topology_info`` reports it).
"""

from __future__ import annotations

from typing import Any

from squall import Config

NAME = "latency"
SYSTEMS = ("squall-local", "squall-spark", "raw", "bytewax", "spark-ss", "pyflink")
SHARES = (0.10, 0.50, 0.90)


def cases(profile: Any, system: str) -> list[dict]:
    """One case per share; the rate is set just before it runs (``_common.pace``)."""
    from benchmarks.workloads import make_case

    return [make_case(NAME, f"{int(share * 100)}% of max", system, profile, acking=True, share=share)
            for share in SHARES]


def build(case: dict, probe_dir: str) -> tuple[Any, Config]:
    from benchmarks.workloads.wordcount import squall_conf, topology

    return topology(probe_dir, case["workers"], rate_tps=case["rate_tps"]), squall_conf(case)
