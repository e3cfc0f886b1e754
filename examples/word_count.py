"""storm-starter's WordCountTopology: random sentences, split into words, counted.

    sentence (RandomSentenceSpout) --shuffle--> split (SplitSentence)
                                   --fields("word")--> count (WordCount)

It runs on the embedded default, Spark ``local[*]``, or in this process::

    python -m examples.word_count --seconds 10                  # Spark local[*]; top words, throughput
    python -m examples.word_count --runtime local --seconds 5   # LocalCluster (no Spark)
    python -m examples.word_count --sentences 10000             # N sentences; waits for every ack
                                                                # and prints exact counts
    python -m examples.word_count --master spark://127.0.0.1:7077   # a Spark cluster

(``python examples/word_count.py ...`` works as well.)

The spout emits every sentence with a message id, so the ackers track each sentence's tuple
tree; a sentence that fails or times out is emitted again. Each count task writes its counts
to a JSON file in a results directory every second and when it stops; the program sums them
once the topology is killed. On a Spark cluster of several machines that directory must be
one the executors share (the default, a temporary directory, suits ``local[*]``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import sys
import tempfile
import time
from collections import Counter, deque
from pathlib import Path
from typing import Any

from squall import BasicBolt, Config, Fields, LocalCluster, Spout, TopologyBuilder

TOPOLOGY_NAME = "word-count"

# storm-starter's RandomSentenceSpout sentences
SENTENCES = [
    "the cow jumped over the moon",
    "an apple a day keeps the doctor away",
    "four score and seven years ago",
    "snow white and the seven dwarfs",
    "i am at two with nature",
]


def task_quota(total: int, index: int, num_tasks: int) -> int:
    """How many of ``total`` sentences the spout task at ``index`` (0-based) emits."""
    base, extra = divmod(total, num_tasks)
    return base + (1 if index < extra else 0)


def task_rng(seed: int | None, index: int) -> random.Random:
    """The sentence picker of the spout task at ``index``; seeded, it is reproducible."""
    return random.Random(None if seed is None else seed * 1_000_003 + index)


class RandomSentenceSpout(Spout):
    """Emits random sentences, each with a message id; replays a sentence when it fails.

    ``limit`` (across all tasks of the spout) makes it finite: each task emits its share and
    then only replays. With ``seed`` the sentences are the same on every run.

    Unlike storm-starter's spout it does not sleep in ``next_tuple``: a squall worker runs
    all of its tasks on one thread, so sleeping there would stall every task of the worker.
    """

    def __init__(self, limit: int | None = None, seed: int | None = None) -> None:
        self.limit = limit
        self.seed = seed

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        self._collector = collector
        tasks = context.get_this_component_tasks()
        index = tasks.index(context.task_id)
        self._rng = task_rng(self.seed, index)
        self._quota = None if self.limit is None else task_quota(self.limit, index, len(tasks))
        self._emitted = 0
        self._pending: dict[int, str] = {}
        self._replay: deque[int] = deque()

    def next_tuple(self) -> None:
        if self._replay:
            msg_id = self._replay.popleft()
            self._collector.emit([self._pending[msg_id]], msg_id=msg_id)
            return
        if self._quota is not None and self._emitted >= self._quota:
            return
        sentence = self._rng.choice(SENTENCES)
        msg_id = self._emitted
        self._emitted += 1
        self._pending[msg_id] = sentence
        self._collector.emit([sentence], msg_id=msg_id)

    def ack(self, msg_id: Any) -> None:
        self._pending.pop(msg_id, None)

    def fail(self, msg_id: Any) -> None:
        if msg_id in self._pending:
            self._replay.append(msg_id)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("sentence"))


class SplitSentence(BasicBolt):
    """Splits a sentence into words (storm-starter's is a Python ShellBolt; this is Python)."""

    def execute(self, tup: Any, collector: Any) -> None:
        for word in tup[0].split(" "):
            collector.emit([word])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word"))


class WordCount(BasicBolt):
    """Counts words and emits ``[word, count]``; saves its counts to ``results_dir``.

    Counts are written to ``count-<task>.json`` on every tick (each second) and at cleanup,
    through a temporary file and a rename, so a reader never sees half a file.
    """

    def __init__(self, results_dir: str) -> None:
        self.results_dir = results_dir

    def prepare(self, conf: dict, context: Any) -> None:
        self.counts: Counter = Counter()
        Path(self.results_dir).mkdir(parents=True, exist_ok=True)
        self.path = Path(self.results_dir) / f"count-{context.task_id}.json"

    def execute(self, tup: Any, collector: Any) -> None:
        if tup.is_tick():
            self.save()
            return
        word = tup[0]
        counts = self.counts
        counts[word] += 1
        collector.emit([word, counts[word]])

    def save(self) -> None:
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.counts))
        tmp.replace(self.path)

    def cleanup(self) -> None:
        self.save()

    def get_component_configuration(self) -> dict:
        return {"topology.tick.tuple.freq.secs": 1}

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word", "count"))


