"""Components of the exactly-once tests: a seekable list spout, a word count, a sink, faults.

They run in this process (``LocalCluster``) and write what they see into ``RECORD``
(``tests.integration.components``). ``Faults`` holds the failures a run injects: the bolts
draw from it, so each failure happens once, at a point the run's seed chose.
"""

from __future__ import annotations

import random
import threading
from typing import Any

from squall import Fields, SeekableSpout, StatefulBolt
from squall.api.components import BasicBolt, Bolt, Spout
from squall.api.errors import FailedException
from squall.runtime import clock
from squall.runtime.stateful import component_items
from squall.state import memory
from squall.state.codec import DEFAULT
from tests.integration.components import record

WORDS = ["apple", "pear", "plum", "fig", "kiwi", "lime", "date", "grape", "melon", "peach"]


def sentences(seed: int, count: int) -> list[str]:
    """``count`` deterministic sentences of 3 to 7 words."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 7))) for _ in range(count)]


class Faults:
    """Failures to inject, by the data tuple they hit: each fires once (process-wide)."""

    lock = threading.Lock()
    plan: dict[tuple[str, Any], str] = {}  # (bolt, what it executes) -> "raise" | "fail" | "failed-exc"

    @classmethod
    def take(cls, bolt: str, what: Any) -> str | None:
        """The failure planned for ``bolt`` executing ``what``, once."""
        with cls.lock:
            return cls.plan.pop((bolt, what), None)


def committed(namespace: str) -> dict:
    """The committed layer of an in-memory state namespace, decoded."""
    stored = memory._store.get(namespace)
    if stored is None:
        return {}
    with stored.lock:
        items = list(stored.committed.items())
    return {DEFAULT.decode(k): DEFAULT.decode(v) for k, v in items}


def committed_value(namespace: str, key: Any) -> Any:
    """One key's committed value in an in-memory state namespace (None if none)."""
    stored = memory._store.get(namespace)
    if stored is None:
        return None
    with stored.lock:
        data = stored.committed.get(DEFAULT.encode_key(key))
    return None if data is None else DEFAULT.decode(data)


class ListSpout(SeekableSpout):
    """Emits ``[index, sentence]`` for its share of ``sentences`` (msg id: the index).

    Position: how many of its sentences it has emitted. A failed message is emitted again
    (at-least-once); ``ack`` checks (exactly-once) that the checkpoint covering the message
    committed first, from the task's committed state.
    """

    def __init__(self, sentences: list[str], topology: str, rate: float = 0.0) -> None:
        self.sentences = sentences
        self.topology = topology
        self.rate = rate  # new sentences per (simulated) second per task; 0: no limit

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        """Take every n-th sentence."""
        self.collector = collector
        index, tasks = context.get_this_task_index(), len(context.get_this_component_tasks())
        self.mine = [i for i in range(len(self.sentences)) if i % tasks == index]
        self.local = {i: n for n, i in enumerate(self.mine)}  # sentence -> its place here
        self.at = 0
        self.replays: list[int] = []
        self.namespace = f"{self.topology}/{context.component_id}/{index}"
        self.exactly_once = conf.get("topology.guarantee") == "exactly_once"
        self.started = clock.monotonic()

    def next_tuple(self) -> None:
        """The next sentence, replays first."""
        if self.replays:
            i = self.replays.pop()
        elif self.at < len(self.mine):
            if self.rate and self.at >= self.rate * (clock.monotonic() - self.started):
                return  # on simulated time: the run spreads over many checkpoints
            i = self.mine[self.at]
            self.at += 1
        else:
            return
        self.collector.emit([i, self.sentences[i]], msg_id=i)
        record("eo.emitted", i)

    def position(self) -> int:
        """Sentences of this task emitted so far."""
        return self.at

    def seek(self, position: int) -> None:
        """Emit again from ``position``."""
        record("eo.seek", (self.namespace, self.at, position))
        self.at = position

    def ack(self, msg_id: Any) -> None:
        """Record the ack; in exactly-once mode, check that its checkpoint committed."""
        record("eo.acked", msg_id)
        if self.exactly_once:
            pos = committed_value(self.namespace, "position")
            if pos is None or self.local[msg_id] >= pos:
                record("eo.early_ack", (msg_id, pos))

    def fail(self, msg_id: Any) -> None:
        """Replay it."""
        record("eo.failed", msg_id)
        self.replays.append(msg_id)

    def declare_output_fields(self, declarer: Any) -> None:
        """``index``, ``sentence``."""
        declarer.declare(Fields("index", "sentence"))


