"""scaling: the word count (ackers off) on 1, 2 and 4 workers.

What a worker is depends on the system: a thread of one process (squall-local, where the
GIL serializes them), a Spark task's Python process (squall-spark), a core of ``local[N]``
(spark-ss), a process (bytewax's ``cluster_main``), a task slot (pyflink's parallelism),
a spout+split process paired with a count process (raw). The machine has 2 cores: 4
workers is oversubscribed on purpose, to show what happens past the cores.
"""

from __future__ import annotations

from typing import Any

from squall import Config

NAME = "scaling"
SYSTEMS = ("squall-local", "squall-spark", "raw", "bytewax", "spark-ss", "pyflink")
WORKERS = (1, 2, 4)


def cases(profile: Any, system: str) -> list[dict]:
    from benchmarks.workloads import make_case

    return [make_case(NAME, f"{n} worker{'s' if n > 1 else ''}", system, profile, acking=False,
                      workers=n)
            for n in WORKERS]


def build(case: dict, probe_dir: str) -> tuple[Any, Config]:
    from benchmarks.workloads.wordcount import squall_conf, topology

    return topology(probe_dir, case["workers"]), squall_conf(case)