def build_topology(results_dir: str | None = None, *, sentences: int | None = None,
                   seed: int | None = None, spouts: int = 5, splitters: int = 8,
                   counters: int = 12) -> Any:
    """The word count topology; parallelism as storm-starter's (5, 8, 12) by default.

    ``sentences`` makes the spout finite (that many sentences in all), ``seed`` makes its
    choice of sentences reproducible; the counts land in ``results_dir`` (default: a new
    temporary directory, as when ``squall submit`` calls this with no arguments).
    """
    if results_dir is None:
        results_dir = tempfile.mkdtemp(prefix="squall-wordcount-")
    builder = TopologyBuilder()
    builder.set_spout("sentence", RandomSentenceSpout(limit=sentences, seed=seed), parallelism=spouts)
    builder.set_bolt("split", SplitSentence(), parallelism=splitters).shuffle_grouping("sentence")
    builder.set_bolt("count", WordCount(results_dir), parallelism=counters).fields_grouping(
        "split", Fields("word"))
    return builder.create_topology()


def expected_counts(sentences: int, seed: int, spouts: int = 5) -> Counter:
    """The word counts a finite, seeded run must produce (when nothing failed)."""
    expected: Counter = Counter()
    for index in range(spouts):
        rng = task_rng(seed, index)
        for _ in range(task_quota(sentences, index, spouts)):
            expected.update(rng.choice(SENTENCES).split(" "))
    return expected


def word_counts(results_dir: str) -> Counter:
    """The counts saved by every count task in ``results_dir``, summed."""
    total: Counter = Counter()
    for path in Path(results_dir).glob("count-*.json"):
        total.update(json.loads(path.read_text()))
    return total


def wait_for_acks(cluster: Any, name: str, spout: str, target: int, timeout: float) -> dict:
    """Poll until ``spout`` has ``target`` acked tuples; returns the last topology info."""
    deadline = time.monotonic() + timeout
    while True:
        info = cluster.get_topology_info(name)
        if info["components"][spout]["acked"] >= target:
            return info
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"only {info['components'][spout]['acked']} of {target} sentences acked after "
                f"{timeout:.0f}s (errors: {[e['message'] for e in info['errors']][:3]})"
            )
        time.sleep(0.05)


def make_cluster(runtime: str, master: str | None) -> Any:
    """A ``LocalCluster``, or a ``SparkCluster`` on ``master`` (default ``local[*]``)."""
    if runtime == "local":
        return LocalCluster()
    from squall.spark import SparkCluster  # pyspark loads only when asked for

    return SparkCluster(master=master or "local[*]")


