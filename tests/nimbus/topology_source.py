"""Topology files for the Nimbus tests, written to disk as a user would write them.

``squall submit FILE`` imports the file in the client, and the workers import it from the
code zip Nimbus stores, so the file must stand alone (it does not import the tests).
Results leave the worker processes through files in ``out``:

- ``emitted-<pid>.txt``: ``id time`` per emitted sentence;
- ``acked-<pid>.txt``: acked sentence ids (a reopened spout skips them: replayable);
- ``events-<pid>.txt``: ``event time`` for the spout's open/activate/deactivate;
- ``conf-<pid>.json``: the configuration values of ``WATCHED`` the spout's ``open`` got;
- ``count-<task>-<pid>.txt``: ``id pos word version n time`` per counted word, where
  ``n`` is the word's count in the bolt's checkpointed state after this tuple.
"""

from __future__ import annotations

from pathlib import Path

SOURCE = '''\
"""Word count {version} for the Nimbus tests."""
import json
import os
import time
from pathlib import Path

from squall import Bolt, Config, Fields, Spout, StatefulBolt, TopologyBuilder

OUT = {out!r}
STATE = {state!r}
VERSION = {version!r}
RATE = {rate!r}
N = {n!r}
WORDS = ["apple", "olive", "plum", "date", "elder", "fig", "grape"]
CONF_EXTRA = {conf_extra!r}
SPOUT_CONF = {spout_conf!r}
EXTRA_COMPONENT = {extra_component!r}
WATCHED = ["topology.message.timeout.secs", "topology.max.spout.pending", "topology.stats.sample.rate",
           "topology.debug", "topology.executor.receive.buffer.size"]


def sentence(i):
    n = 3 + i % 4
    return " ".join(WORDS[(i + k * 3) % len(WORDS)] for k in range(n))


def _append(name, line):
    with open(os.path.join(OUT, name), "a") as f:
        f.write(line + "\\n")


class SentenceSpout(Spout):
    def open(self, conf, context, collector):
        self.collector = collector
        done = set()
        for f in Path(OUT).glob("acked-*.txt"):
            done.update(int(x) for x in f.read_text().split())
        self.todo = [i for i in range(N) if i not in done][::-1]
        self.next_at = 0.0
        self.pid = os.getpid()
        _append(f"events-{{self.pid}}.txt", f"open {{time.time()}}")
        with open(os.path.join(OUT, f"conf-{{self.pid}}.json"), "w") as f:
            json.dump({{k: conf.get(k) for k in WATCHED}}, f)

    def activate(self):
        _append(f"events-{{self.pid}}.txt", f"activate {{time.time()}}")

    def deactivate(self):
        _append(f"events-{{self.pid}}.txt", f"deactivate {{time.time()}}")

    def next_tuple(self):
        if not self.todo:
            return
        now = time.monotonic()
        if now < self.next_at:
            return
        self.next_at = max(now, self.next_at) + 1.0 / RATE
        i = self.todo.pop()
        self.collector.emit([i, sentence(i)], msg_id=i)
        _append(f"emitted-{{self.pid}}.txt", f"{{i}} {{time.time()}}")

    def ack(self, msg_id):
        _append(f"acked-{{self.pid}}.txt", str(msg_id))

    def fail(self, msg_id):
        self.todo.append(msg_id)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("id", "sentence"))


class SplitBolt(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        for pos, word in enumerate(tup["sentence"].split()):
            self.collector.emit([word, tup["id"], pos], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word", "id", "pos"))


class CountBolt(StatefulBolt):
    def prepare(self, conf, context, collector):
        self.collector = collector
        self.path = os.path.join(OUT, f"count-{{context.task_id}}-{{os.getpid()}}.txt")

    def init_state(self, state):
        self.state = state

    def execute(self, tup):
        word = tup["word"]
        n = self.state.get(word, 0) + 1
        self.state.put(word, n)
        with open(self.path, "a") as f:
            f.write(f"{{tup['id']}} {{tup['pos']}} {{word}} {{VERSION}} {{n}} {{time.time()}}\\n")
        self.collector.ack(tup)


def build_topology():
    builder = TopologyBuilder()
    spout = builder.set_spout("sentences", SentenceSpout(), parallelism=1)
    for key, value in SPOUT_CONF.items():
        spout.add_configuration(key, value)
    builder.set_bolt("split", SplitBolt(), parallelism=2).shuffle_grouping("sentences")
    builder.set_bolt("count", CountBolt(), parallelism={count_parallelism!r}).fields_grouping(
        "split", Fields("word"))
    if EXTRA_COMPONENT:  # another shape: a gray upgrade to it is refused
        builder.set_bolt("audit", SplitBolt(), parallelism=1).shuffle_grouping("sentences")
    conf = Config()
    conf.set_num_workers({workers!r})
    conf.set_message_timeout_secs(5)
    conf.set_max_spout_pending(64)
    conf["topology.state.checkpoint.interval.ms"] = 500
    conf["topology.state.provider"] = "squall.state.local.LocalStateProvider"
    conf["topology.state.provider.config"] = {{"path": STATE}}
    conf.update(CONF_EXTRA)
    return conf, builder.create_topology()
'''


def write_topology(path: Path, out: Path, state: Path, version: str, *, rate: float = 40.0,
                   n: int = 100_000, workers: int = 2, count_parallelism: int = 2,
                   conf_extra: dict | None = None, spout_conf: dict | None = None,
                   extra_component: bool = False) -> Path:
    """Write a word-count topology file of ``version`` to ``path``."""
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(SOURCE.format(out=str(out), state=str(state), version=version, rate=rate, n=n,
                                  workers=workers, count_parallelism=count_parallelism,
                                  conf_extra=conf_extra or {}, spout_conf=spout_conf or {},
                                  extra_component=extra_component))
    return path
