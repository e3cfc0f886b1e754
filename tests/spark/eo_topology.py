"""The exactly-once word count of ``test_exactly_once_faults``, in a module of its own (shipped
to the executors by squall, as every test module the components come from).

Source: ``SentenceSource``, a ``SeekableSpout`` over a fixed list of sentences (sentence ``i``
is ``sentence(i)``, always ``WORDS_PER`` words), position = how many of its own sentences a
task has emitted. -> ``split`` (one tuple per word, carrying the sentence id and the word's
place) -> ``count`` (``CountWords``: counts in its checkpointed ``KeyValueState``, Redis
provider) -> ``sink`` (``RedisStreamBolt``: one stream entry per counted word, appended at
checkpoint commits; a stream per run).

Acks and fails reach the test through files in ``out_dir`` (the spout runs in Spark's
Python workers): ``acked-<pid>-<task>.txt`` and ``failed-<pid>-<task>.txt``, one ``place id``
line per word of the sentence, the format ``squall.testing.invariants.check`` reads, with
key = the word's place and seq = the sentence id.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from squall import Bolt, Config, Fields, SeekableSpout, StatefulBolt, TopologyBuilder
from squall.connectors.redis import RedisStreamBolt

WORDS = ["apple", "banana", "cherry", "date", "elder", "fig", "grape"]
WORDS_PER = 4


def sentence(i: int) -> str:
    """The i-th sentence: WORDS_PER words, a deterministic mix of WORDS."""
    return " ".join(WORDS[(i * 5 + k * 3) % len(WORDS)] for k in range(WORDS_PER))


def expected_counts(n: int) -> dict[str, int]:
    """Word -> how often it occurs in sentences 0..n-1."""
    counts: dict[str, int] = {}
    for i in range(n):
        for word in sentence(i).split():
            counts[word] = counts.get(word, 0) + 1
    return counts


class SentenceSource(SeekableSpout):
    """Sentences ``i`` with ``i % tasks == index`` of 0..n-1, msg id ``i``, at most ``rate``
    per second per task.

    Exactly-once: starts at the first sentence and goes where squall seeks it; never replays
    on its own. At-least-once: on open skips what earlier processes saw acked (files in
    ``out_dir``), and replays every failed sentence, as a replayable Storm spout does.
    """

    def __init__(self, n: int, out_dir: str, rate: float) -> None:
        self.n, self.out_dir, self.rate = n, out_dir, rate

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        self.collector = collector
        index, tasks = context.get_this_task_index(), len(context.get_this_component_tasks())
        self.mine = list(range(index, self.n, tasks))
        self.next = 0  # index into self.mine: the position
        self.replays: list[int] = []
        if conf.get("topology.guarantee", "at_least_once") == "at_least_once":
            done = {i for _, i in read_pairs(self.out_dir, "acked")}
            self.mine = [i for i in self.mine if i not in done]
        self.due = time.monotonic()
        self.acked = _open(self.out_dir, "acked", context.task_id)
        self.failed = _open(self.out_dir, "failed", context.task_id)

    def next_tuple(self) -> None:
        if not self.replays and self.next >= len(self.mine):
            return
        now = time.monotonic()
        if now < self.due:
            return
        self.due = max(self.due + 1.0 / self.rate, now - 0.5)
        if self.replays:
            i = self.replays.pop()
        else:
            i = self.mine[self.next]
            self.next += 1
        self.collector.emit([i, sentence(i)], msg_id=i)

    def position(self) -> int:
        return self.next

    def seek(self, position: Any) -> None:
        self.next = int(position)
        self.replays.clear()

    def committed(self, position: Any) -> None:
        # a relaunched task (its predecessor may have died between PREPARE and COMMIT, so
        # those sentences' acks never came): everything before the position is done
        for i in self.mine[:int(position)]:
            self.ack(i)

    def ack(self, msg_id: Any) -> None:
        self.acked.write("".join(f"{k} {msg_id}\n" for k in range(WORDS_PER)))
        self.acked.flush()

    def fail(self, msg_id: Any) -> None:
        self.failed.write("".join(f"{k} {msg_id}\n" for k in range(WORDS_PER)))
        self.failed.flush()
        self.replays.append(msg_id)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("id", "sentence"))


class SplitWords(Bolt):
    """One ``[word, id, place, note]`` per word of a sentence (``note``: an empty dict).

    ``drops``: sentence ids whose first word that goes to a task in another worker loses its
    frame between two live workers: the emitted list is changed after the emit so that it no
    longer packs (the worker drops the frame it is in, ``unsendable_frames``). Once per id
    over the run (a marker file ``dropped-<id>`` in ``out_dir``), so the records read again
    pass.
    """

    def __init__(self, drops: tuple[int, ...] = (), out_dir: str = "") -> None:
        self.drops, self.out_dir = frozenset(drops), out_dir

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        self.collector = collector
        self.here = set(context.worker_tasks)

    def execute(self, tup: Any) -> None:
        drop = tup["id"] in self.drops
        for place, word in enumerate(tup["sentence"].split()):
            note: dict = {}
            targets = self.collector.emit([word, tup["id"], place, note], anchors=tup)
            if drop and targets and not set(targets) & self.here and self._first(tup["id"]):
                # changed after its emit (the emit copied the list, not what is in it), so
                # the frame it waits in cannot pack
                note["lock"] = threading.Lock()
                drop = False
        self.collector.ack(tup)

    def _first(self, i: int) -> bool:
        try:
            os.close(os.open(os.path.join(self.out_dir, f"dropped-{i}"), os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return False
        return True

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word", "id", "place", "note"))


class CountWords(StatefulBolt):
    """Counts words in its checkpointed state; passes each counted word on to the sink."""

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: Any) -> None:
        self.state = state

    def execute(self, tup: Any) -> None:
        word = tup["word"]
        self.state.put(word, self.state.get(word, 0) + 1)
        self.collector.emit([tup["id"], tup["place"], word], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("id", "place", "word"))


def wordcount(n: int, out_dir: str, redis_port: int, stream: str, *, guarantee: str, rate: float,
              workers: int = 2, drops: tuple[int, ...] = (), counts: int = 2) -> tuple[Config, Any]:
    """(conf, topology): the word count above; its counts, and the sink's ``stream``, in the
    Redis on ``redis_port``; ``drops``: sentences whose frame to another worker is lost once;
    ``counts``: the count bolt's parallelism."""
    b = TopologyBuilder()
    b.set_spout("source", SentenceSource(n, out_dir, rate), 2)
    b.set_bolt("split", SplitWords(drops, out_dir), 2).shuffle_grouping("source")
    b.set_bolt("count", CountWords(), counts).fields_grouping("split", Fields("word"))
    b.set_bolt("sink", RedisStreamBolt(stream, port=redis_port), 2).shuffle_grouping("count")
    conf = Config()
    conf.set_num_workers(workers)
    conf.set_message_timeout_secs(3)
    conf.set_max_spout_pending(400)
    conf.update({"topology.guarantee": guarantee,
                 "topology.state.checkpoint.interval.ms": 300,
                 "topology.state.provider": "squall.state.redis.RedisStateProvider",
                 "topology.state.provider.config": {"host": "127.0.0.1", "port": redis_port}})
    return conf, b.create_topology()


def read_pairs(out_dir: str, kind: str) -> list[tuple[int, int]]:
    """The ``place id`` lines of every ``<kind>-*.txt`` (a line cut short by SIGKILL is skipped)."""
    pairs = []
    for f in sorted(Path(out_dir).glob(f"{kind}-*.txt")):
        for line in f.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2:
                pairs.append((int(parts[0]), int(parts[1])))
    return pairs


def _open(out_dir: str, kind: str, task: int) -> Any:
    return open(os.path.join(out_dir, f"{kind}-{os.getpid()}-{task}.txt"), "a")  # noqa: SIM115
