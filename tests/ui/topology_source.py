"""The topology the UI tests run: five components, three streams, four groupings, one error.

``sentences`` (spout, stream ``default``) -> ``split`` (shuffle), which declares two streams:
``words`` -> ``count`` (fields grouping on ``word``) and ``lengths`` -> ``total`` (global
grouping); ``count``'s ``default`` -> ``report`` (all grouping). ``total`` raises once, on
its third tuple, so the topology has an error with a traceback to show.
"""

from __future__ import annotations

from pathlib import Path

SOURCE = '''\
"""Word count with five components for the UI tests."""
import time

from squall import Bolt, Config, Fields, Spout, TopologyBuilder

WORDS = ["apple", "banana", "cherry", "date", "elder", "fig", "grape"]
RATE = {rate!r}


class SentenceSpout(Spout):
    def open(self, conf, context, collector):
        self.collector = collector
        self.i = 0
        self.next_at = 0.0

    def next_tuple(self):
        now = time.monotonic()
        if now < self.next_at:
            return
        self.next_at = max(now, self.next_at) + 1.0 / RATE
        self.i += 1
        n = 3 + self.i % 4
        words = " ".join(WORDS[(self.i * 7 + k * 3) % len(WORDS)] for k in range(n))
        self.collector.emit([self.i, words], msg_id=self.i)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("id", "sentence"))


class SplitBolt(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector
        self.words = context.register_counter("words")  # a user metric, for the UI and /metrics

    def execute(self, tup):
        words = tup["sentence"].split()
        self.words.inc(len(words))
        for word in words:
            self.collector.emit([word], anchors=tup, stream="words")
        self.collector.emit([len(words)], anchors=tup, stream="lengths")
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"), stream="words")
        declarer.declare(Fields("n"), stream="lengths")


class CountBolt(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector
        self.counts = {{}}

    def execute(self, tup):
        word = tup["word"]
        self.counts[word] = self.counts.get(word, 0) + 1
        self.collector.emit([word, self.counts[word]], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word", "count"))


class TotalBolt(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector
        self.seen = 0

    def execute(self, tup):
        self.seen += 1
        if self.seen == 3:
            raise ValueError("total: the third sentence is refused on purpose")
        self.collector.ack(tup)


class ReportBolt(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.ack(tup)


def build_topology():
    builder = TopologyBuilder()
    builder.set_spout("sentences", SentenceSpout(), parallelism=1)
    builder.set_bolt("split", SplitBolt(), parallelism=2).shuffle_grouping("sentences")
    builder.set_bolt("count", CountBolt(), parallelism=2).fields_grouping(
        "split", Fields("word"), stream="words")
    builder.set_bolt("total", TotalBolt(), parallelism=1).global_grouping("split", stream="lengths")
    builder.set_bolt("report", ReportBolt(), parallelism=2).all_grouping("count")
    conf = Config()
    conf.set_num_workers(2)
    conf.set_message_timeout_secs(5)
    conf.set_max_spout_pending(64)
    conf["ui.test.password"] = "hunter2-not-for-the-page"
    # a memory limit far above what the workers use: /metrics and the UI show it
    conf["topology.worker.max.heap.size.mb"] = 4096
    # the autoscaler in recommend mode: its decisions are shown, nothing is changed
    conf["topology.autoscale"] = True
    conf["topology.autoscale.mode"] = "recommend"
    conf["topology.autoscale.interval.secs"] = 2
    return conf, builder.create_topology()
'''

STREAMS = {("sentences", "split"): ("default", "shuffle"), ("split", "count"): ("words", "fields"),
           ("split", "total"): ("lengths", "global"), ("count", "report"): ("default", "all")}
COMPONENTS = {"sentences": "spout", "split": "bolt", "count": "bolt", "total": "bolt", "report": "bolt"}
SECRET_VALUE = "hunter2-not-for-the-page"


def write_topology(path: Path, *, rate: float = 50.0) -> Path:
    """Write the topology file to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SOURCE.format(rate=rate))
    return path
