"""Python counterparts of Flux's test classes (TestBolt, TestWordSpout, NGrouping, ...)."""

from __future__ import annotations

from squall import BasicBolt, CustomStreamGrouping, Fields, Spout
from tests.integration.components import record


class TestWordSpout(Spout):
    """Storm's TestWordSpout: words from a fixed list."""

    __test__ = False
    WORDS = ["nathan", "mike", "jackson", "golda", "bertels"]

    def __init__(self, words=None, limit=None):
        self.words = list(words or self.WORDS)
        self.limit = limit

    def open(self, conf, context, collector):
        self.collector = collector
        self.sent = 0

    def next_tuple(self):
        if self.limit is not None and self.sent >= self.limit:
            return
        word = self.words[self.sent % len(self.words)]
        self.collector.emit([word], msg_id=self.sent)
        self.sent += 1

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"))


class TestWordCounter(BasicBolt):
    """Storm's TestWordCounter: emits (word, count)."""

    __test__ = False

    def prepare(self, conf, context):
        self.counts = {}

    def execute(self, tup, collector):
        word = tup["word"]
        self.counts[word] = self.counts.get(word, 0) + 1
        collector.emit([word, self.counts[word]])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word", "count"))


class LogInfoBolt(BasicBolt):
    """Flux's LogInfoBolt: records what it gets."""

    def execute(self, tup, collector):
        record("log", list(tup.values))


class NGrouping(CustomStreamGrouping):
    """Storm's NGrouping: the first ``n`` target tasks get every tuple."""

    def __init__(self, n):
        self.n = n

    def prepare(self, context, stream, target_tasks):
        self.targets = sorted(target_tasks)[: self.n]

    def choose_tasks(self, task_id, values):
        return self.targets


class TestClass:
    """Flux's TestBolt.TestClass."""

    __test__ = False

    def __init__(self, field):
        self.field = field

    def __eq__(self, other):
        return isinstance(other, TestClass) and other.field == self.field

    def __hash__(self):
        return hash(self.field)


class TestBolt(BasicBolt):
    """Flux's TestBolt: constructor arguments, config methods and properties."""

    __test__ = False

    def __init__(self, kind="FOO", ratio=1.0, flag=False, classes=None):
        self.kind, self.ratio, self.flag = kind, ratio, flag
        self.init_classes = classes
        self.foo = self.bar = self.foobar = None
        self.classes = None
        self.duration = None
        self.time_len = None
        self.none_called = False

    @staticmethod
    def new_instance(kind="FOO"):
        return TestBolt(kind)

    def with_foo(self, foo):
        self.foo = foo

    def with_none(self):
        self.none_called = True

    def with_bar(self, bar):
        self.bar = bar

    def with_foo_bar(self, foo, bar):
        self.foobar = foo + bar

    def with_classes(self, classes):
        self.classes = classes

    def with_duration(self, duration):
        self.duration = duration

    def set_time_len(self, value):
        self.time_len = value

    def execute(self, tup, collector):
        pass


class DirectSpout(Spout):
    """Declares a direct stream ``picked``."""

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"), stream="picked", direct=True)
