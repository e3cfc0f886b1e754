"""multilang: the word count with its split bolt as a multilang subprocess, beside native.

The ``wordcount`` topology (sentence -> split -> count) whose split bolt is, by variant,
squall's Python bolt (``native``), a pystorm bolt over JSON (``pystorm-json``) or msgpack
(``pystorm-mp``), or a Node.js bolt (``node``): the cost of Storm's multilang protocol.
Ackers on. The subprocesses are in ``examples/multilang``.
"""

from __future__ import annotations

import shutil
from typing import Any

from squall import Config, Fields, TopologyBuilder

NAME = "multilang"
SYSTEMS = ("squall-local", "squall-spark")
VARIANTS = {"native": "native", "pystorm-json": "pystorm", "pystorm-mp": "pystorm-msgpack",
            "node": "node"}


def cases(profile: Any, system: str) -> list[dict]:
    from benchmarks.workloads import make_case

    return [make_case(NAME, variant, system, profile, acking=True)
            for variant in VARIANTS if variant != "node" or shutil.which("node")]


def build(case: dict, probe_dir: str) -> tuple[Any, Config]:
    from benchmarks.workloads.components import SentenceSpout, WordCount
    from benchmarks.workloads.wordcount import squall_conf
    from examples.multilang_word_count import split_bolt

    n = case["workers"]
    split, extra = split_bolt(VARIANTS[case["variant"]])
    builder = TopologyBuilder()
    builder.set_spout("sentence", SentenceSpout(probe_dir), parallelism=n)
    builder.set_bolt("split", split, parallelism=n).shuffle_grouping("sentence")
    builder.set_bolt("count", WordCount(probe_dir), parallelism=n).fields_grouping("split", Fields("word"))
    conf = squall_conf(case)
    conf.update(extra)
    return builder.create_topology(), conf
