"""Word-count components in a module of their own (executors do not have it on sys.path).

Results leave the worker processes through files in ``out_dir``: components run in
Spark's Python workers, so module globals of the test process are out of reach.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from squall import AsyncBolt, Bolt, Config, Fields, Spout, StatefulBolt, TopologyBuilder

WORDS = ["apple", "banana", "cherry", "date", "elder", "fig", "grape"]


def sentence(i: int) -> str:
    """The i-th sentence: a deterministic mix of WORDS, 3 to 6 words long."""
    n = 3 + i % 4
    return " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(n))


def expected_counts(n: int) -> dict[str, int]:
    counts: dict[str, int] = {}
    for i in range(n):
        for w in sentence(i).split():
            counts[w] = counts.get(w, 0) + 1
    return counts


class SentenceSpout(Spout):
    """Emits sentences 0..n-1 with msg_id = index, at most ``rate`` per second; replays fails.

    Acked ids go to ``acked-<pid>.txt``; on open, ids acked by earlier processes are skipped.
    """

    def __init__(self, n: int, out_dir: str, rate: float = 0.0) -> None:
        self.n = n
        self.out_dir = out_dir
        self.rate = rate

    def open(self, conf, context, collector) -> None:
        self.collector = collector
        done = set()
        for f in Path(self.out_dir).glob("acked-*.txt"):
            done.update(int(x) for x in f.read_text().split())
        self.todo = [i for i in range(self.n) if i not in done]
        self.todo.reverse()
        self.acked = open(os.path.join(self.out_dir, f"acked-{os.getpid()}.txt"), "a")  # noqa: SIM115
        self.next_at = 0.0

    def next_tuple(self) -> None:
        if not self.todo:
            return
        if self.rate:
            now = time.monotonic()
            if now < self.next_at:
                return
            self.next_at = max(now, self.next_at) + 1.0 / self.rate
        i = self.todo.pop()
        self.collector.emit([i, sentence(i)], msg_id=i)

    def ack(self, msg_id) -> None:
        self.acked.write(f"{msg_id}\n")
        self.acked.flush()

    def fail(self, msg_id) -> None:
        with open(os.path.join(self.out_dir, f"failed-{os.getpid()}.txt"), "a") as f:
            f.write(f"{msg_id}\n")
        self.todo.append(msg_id)

    def declare_output_fields(self, declarer) -> None:
        declarer.declare(Fields("id", "sentence"))


class SplitBolt(Bolt):
    """Splits a sentence; each word carries (sentence id, position) so counts can dedupe."""

    def prepare(self, conf, context, collector) -> None:
        self.collector = collector

    def execute(self, tup) -> None:
        sid = tup["id"]
        for pos, word in enumerate(tup["sentence"].split()):
            self.collector.emit([word, sid, pos], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer) -> None:
        declarer.declare(Fields("word", "id", "pos"))


class CountBolt(Bolt):
    """Writes each (sentence, position, word) it sees to a file before acking it.

    Replays may deliver a word twice; the reader dedupes by (sentence, position), which
    makes the final counts exact (effectively once).
    """

    def __init__(self, out_dir: str) -> None:
        self.out_dir = out_dir

    def prepare(self, conf, context, collector) -> None:
        self.collector = collector
        path = os.path.join(self.out_dir, f"count-{context.task_id}-{os.getpid()}.txt")
        self.out = open(path, "a")  # noqa: SIM115

    def execute(self, tup) -> None:
        self.out.write(f"{tup['id']} {tup['pos']} {tup['word']}\n")
        self.out.flush()
        self.collector.ack(tup)

    def cleanup(self) -> None:
        self.out.close()


class StatefulCountBolt(StatefulBolt):
    """Counts words in its checkpointed KeyValueState."""

    def prepare(self, conf, context, collector) -> None:
        self.collector = collector

    def init_state(self, state) -> None:
        self.state = state

    def execute(self, tup) -> None:
        word = tup["word"]
        self.state.put(word, self.state.get(word, 0) + 1)
        self.collector.ack(tup)


def stateful_wordcount(n: int, out_dir: str, state_dir: str, rate: float = 0.0, timeout: float = 5.0):
    """(conf, topology) of a word count whose counts live in a LocalStateProvider."""
    builder = TopologyBuilder()
    builder.set_spout("sentences", SentenceSpout(n, out_dir, rate), parallelism=1)
    builder.set_bolt("split", SplitBolt(), parallelism=2).shuffle_grouping("sentences")
    builder.set_bolt("count", StatefulCountBolt(), parallelism=2).fields_grouping("split", Fields("word"))
    conf = Config()
    conf.set_num_workers(2)
    conf.set_message_timeout_secs(timeout)
    conf.set_max_spout_pending(256)
    conf["topology.state.checkpoint.interval.ms"] = 300
    conf["topology.state.provider"] = "squall.state.local.LocalStateProvider"
    conf["topology.state.provider.config"] = {"path": state_dir}
    return conf, builder.create_topology()


def replayed(out_dir: str) -> int:
    """How many spout messages were failed (and so replayed)."""
    return sum(len(f.read_text().split()) for f in Path(out_dir).glob("failed-*.txt"))


class UnpicklableBolt(Bolt):
    """Pickles fine on the client; its ``__setstate__`` raises when a worker unpickles it."""

    def __init__(self) -> None:
        self.note = "pickle calls __setstate__ only for a non-empty state"

    def __setstate__(self, state) -> None:
        raise RuntimeError("this bolt refuses to be unpickled")

    def execute(self, tup) -> None:
        pass


def wordcount(n: int, out_dir: str, workers: int = 2, rate: float = 0.0, timeout: float = 5.0,
              waiting: bool = False):
    """(conf, topology) of the word count; ``waiting``: split is an AsyncBolt and count
    runs each task on a thread of its own (set_threaded)."""
    builder = TopologyBuilder()
    builder.set_spout("sentences", SentenceSpout(n, out_dir, rate), parallelism=1)
    split = AsyncSplitBolt() if waiting else SplitBolt()
    builder.set_bolt("split", split, parallelism=2).shuffle_grouping("sentences")
    count = builder.set_bolt("count", CountBolt(out_dir), parallelism=2)
    count.fields_grouping("split", Fields("word"))
    if waiting:
        count.set_threaded()
    conf = Config()
    conf.set_num_workers(workers)
    conf.set_message_timeout_secs(timeout)
    conf.set_max_spout_pending(64)
    return conf, builder.create_topology()


def read_results(out_dir: str) -> tuple[set[int], dict[str, int], int]:
    """(acked ids, exact word counts deduped by (sentence, position), duplicate records)."""
    acked: set[int] = set()
    for f in Path(out_dir).glob("acked-*.txt"):
        acked.update(int(x) for x in f.read_text().split())
    seen: dict[tuple[int, int], str] = {}
    records = 0
    for f in Path(out_dir).glob("count-*.txt"):
        for line in f.read_text().splitlines():
            parts = line.split()
            if len(parts) != 3:
                continue  # a line cut short by SIGKILL
            records += 1
            seen[(int(parts[0]), int(parts[1]))] = parts[2]
    counts: dict[str, int] = {}
    for word in seen.values():
        counts[word] = counts.get(word, 0) + 1
    return acked, counts, records - len(seen)


class SleepyEventSpout(Spout):
    """Sleeps 100 ms per next_tuple (Storm's TestWordSpout) and logs its calls and
    activate/deactivate to ``events-<task>.txt`` with wall-clock times, flagging any
    next_tuple that starts after its deactivate() was called."""

    def __init__(self, out_dir: str) -> None:
        self.out_dir = out_dir

    def open(self, conf, context, collector) -> None:
        self.collector = collector
        self.deactivated = False
        self.log = open(os.path.join(self.out_dir, f"events-{context.task_id}.txt"), "a")  # noqa: SIM115

    def _event(self, what: str) -> None:
        self.log.write(f"{what} {time.time():.6f}\n")
        self.log.flush()

    def next_tuple(self) -> None:
        self._event("violation" if self.deactivated else "call")
        time.sleep(0.1)
        self.collector.emit(["nathan"])

    def activate(self) -> None:
        self.deactivated = False
        self._event("activate")

    def deactivate(self) -> None:
        self.deactivated = True
        self._event("deactivate")

    def declare_output_fields(self, declarer) -> None:
        declarer.declare(Fields("word"))


def sleepy_spouts(out_dir: str, spouts: int = 3, workers: int = 2) -> tuple[Config, object]:
    """``spouts`` sleepy spouts into one sink bolt."""
    b = TopologyBuilder()
    for i in range(spouts):
        b.set_spout(f"words{i}", SleepyEventSpout(out_dir), 1)
    sink = b.set_bolt("sink", NullBolt(), 1)
    for i in range(spouts):
        sink.shuffle_grouping(f"words{i}")
    conf = Config()
    conf.set_num_workers(workers)
    return conf, b.create_topology()


def read_events(out_dir: str) -> dict[int, list[tuple[str, float]]]:
    """Task id -> [(event, wall time)] from the sleepy spouts."""
    events = {}
    for f in Path(out_dir).glob("events-*.txt"):
        task = int(f.stem.split("-")[1])
        events[task] = [(w, float(t)) for w, t in (line.split() for line in f.read_text().splitlines())]
    return events


class NullBolt(Bolt):
    """Acks everything."""

    def prepare(self, conf, context, collector) -> None:
        self.collector = collector

    def execute(self, tup) -> None:
        self.collector.ack(tup)


class AsyncSplitBolt(AsyncBolt):
    """SplitBolt as an AsyncBolt: waits a moment per sentence on the worker's event loop."""

    capacity = 20

    def prepare(self, conf, context, collector) -> None:
        self.collector = collector

    async def execute(self, tup) -> None:
        import asyncio

        await asyncio.sleep(0.001)
        i, text = tup[0], tup[1]
        for pos, word in enumerate(text.split()):
            self.collector.emit([word, i, pos], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer) -> None:
        declarer.declare(Fields("word", "id", "pos"))


class CrashOnce(Bolt):
    """Relays ``[key, seq]``; the first time it sees seq ``at`` it crashes its worker
    process the way ``mode`` says (``exit``: os._exit, ``segfault``: a real SIGSEGV).
    ``hold`` seconds per tuple keep trees open long enough to be caught in flight."""

    def __init__(self, out_dir: str, mode: str, at: int, hold: float = 0.0) -> None:
        self.out_dir, self.mode, self.at, self.hold = out_dir, mode, at, hold

    def prepare(self, conf, context, collector) -> None:
        self.collector = collector

    def execute(self, tup) -> None:
        marker = os.path.join(self.out_dir, f"crashed-{self.mode}")
        if tup[1] == self.at and not os.path.exists(marker):
            open(marker, "w").close()
            if self.mode == "segfault":
                import ctypes

                ctypes.string_at(0)  # a segfault in user code (C extensions do this)
            os._exit(7)
        if self.hold:
            time.sleep(self.hold)
        self.collector.emit(tup.values, anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer) -> None:
        declarer.declare(Fields("key", "seq"))


def sequence(out_dir: str, keys: int, count: int, *, crash: str | None = None, ackers: int | None = None,
             workers: int = 2, timeout: float = 4.0, rate: float = 0.0,
             hold: float = 0.0) -> tuple[Config, object]:
    """SequenceSpout -> relay (or CrashOnce) -> SequenceChecker, fields-grouped on the key."""
    from squall.testing.invariants import SequenceChecker, SequenceSpout

    b = TopologyBuilder()
    b.set_spout("seq", SequenceSpout(out_dir, keys=keys, count=count, rate=rate), 1)
    relay = CrashOnce(out_dir, crash or "never", count // 3 if crash else -1, hold)
    b.set_bolt("relay", relay, 2).shuffle_grouping("seq")
    b.set_bolt("check", SequenceChecker(out_dir), 2).fields_grouping("relay", Fields("key"))
    conf = Config()
    conf.set_num_workers(workers)
    conf.set_message_timeout_secs(timeout)
    conf.set_max_spout_pending(50)
    if ackers is not None:
        conf.set_num_ackers(ackers)
    return conf, b.create_topology()