def run(*, seconds: float = 5.0, workers: int = 2, sentences: int | None = None,
        seed: int | None = None, max_spout_pending: int | None = 1000,
        runtime: str = "spark", master: str | None = None, timeout: float = 180.0) -> dict:
    """Run the topology; returns counts and figures.

    Endless (``sentences=None``) it runs ``seconds`` after the first sentence is acked (so
    Spark's start-up is not counted); finite, until every sentence is acked.
    """
    results_dir = tempfile.mkdtemp(prefix="squall-wordcount-")
    topology = build_topology(results_dir, sentences=sentences, seed=seed)
    conf = Config()
    conf.set_num_workers(workers)
    conf.set_max_spout_pending(max_spout_pending)
    with make_cluster(runtime, master) as cluster:
        print(f"submitting {TOPOLOGY_NAME!r} to {runtime} ({workers} workers)...", flush=True)
        cluster.submit_topology(TOPOLOGY_NAME, conf, topology)
        if sentences is None:
            first = wait_for_acks(cluster, TOPOLOGY_NAME, "sentence", 1, timeout)
            started, acked0 = time.monotonic(), first["components"]["sentence"]["acked"]
            print(f"running for {seconds:.0f}s...", flush=True)
            time.sleep(seconds)
            info = cluster.get_topology_info(TOPOLOGY_NAME)
        else:
            started, acked0 = time.monotonic(), 0
            info = wait_for_acks(cluster, TOPOLOGY_NAME, "sentence", sentences, timeout)
        elapsed = time.monotonic() - started
        cluster.kill_topology(TOPOLOGY_NAME, wait_secs=0)
    spout = info["components"]["sentence"]
    return {
        "counts": word_counts(results_dir),
        "acked": spout["acked"] - acked0,
        "failed": spout["failed"],
        "elapsed_s": elapsed,
        "complete_latency_ms": spout["complete_latency_ms"],
        "errors": info["errors"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="how long to run (endless mode)")
    parser.add_argument("--runtime", choices=("spark", "local"), default="spark",
                        help="spark (the embedded default, local[*]) or local (LocalCluster)")
    parser.add_argument("--master", default=None, help="Spark master (default local[*])")
    parser.add_argument("--workers", type=int, default=2, help="workers (default 2)")
    parser.add_argument("--sentences", type=int, default=None,
                        help="emit exactly N sentences, wait for all acks, print exact counts")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed of the sentence choice (default: 42 with --sentences, else random)")
    parser.add_argument("--max-spout-pending", type=int, default=1000,
                        help="sentences in flight per spout task (default 1000)")
    parser.add_argument("--top", type=int, default=10, help="how many words to print (default 10)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    seed = args.seed if args.seed is not None or args.sentences is None else 42

    result = run(seconds=args.seconds, workers=args.workers, sentences=args.sentences,
                 seed=seed, max_spout_pending=args.max_spout_pending, runtime=args.runtime,
                 master=args.master)
    counts: Counter = result["counts"]
    ok = not result["errors"]

    if args.sentences is None:
        print(f"top {args.top} words after {result['elapsed_s']:.1f}s:")
        for word, n in counts.most_common(args.top):
            print(f"  {word:<10} {n:>10}")
    else:
        print(f"word counts of {args.sentences} sentences (seed {seed}):")
        for word, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {word:<10} {n:>10}")
        expected = expected_counts(args.sentences, seed)
        if counts == expected:
            print(f"all {sum(counts.values())} words counted exactly once")
        else:
            ok = ok and result["failed"] > 0
            print(f"counts differ from the expected ones ({result['failed']} sentences failed "
                  f"and were replayed, so some words were counted twice)")
    rate = result["acked"] / result["elapsed_s"] if result["elapsed_s"] else 0.0
    print(f"{result['acked']} sentences acked in {result['elapsed_s']:.2f}s: {rate:,.0f} sentences/s; "
          f"{result['failed']} failed; mean complete latency {result['complete_latency_ms']:.1f} ms")
    for error in result["errors"][:5]:
        print(f"error in {error['component']} task {error['task']}: {error['message']}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
