"""squall's spouts and bolts for the benchmark workloads.

Each spout and each counting bolt owns a ``Probe`` (``benchmarks.peers._common``) that
writes its counters and latencies to files in ``probe_dir``, so that the runner reads the
same figures whether the tasks run as threads of its process (``LocalCluster``) or in
Spark's Python workers (``SparkCluster``).
"""

from __future__ import annotations

import time
from typing import Any

from benchmarks.peers._common import SENTENCES
from benchmarks.peers._measure import Probe
from examples.word_count import SplitSentence  # noqa: F401 - the example's split, re-used
from squall import BasicBolt, Fields, Spout, StatefulBolt, WindowedBolt

CATCH_UP = 64  # most sentences a paced spout emits in one next_tuple when behind


class SentenceSpout(Spout):
    """Cycles storm-starter's five sentences, each emitted with a message id.

    Every emit is stamped with ``perf_counter()``; ``ack`` counts the sentence and records
    its end-to-end latency (emit -> tuple tree acked), unless the topology has no ackers
    (then squall acks at emit and the latency would mean nothing). A failed sentence is
    counted apart and not replayed. ``rate_tps`` (spread over the spout's tasks) paces the
    emits; without it the spout emits whenever squall calls ``next_tuple``.
    """

    def __init__(self, probe_dir: str, rate_tps: float | None = None) -> None:
        self.probe_dir = probe_dir
        self.rate_tps = rate_tps

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        tasks = context.get_this_component_tasks()
        self._collector = collector
        self._next = tasks.index(context.task_id) % len(SENTENCES)
        self._seq = 0
        self._emitted_at: dict[int, float] = {}
        self._timed = conf.get("topology.acker.executors") != 0
        self._probe = Probe(self.probe_dir, f"task{context.task_id}-spout")
        self.failed = 0
        self._interval = len(tasks) / self.rate_tps if self.rate_tps else 0.0
        self._due = time.perf_counter()

    def next_tuple(self) -> None:
        if not self._interval:
            self._emit()
            return
        now = time.perf_counter()
        emitted = 0
        while self._due <= now and emitted < CATCH_UP:
            self._emit()
            self._due += self._interval
            emitted += 1
        if not emitted:
            self._probe.maybe_flush()

    def _emit(self) -> None:
        msg_id = self._seq
        self._seq += 1
        self._emitted_at[msg_id] = time.perf_counter()
        self._collector.emit([SENTENCES[self._next]], msg_id=msg_id)
        self._next = (self._next + 1) % len(SENTENCES)

    def ack(self, msg_id: Any) -> None:
        now = time.perf_counter()
        emitted = self._emitted_at.pop(msg_id, None)
        if self._timed and emitted is not None:
            self._probe.latency(now, now - emitted)
        self._probe.count()

    def fail(self, msg_id: Any) -> None:
        self._emitted_at.pop(msg_id, None)
        self.failed += 1

    def close(self) -> None:
        self._probe.flush()

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("sentence"))


class WordCount(BasicBolt):
    """Counts words in a dict and emits ``[word, count]``; probes every word counted."""

    def __init__(self, probe_dir: str) -> None:
        self.probe_dir = probe_dir

    def prepare(self, conf: dict, context: Any) -> None:
        self.counts: dict[str, int] = {}
        self._probe = Probe(self.probe_dir, f"task{context.task_id}-sink")

    def execute(self, tup: Any, collector: Any) -> None:
        word = tup[0]
        count = self.counts.get(word, 0) + 1
        self.counts[word] = count
        collector.emit([word, count])
        self._probe.count()

    def cleanup(self) -> None:
        self._probe.flush()

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word", "count"))


class StatefulWordCount(StatefulBolt):
    """``WordCount`` whose counts live in the checkpointed ``KeyValueState``.

    Its input acks are held until the checkpoint that covers them commits (squall's
    ``StatefulBolt`` contract), so this measures the state's writes and the checkpoints.
    """

    def __init__(self, probe_dir: str) -> None:
        self.probe_dir = probe_dir

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        self._collector = collector
        self._probe = Probe(self.probe_dir, f"task{context.task_id}-sink")

    def init_state(self, state: Any) -> None:
        self.state = state

    def execute(self, tup: Any) -> None:
        word = tup[0]
        count = self.state.get(word, 0) + 1
        self.state.put(word, count)
        self._collector.emit([word, count], anchors=tup)
        self._collector.ack(tup)
        self._probe.count()

    def cleanup(self) -> None:
        self._probe.flush()

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word", "count"))


class MapStep(BasicBolt):
    """One cheap map step of the pipeline: emits ``[step(value)]``.

    With ``probe_dir`` (the last step) it also counts what it maps.
    """

    def __init__(self, step: Any, probe_dir: str | None = None) -> None:
        self.step = step
        self.probe_dir = probe_dir

    def prepare(self, conf: dict, context: Any) -> None:
        self._probe = Probe(self.probe_dir, f"task{context.task_id}-sink") if self.probe_dir else None

    def execute(self, tup: Any, collector: Any) -> None:
        collector.emit([self.step(tup[0])])
        if self._probe is not None:
            self._probe.count()

    def cleanup(self) -> None:
        if self._probe is not None:
            self._probe.flush()

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("value"))



class SlidingWordCount(WindowedBolt):
    """Word counts over a sliding window, kept incrementally from the new and expired tuples.

    Emits one ``[words in the window, distinct words]`` per window (anchored to the window's
    tuples, as every windowed emit) and probes every word that entered the window.
    """

    def __init__(self, probe_dir: str) -> None:
        super().__init__()
        self.probe_dir = probe_dir

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        self._collector = collector
        self.counts: dict[str, int] = {}
        self._probe = Probe(self.probe_dir, f"task{context.task_id}-sink")

    def execute(self, window: Any) -> None:
        counts = self.counts
        new = window.get_new()
        for tup in new:
            word = tup[0]
            counts[word] = counts.get(word, 0) + 1
        for tup in window.get_expired():
            word = tup[0]
            left = counts[word] - 1
            if left:
                counts[word] = left
            else:
                del counts[word]
        self._collector.emit([len(window.get()), len(counts)])
        self._probe.count(len(new))

    def cleanup(self) -> None:
        self._probe.flush()

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("words", "distinct"))
