"""Bolts of Storm's DRPC integration tests (DRPCIntegrationTest, drpc_test.clj), in Python."""

from __future__ import annotations

from collections import defaultdict

from examples.drpc_reach import FOLLOWERS_DB, TWEETERS_DB, builder
from squall import BasicBolt, Bolt, FailedException, Fields
from squall.drpc import BatchBolt


class ExclamationBolt(BasicBolt):
    def execute(self, tup, collector):
        collector.emit([tup[0] + "!!!", tup[1]])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("result", "return-info"))


class ExclamationBoltDrpc(BasicBolt):
    def execute(self, tup, collector):
        collector.emit([tup[0], tup[1] + "!!!"])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("id", "result"))


class CreateTuples(BasicBolt):
    def execute(self, tup, collector):
        amt = int(tup[1])
        for _ in range(amt * amt):
            collector.emit([tup[0]])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("request"))


class PartialCount(Bolt):
    """A plain bolt with ``finished_id`` (Storm's FinishedCallback)."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.counts = defaultdict(int)

    def execute(self, tup):
        self.counts[tup[0]] += 1
        self.collector.ack(tup)

    def finished_id(self, id):
        self.collector.emit([id, self.counts.pop(id, 0)])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("request", "count"))


class CountAggregator(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector
        self.counts = defaultdict(int)

    def execute(self, tup):
        self.counts[tup[0]] += tup[1]
        self.collector.ack(tup)

    def finished_id(self, id):
        self.collector.emit([id, self.counts.pop(id, 0)])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("request", "total"))


class IdBolt(BasicBolt):
    def execute(self, tup, collector):
        collector.emit(tup.values)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("request", "val"))


class EmitFinish(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.ack(tup)

    def finished_id(self, id):
        self.collector.emit([id, "done"])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("request", "result"))


class FailFinishBolt(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.ack(tup)

    def finished_id(self, id):
        raise FailedException()

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("request", "result"))


class NeverAnswers(BasicBolt):
    """Swallows the request: the caller times out."""

    def execute(self, tup, collector):
        pass

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("id", "result"))


class NeverAcks(Bolt):
    """Holds every tuple: the request's tree times out."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        pass

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("id", "result"))


class AckOnTick(Bolt):
    """Holds its tuples and acks them at the next tick, counting them only then; emits the
    count in ``finished_id``. Right only if coordination waits for the acks."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.held = []
        self.counts = defaultdict(int)

    def execute(self, tup):
        if tup.is_tick():
            for t in self.held:
                self.counts[t[0]] += 1
                self.collector.ack(t)
            self.held = []
        else:
            self.held.append(tup)

    def finished_id(self, id):
        self.collector.emit([id, self.counts.pop(id, 0)])

    def get_component_configuration(self):
        return {"topology.tick.tuple.freq.secs": 0.2}

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("request", "count"))


# ---- Storm's reach example: the one in examples/ -------------------------------------

def expected_reach(url):
    return len({f for t in TWEETERS_DB.get(url, []) for f in FOLLOWERS_DB.get(t, [])})


def reach_builder():
    return builder()


class FailingBatch(BatchBolt):
    """Fails every request in finish_batch."""

    def prepare(self, conf, context, collector, id):
        self.collector, self.id = collector, id

    def finish_batch(self):
        raise FailedException("no answer for you")

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("id", "result"))

