"""storm-starter's WordCountTopology: random sentences, split into words, counted.

    sentence (RandomSentenceSpout) --shuffle--> split (SplitSentence)
                                   --fields("word")--> count (WordCount)

Two ways to run it on a ``LocalCluster``::

    python -m examples.word_count --seconds 5          # endless spout; top 10 and throughput
    python -m examples.word_count --sentences 10000    # N sentences; waits for every ack and
                                                       # prints exact, reproducible counts

(``python examples/word_count.py ...`` works as well.)

The spout emits every sentence with a message id, so the ackers track each sentence's tuple
tree; a sentence that fails or times out is emitted again. The count bolt publishes its
counts through :mod:`examples._results`, which the main program reads once every sentence is
acked (an acked sentence is a counted one: ``WordCount`` counts before its input is acked).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter, deque
from pathlib import Path
from typing import Any

from squall import BasicBolt, Config, Fields, LocalCluster, Spout, TopologyBuilder

if __package__ in (None, ""):  # run as a script: make the ``examples`` package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from examples import _results  # noqa: E402

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
    """Counts words and emits ``[word, count]``; publishes its counts to ``_results``."""

    def prepare(self, conf: dict, context: Any) -> None:
        self.counts = _results.register(context.topology_name, ("count", context.task_id))

    def execute(self, tup: Any, collector: Any) -> None:
        word = tup[0]
        counts = self.counts
        counts[word] += 1
        collector.emit([word, counts[word]])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word", "count"))


def build_topology(*, sentences: int | None = None, seed: int | None = None,
                   spouts: int = 5, splitters: int = 8, counters: int = 12) -> Any:
    """The word count topology; parallelism as storm-starter's (5, 8, 12) by default.

    ``sentences`` makes the spout finite (that many sentences in all), ``seed`` makes its
    choice of sentences reproducible.
    """
    builder = TopologyBuilder()
    builder.set_spout("sentence", RandomSentenceSpout(limit=sentences, seed=seed), parallelism=spouts)
    builder.set_bolt("split", SplitSentence(), parallelism=splitters).shuffle_grouping("sentence")
    builder.set_bolt("count", WordCount(), parallelism=counters).fields_grouping("split", Fields("word"))
    return builder.create_topology()


def expected_counts(sentences: int, seed: int, spouts: int = 5) -> Counter:
    """The word counts a finite, seeded run must produce (when nothing failed)."""
    expected: Counter = Counter()
    for index in range(spouts):
        rng = task_rng(seed, index)
        for _ in range(task_quota(sentences, index, spouts)):
            expected.update(rng.choice(SENTENCES).split(" "))
    return expected


def word_counts(topology_name: str = TOPOLOGY_NAME) -> Counter:
    """The counts published by every count task of ``topology_name``, summed."""
    total: Counter = Counter()
    for key, counter in _results.snapshot(topology_name).items():
        if key[0] == "count":
            total.update(counter)
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


def run(*, seconds: float = 5.0, workers: int = 2, sentences: int | None = None,
        seed: int | None = None, max_spout_pending: int | None = 1000,
        timeout: float = 120.0) -> dict:
    """Run the topology on a ``LocalCluster``; returns counts and figures.

    Endless (``sentences=None``) it runs ``seconds``; finite, until every sentence is acked.
    """
    topology = build_topology(sentences=sentences, seed=seed)
    conf = Config()
    conf.set_num_workers(workers)
    conf.set_max_spout_pending(max_spout_pending)
    _results.reset(TOPOLOGY_NAME)
    with LocalCluster() as cluster:
        cluster.submit_topology(TOPOLOGY_NAME, conf, topology)
        started = time.monotonic()
        if sentences is None:
            time.sleep(seconds)
            info = cluster.get_topology_info(TOPOLOGY_NAME)
        else:
            info = wait_for_acks(cluster, TOPOLOGY_NAME, "sentence", sentences, timeout)
        elapsed = time.monotonic() - started
        cluster.kill_topology(TOPOLOGY_NAME)
    spout = info["components"]["sentence"]
    return {
        "counts": word_counts(TOPOLOGY_NAME),
        "acked": spout["acked"],
        "failed": spout["failed"],
        "elapsed_s": elapsed,
        "complete_latency_ms": spout["complete_latency_ms"],
        "errors": info["errors"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="how long to run (endless mode)")
    parser.add_argument("--workers", type=int, default=2, help="worker threads (default 2)")
    parser.add_argument("--sentences", type=int, default=None,
                        help="emit exactly N sentences, wait for all acks, print exact counts")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed of the sentence choice (default: 42 with --sentences, else random)")
    parser.add_argument("--max-spout-pending", type=int, default=1000,
                        help="sentences in flight per spout task (default 1000)")
    parser.add_argument("--top", type=int, default=10, help="how many words to print (default 10)")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None or args.sentences is None else 42

    result = run(seconds=args.seconds, workers=args.workers, sentences=args.sentences,
                 seed=seed, max_spout_pending=args.max_spout_pending)
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