class PlainSpout(Spout):
    """A spout that is not seekable."""

    def next_tuple(self) -> None:
        """Nothing."""

    def declare_output_fields(self, declarer: Any) -> None:
        """``index``, ``sentence``."""
        declarer.declare(Fields("index", "sentence"))


class Split(BasicBolt):
    """Splits a sentence into ``[word, index, n]``; injected faults hit after some words."""

    def execute(self, tup: Any, collector: Any) -> None:
        """Emit each word; a planned fault strikes after the first word."""
        index, sentence = tup[0], tup[1]
        for n, word in enumerate(sentence.split()):
            collector.emit([word, index, n])
            if n == 0:
                fault = Faults.take("split", index)
                if fault == "raise":
                    raise RuntimeError(f"injected failure at sentence {index}")
                if fault == "failed-exc":
                    raise FailedException(f"injected FailedException at sentence {index}")

    def declare_output_fields(self, declarer: Any) -> None:
        """``word``, ``index``, ``n``."""
        declarer.declare(Fields("word", "index", "n"))


class Count(StatefulBolt):
    """Counts words in its state; emits ``[word, index, n, count]``."""

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        """Keep the collector."""
        self.collector = collector

    def init_state(self, state: Any) -> None:
        """The committed counts."""
        self.state = state

    def execute(self, tup: Any) -> None:
        """Count, emit, ack; or a planned ``fail``."""
        word, index, n = tup[0], tup[1], tup[2]
        if Faults.take("count", (index, n)) == "fail":
            self.collector.fail(tup)
            return
        count = self.state.get(word, 0) + 1
        self.state.put(word, count)
        self.collector.emit([word, index, n, count], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        """``word``, ``index``, ``n``, ``count``."""
        declarer.declare(Fields("word", "index", "n", "count"))


class Sink(StatefulBolt):
    """An aligned sink: how often each ``(index, n)`` reached it, in its checkpointed state."""

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        """Keep the collector."""
        self.collector = collector

    def init_state(self, state: Any) -> None:
        """The committed arrivals."""
        self.state = state

    def execute(self, tup: Any) -> None:
        """Count the arrival of ``(index, n)``."""
        key = f"{tup[1]}:{tup[2]}"
        self.state.put(key, self.state.get(key, 0) + 1)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        """Nothing."""


class Relay(Bolt):
    """Passes ``[word, index, n]`` on, anchored: a stateless stage between split and count."""

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        """Keep the collector."""
        self.collector = collector

    def execute(self, tup: Any) -> None:
        """Pass it on."""
        self.collector.emit(list(tup.values), anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        """``word``, ``index``, ``n``."""
        declarer.declare(Fields("word", "index", "n"))


class PartitionedSpout(SeekableSpout):
    """Emits ``[index, sentence]`` from fixed partitions (sentence ``i`` is in ``p{i % parts}``).

    Task ``k`` of ``n`` reads the partitions ``p`` with ``p % n == k``; its position is
    ``{"p<p>": sentences of p emitted}``, so a new task count can merge the old positions
    (``merge_positions``): each partition's entry comes from the task that read it.
    """

    def __init__(self, sentences: list[str], topology: str, rate: float = 0.0, parts: int = 6) -> None:
        self.sentences, self.topology, self.rate, self.parts = sentences, topology, rate, parts

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        """Take this task's partitions; start each at its beginning."""
        self.collector = collector
        index, tasks = context.get_this_task_index(), len(context.get_this_component_tasks())
        self.owned = [p for p in range(self.parts) if p % tasks == index]
        self.at = {f"p{p}": 0 for p in self.owned}
        self.started = clock.monotonic()
        self.emitted = 0

    def _partition(self, p: int) -> list[int]:
        return list(range(p, len(self.sentences), self.parts))

    def next_tuple(self) -> None:
        """The next sentence of the first partition with some left."""
        if self.rate and self.emitted >= self.rate * (clock.monotonic() - self.started):
            return
        for p in self.owned:
            mine, n = self._partition(p), self.at[f"p{p}"]
            if n < len(mine):
                self.at[f"p{p}"] = n + 1
                self.emitted += 1
                self.collector.emit([mine[n], self.sentences[mine[n]]], msg_id=mine[n])
                record("eo.emitted", mine[n])
                return

    def position(self) -> dict:
        """Per partition read by this task: how many of its sentences were emitted."""
        return dict(self.at)

    def seek(self, position: dict) -> None:
        """Emit each partition again from its entry (unlisted ones from the start)."""
        record("eo.seek", position)
        self.at = {f"p{p}": int(position.get(f"p{p}", 0)) for p in self.owned}

    @staticmethod
    def merge_positions(positions: list, index: int, tasks: int) -> dict:
        """Task ``index`` of ``tasks``: the entries of its partitions from the old positions."""
        merged: dict = {}
        for old in positions:
            for name, n in (old or {}).items():
                if int(name[1:]) % tasks == index:
                    merged[name] = n
        return merged

    def ack(self, msg_id: Any) -> None:
        """Record the ack."""
        record("eo.acked", msg_id)

    def declare_output_fields(self, declarer: Any) -> None:
        """``index``, ``sentence``."""
        declarer.declare(Fields("index", "sentence"))


def latest_generation(topology: str, component: str) -> dict:
    """The committed state of ``component`` in memory: its newest generation of task
    namespaces, or its key groups, merged."""
    out: dict = {}
    for _, k, v in component_items(memory.InMemoryStateProvider(), {}, topology, component):
        assert k not in out, f"{k!r} kept by two namespaces of {component}"
        out[k] = v
    return out


class SlipSpout(ListSpout):
    """A list spout that, once, moves its position past a sentence it does not emit.

    ``how``: "raise" (``next_tuple`` raises after moving on, as a translator that fails) or
    "emit" (the emit raises and the spout carries on, as a spout that only reports it).
    The sentence is ``slip`` (by index); the fault fires once per process (``Faults``).
    """

    def __init__(self, sentences: list[str], topology: str, slip: int, how: str, rate: float = 0.0) -> None:
        super().__init__(sentences, topology, rate)
        self.slip, self.how = slip, how
        Faults.plan[("spout", slip)] = how

    def next_tuple(self) -> None:
        """As ``ListSpout``'s, but the planned sentence slips once."""
        if self.at < len(self.mine) and self.mine[self.at] == self.slip and not self.replays \
                and Faults.take("spout", self.slip) is not None:
            self.at += 1  # the position moved on, as a spout's bookkeeping does before the emit
            if self.how == "raise":
                raise RuntimeError(f"injected failure reading sentence {self.slip}")
            try:
                self.collector.emit([self.slip, self.sentences[self.slip]], stream="undeclared")
            except Exception as e:  # noqa: BLE001 - the spout only reports it, as some do
                self.collector.report_error(e)
            return
        super().next_tuple()


class Arrivals(StatefulBolt):
    """An aligned sink: how often each ``<upstream component>:<index>`` reached it."""

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        """Keep the collector."""
        self.collector = collector

    def init_state(self, state: Any) -> None:
        """The committed arrivals."""
        self.state = state

    def execute(self, tup: Any) -> None:
        """Count the arrival."""
        key = f"{tup.component}:{tup[0]}"
        self.state.put(key, self.state.get(key, 0) + 1)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        """Nothing."""


class Pass(Relay):
    """``Relay`` for ``[index, sentence]`` tuples."""

    def declare_output_fields(self, declarer: Any) -> None:
        """``index``, ``sentence``."""
        declarer.declare(Fields("index", "sentence"))


class Lines(StatefulBolt):
    """An aligned sink: how often each ``line`` reached it; a planned fault fails one line once."""

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        """Keep the collector."""
        self.collector = collector

    def init_state(self, state: Any) -> None:
        """The committed arrivals."""
        self.state = state

    def execute(self, tup: Any) -> None:
        """Count the line (or fail it, once, if planned)."""
        line = tup[0]
        if Faults.take("lines", line) == "failed-exc":
            raise FailedException(f"injected FailedException at line {line!r}")
        self.state.put(line, self.state.get(line, 0) + 1)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        """Nothing."""
