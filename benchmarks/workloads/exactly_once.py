"""The stateful word count's exactly-once variant (``topology.guarantee: exactly_once``).

The same topology, settings and Redis state as ``stateful_wordcount``'s ``redis`` variant,
which is its at-least-once twin, with two changes that exactly-once requires: the spout is
seekable (``SeekableSentenceSpout``: its position is how many sentences it emitted) and the
guarantee is ``exactly_once``. The ackers then track only the checkpoint barriers, not the
sentences; a sentence is acked (and its latency recorded) when the checkpoint that covers it
commits, so its emit -> ack latency is bounded below by the time from its emit to the next
barrier's commit: about half a checkpoint interval plus a commit on average, a full interval
at worst. That is what a sink aligned to checkpoints (``RedisStreamBolt``,
``DataFrameWriterBolt``) shows to its readers too.
"""

from __future__ import annotations

from typing import Any

from benchmarks.peers._common import SENTENCES
from benchmarks.workloads.components import SentenceSpout
from squall import SeekableSpout

GUARANTEE = "exactly_once"


class SeekableSentenceSpout(SentenceSpout, SeekableSpout):
    """``SentenceSpout`` whose place (sentences emitted so far) can be read and set."""

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        super().open(conf, context, collector)
        self._first = self._next

    def position(self) -> int:
        return self._seq

    def seek(self, position: Any) -> None:
        self._seq = int(position)
        self._next = (self._first + self._seq) % len(SENTENCES)
        # sentences after the position are emitted again: timed from their new emit
        self._emitted_at = {i: t for i, t in self._emitted_at.items() if i < self._seq}


def topology(probe_dir: str, parallelism: int, count_bolt: Any) -> Any:
    """``wordcount.topology`` with the seekable spout (same names, groupings, parallelism)."""
    from examples.word_count import SplitSentence
    from squall import Fields, TopologyBuilder

    builder = TopologyBuilder()
    builder.set_spout("sentence", SeekableSentenceSpout(probe_dir), parallelism=parallelism)
    builder.set_bolt("split", SplitSentence(), parallelism=parallelism).shuffle_grouping("sentence")
    builder.set_bolt("count", count_bolt, parallelism=parallelism).fields_grouping("split", Fields("word"))
    return builder.create_topology()


def exactly_once(conf: dict, probe_dir: str, workers: int, count_bolt: Any) -> Any:
    """Switch ``conf`` to exactly-once; returns the topology with the seekable spout."""
    conf["topology.guarantee"] = GUARANTEE
    return topology(probe_dir, workers, count_bolt)
