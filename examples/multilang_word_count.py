"""storm-starter's word count with its split bolt in another language (multilang).

    sentence -> split (a pystorm or Node.js subprocess, or native) -> count

``python -m examples.multilang_word_count [--split pystorm|pystorm-msgpack|node|native]
[--sentences N]`` runs it on a LocalCluster until every sentence is acked, then checks the
counts against the sentences emitted and prints the most frequent words.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

from examples.word_count import (
    RandomSentenceSpout,
    SplitSentence,
    WordCount,
    expected_counts,
    wait_for_acks,
    word_counts,
)
from squall import Config, Fields, LocalCluster, TopologyBuilder
from squall.multilang import ShellBolt

RESOURCES = str(Path(__file__).resolve().parent / "multilang")
SPLITS = ("pystorm", "pystorm-msgpack", "node", "native")


def split_bolt(kind: str) -> tuple[Any, dict]:
    """The split bolt of ``kind`` and the configuration it needs."""
    words = {"default": Fields("word")}
    if kind == "native":
        return SplitSentence(), {}
    if kind == "node":
        return ShellBolt(["node", "splitsentence.js"], resources=RESOURCES, outputs=words), {}
    serializer = "msgpack" if kind == "pystorm-msgpack" else "json"
    bolt = ShellBolt([sys.executable, "splitsentence_pystorm.py", serializer], resources=RESOURCES,
                     outputs=words)
    return bolt, {"topology.multilang.serializer": serializer}


def run(split: str, sentences: int = 2000, seed: int = 7) -> dict:
    """Run until ``sentences`` are acked; the counts, and what they should be."""
    results_dir = tempfile.mkdtemp(prefix="squall-multilang-wc-")
    bolt, extra = split_bolt(split)
    builder = TopologyBuilder()
    builder.set_spout("sentence", RandomSentenceSpout(limit=sentences, seed=seed), 1)
    builder.set_bolt("split", bolt, 2).shuffle_grouping("sentence")
    builder.set_bolt("count", WordCount(results_dir), 2).fields_grouping("split", Fields("word"))
    conf = Config()
    conf.set_max_spout_pending(500)
    conf.update(extra)
    with LocalCluster() as cluster:
        cluster.submit_topology("multilang-wc", conf, builder.create_topology())
        info = wait_for_acks(cluster, "multilang-wc", "sentence", sentences, timeout=120)
        cluster.kill_topology("multilang-wc", wait_secs=0)  # count tasks save at cleanup
    return {"counts": word_counts(results_dir), "expected": expected_counts(sentences, seed, spouts=1),
            "errors": info["errors"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", default="pystorm", choices=SPLITS)
    parser.add_argument("--sentences", type=int, default=2000)
    args = parser.parse_args(argv)
    result = run(args.split, args.sentences)
    top = ", ".join(f"{w} {n}" for w, n in result["counts"].most_common(5))
    ok = result["counts"] == result["expected"]
    print(f"split {args.split}: {args.sentences} sentences; top words: {top}; "
          f"counts {'exact' if ok else 'WRONG'}; errors: {len(result['errors'])}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
