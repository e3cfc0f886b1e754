"""squall.testing.complete_topology and MockedSources."""

import pytest

from squall import BasicBolt, Config, FailedException, Fields, InvalidTopologyError, Spout, TopologyBuilder
from squall.testing import MockedSources, complete_topology
from tests.integration.components import SplitBolt


class Sentences(Spout):
    def declare_output_fields(self, declarer):
        declarer.declare(Fields("sentence"))


class Count(BasicBolt):
    def prepare(self, conf, context):
        self.counts = {}

    def execute(self, tup, collector):
        word = tup["word"]
        self.counts[word] = self.counts.get(word, 0) + 1
        collector.emit([word, self.counts[word]])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word", "count"))


class RejectB(BasicBolt):
    def execute(self, tup, collector):
        if "b" in tup[0]:
            raise FailedException("no b")
        collector.emit([tup[0]], stream="kept")

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("sentence"), stream="kept")


def word_count():
    b = TopologyBuilder()
    b.set_spout("sentences", Sentences(), 2)
    b.set_bolt("split", SplitBolt(), 2).shuffle_grouping("sentences")
    b.set_bolt("count", Count(), 3).fields_grouping("split", Fields("word"))
    return b.create_topology()


@pytest.mark.parametrize("workers", [1, 3])
def test_complete_topology_returns_what_each_component_emitted(workers):
    conf = Config()
    conf.set_num_workers(workers)
    sources = MockedSources({"sentences": [["a b"], ["b c"], ["c c d"]]})
    result = complete_topology(word_count(), mocked_sources=sources, conf=conf)
    assert sorted(result.emitted("sentences")) == [["a b"], ["b c"], ["c c d"]]
    assert sorted(result.emitted("split")) == [["a"], ["b"], ["b"], ["c"], ["c"], ["c"], ["d"]]
    finals = {}
    for word, count in result.emitted("count"):
        finals[word] = max(finals.get(word, 0), count)
    assert finals == {"a": 1, "b": 2, "c": 3, "d": 1}
    assert result.acked("sentences") == [0, 1, 2]
    assert result.failed("sentences") == []


def test_failed_tuples_and_named_streams_are_reported():
    b = TopologyBuilder()
    b.set_spout("sentences", Sentences(), 1)
    b.set_bolt("reject", RejectB(), 1).shuffle_grouping("sentences")
    sources = MockedSources()
    sources.add_mock_data("sentences", ["a a"], ["a b"], ["c"])
    result = complete_topology(b.create_topology(), mocked_sources=sources)
    assert result.acked("sentences") == [0, 2]
    assert result.failed("sentences") == [1]
    assert result.emitted("reject", stream="kept") == [["a a"], ["c"]]
    assert result.emitted("reject") == []


def test_mocked_sources_are_checked_against_the_topology():
    with pytest.raises(InvalidTopologyError, match="'nope' is not a spout"):
        complete_topology(word_count(), MockedSources({"nope": [["x"]]}))
    with pytest.raises(InvalidTopologyError, match="mocked tuple 1 of 'sentences' has 2 values"):
        complete_topology(word_count(), MockedSources({"sentences": [["x"], ["x", "y"]]}))
