"""Bolts of Storm's DRPC integration tests (DRPCIntegrationTest, drpc_test.clj), in Python."""

from __future__ import annotations

from collections import defaultdict

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


# ---- Storm's reach example (storm-starter ReachTopology) ------------------------------

TWEETERS_DB = {
    "foo.com/blog/1": ["sally", "bob", "tim", "george", "nathan"],
    "engineering.twitter.com/blog/5": ["adam", "david", "sally", "nathan"],
    "tech.backtype.com/blog/123": ["tim", "mike", "john"],
}
FOLLOWERS_DB = {
    "sally": ["bob", "tim", "alice", "adam", "jim", "chris", "jai"],
    "bob": ["sally", "nathan", "jim", "mary", "david", "vivian"],
    "tim": ["alex"],
    "nathan": ["sally", "bob", "adam", "harry", "chris", "vivian", "emily", "jordan"],
    "adam": ["david", "carissa"],
    "mike": ["john", "bob"],
    "john": ["alice", "nathan", "jim", "mike", "bob"],
}


def expected_reach(url):
    return len({f for t in TWEETERS_DB.get(url, []) for f in FOLLOWERS_DB.get(t, [])})


class GetTweeters(BasicBolt):
    def execute(self, tup, collector):
        for tweeter in TWEETERS_DB.get(tup[1], []):
            collector.emit([tup[0], tweeter])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("id", "tweeter"))


class GetFollowers(BasicBolt):
    def execute(self, tup, collector):
        for follower in FOLLOWERS_DB.get(tup[1], []):
            collector.emit([tup[0], follower])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("id", "follower"))


class PartialUniquer(BatchBolt):
    def prepare(self, conf, context, collector, id):
        self.collector, self.id, self.followers = collector, id, set()

    def execute(self, tup):
        self.followers.add(tup[1])

    def finish_batch(self):
        self.collector.emit([self.id, len(self.followers)])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("id", "partial-count"))


class CountAggregatorBatch(BatchBolt):
    def prepare(self, conf, context, collector, id):
        self.collector, self.id, self.count = collector, id, 0

    def execute(self, tup):
        self.count += tup[1]

    def finish_batch(self):
        self.collector.emit([self.id, self.count])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("id", "reach"))


class FailingBatch(BatchBolt):
    """Fails every request in finish_batch."""

    def prepare(self, conf, context, collector, id):
        self.collector, self.id = collector, id

    def finish_batch(self):
        raise FailedException("no answer for you")

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("id", "result"))


def reach_builder(function="reach"):
    from squall.drpc import LinearDRPCTopologyBuilder

    builder = LinearDRPCTopologyBuilder(function)
    builder.add_bolt(GetTweeters(), 4)
    builder.add_bolt(GetFollowers(), 12).shuffle_grouping()
    builder.add_bolt(PartialUniquer(), 6).fields_grouping(Fields("id", "follower"))
    builder.add_bolt(CountAggregatorBatch(), 3).fields_grouping(Fields("id"))
    return builder
