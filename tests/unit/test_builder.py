"""TopologyBuilder (squall/api/builder.py): bad topologies are refused at definition time (E5)."""

from __future__ import annotations

import threading

import cloudpickle
import pytest

from squall.api.builder import ComponentDeclarer, TopologyBuilder
from squall.api.components import BasicBolt, Bolt, CustomStreamGrouping, Spout
from squall.api.errors import InvalidTopologyError
from squall.api.fields import Fields


class WordSpout(Spout):
    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word", "count"))
        declarer.declare(Fields("error"), stream="errors")
        declarer.declare(Fields("word"), stream="picked", direct=True)


class SplitBolt(Bolt):
    def execute(self, tup):
        pass

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"))


class SinkBolt(BasicBolt):
    def execute(self, tup, collector):
        pass


class SilentSpout(Spout):
    """Declares no stream at all."""


class StreamsSpout(Spout):
    def __init__(self, *declarations):
        self.declarations = declarations

    def declare_output_fields(self, declarer):
        for fields, stream in self.declarations:
            declarer.declare(fields, stream=stream)


class RaisingSpout(Spout):
    def declare_output_fields(self, declarer):
        raise RuntimeError("schema service down")


class LockBolt(SplitBolt):
    def __init__(self):
        self.lock = threading.Lock()


class ConfBolt(SplitBolt):
    def __init__(self, conf):
        self.conf = conf

    def get_component_configuration(self):
        if isinstance(self.conf, Exception):
            raise self.conf
        return self.conf


class ModGrouping(CustomStreamGrouping):
    def choose_tasks(self, task_id, values):
        return [1]


class NotAGrouping:
    pass


class LockedGrouping(ModGrouping):
    def __init__(self):
        self.lock = threading.Lock()


def with_spout(spout=None, cid="words"):
    b = TopologyBuilder()
    b.set_spout(cid, spout or WordSpout())
    return b


def bolt(b, cid="b", obj=None, parallelism=1):
    return b.set_bolt(cid, obj or SplitBolt(), parallelism=parallelism)


def chain(b, first, second):
    """``first`` reads the spout; returns the declarer of ``second``, not yet subscribed."""
    bolt(b, first).shuffle_grouping("words")
    return bolt(b, second)


def reads(b, upstream):
    """Add bolt 'b' reading ``upstream``; returns the builder."""
    bolt(b).shuffle_grouping(upstream)
    return b


# (id, build function, returning a builder when it made its own, substrings the message must contain)
CASES = [
    ("unknown-component", lambda b: bolt(b).shuffle_grouping("nope"),
     ["'b'", "unknown component 'nope'", "words"]),
    ("unknown-component-2nd-input",
     lambda b: bolt(b).shuffle_grouping("words").all_grouping("nope", "errors"), ["'b'", "'nope'"]),
    ("unknown-stream", lambda b: bolt(b).shuffle_grouping("words", "nostream"),
     ["'b'", "'nostream'", "'words'", "default"]),
    ("unknown-stream-of-bolt", lambda b: chain(b, "a", "b").global_grouping("a", "errors"),
     ["'b'", "'errors'", "'a'"]),
    ("upstream-declares-nothing", lambda b: reads(with_spout(SilentSpout(), "s"), "s"),
     ["'b'", "'default'", "'s'", "none"]),
    ("unknown-field", lambda b: bolt(b).fields_grouping("words", Fields("nope")),
     ["'b'", "'nope'", "'default'", "'words'", "['word', 'count']"]),
    ("unknown-field-named-stream", lambda b: bolt(b).fields_grouping("words", Fields("word"), "errors"),
     ["'b'", "'word'", "'errors'"]),
    ("unknown-second-field", lambda b: bolt(b).fields_grouping("words", ["word", "nope"]),
     ["'b'", "'nope'"]),
    ("no-grouping-field", lambda b: bolt(b).fields_grouping("words", Fields()),
     ["'b'", "names no field", "'default'"]),
    ("direct-on-plain-stream", lambda b: bolt(b).direct_grouping("words"),
     ["'b'", "direct_grouping", "'default'", "'words'", "not direct"]),
    ("shuffle-on-direct-stream", lambda b: bolt(b).shuffle_grouping("words", "picked"),
     ["'b'", "shuffle", "'picked'", "'words'"]),
    ("fields-on-direct-stream", lambda b: bolt(b).fields_grouping("words", Fields("word"), "picked"),
     ["'b'", "fields", "'picked'"]),
    ("all-on-direct-stream", lambda b: bolt(b).all_grouping("words", "picked"), ["'b'", "all", "'picked'"]),
    ("custom-on-direct-stream", lambda b: bolt(b).custom_grouping("words", ModGrouping(), "picked"),
     ["'b'", "custom", "'picked'"]),
    ("custom-not-a-grouping", lambda b: bolt(b).custom_grouping("words", NotAGrouping()),
     ["'b'", "custom_grouping", "NotAGrouping", "'default'"]),
    ("custom-unpicklable", lambda b: bolt(b).custom_grouping("words", LockedGrouping()),
     ["'b'", "custom grouping", "'default'", "'words'", "LockedGrouping", "cannot be pickled"]),
    ("subscribed-twice", lambda b: bolt(b).shuffle_grouping("words").all_grouping("words"),
     ["'b'", "twice", "'default'", "'words'"]),
    ("duplicate-spout-id", lambda b: b.set_spout("words", WordSpout()), ["'words'", "twice"]),
    ("bolt-reuses-spout-id", lambda b: b.set_bolt("words", SplitBolt()), ["'words'", "twice"]),
    ("id-acker", lambda b: b.set_bolt("__acker", SplitBolt()), ["'__acker'", "reserved"]),
    ("id-system", lambda b: b.set_spout("__system", WordSpout()), ["'__system'", "reserved"]),
    ("id-dunder", lambda b: b.set_bolt("__x", SplitBolt()), ["'__x'", "reserved"]),
    ("id-dollar", lambda b: b.set_spout("$x", WordSpout()), ["'$x'", "reserved"]),
    ("id-empty", lambda b: b.set_bolt("", SplitBolt()), ["''", "non-empty string"]),
    ("id-not-str", lambda b: b.set_bolt(5, SplitBolt()), ["5", "non-empty string"]),
    ("spout-given-a-bolt", lambda b: b.set_spout("s2", SplitBolt()), ["'s2'", "Spout", "SplitBolt"]),
    ("bolt-given-a-spout", lambda b: b.set_bolt("b", WordSpout()), ["'b'", "Bolt", "WordSpout"]),
    ("bolt-given-an-object", lambda b: b.set_bolt("b", object()), ["'b'", "object"]),
    ("spout-with-input", lambda b: b.set_spout("s2", WordSpout()).shuffle_grouping("words"),
     ["'s2'", "'words'", "spouts take no inputs"]),
    ("bolt-without-inputs", lambda b: bolt(b), ["'b'", "no inputs"]),
    ("no-spout", lambda b: reads(TopologyBuilder(), "b"), ["no spout"]),
    ("empty-builder", lambda b: TopologyBuilder(), ["no spout"]),
    ("parallelism-zero", lambda b: bolt(b, parallelism=0).shuffle_grouping("words"),
     ["'b'", "parallelism", "0"]),
    ("parallelism-negative", lambda b: bolt(b, parallelism=-2).shuffle_grouping("words"),
     ["'b'", "parallelism", "-2"]),
    ("parallelism-float", lambda b: bolt(b, parallelism=1.5).shuffle_grouping("words"),
     ["'b'", "parallelism", "1.5"]),
    ("parallelism-integral-float", lambda b: bolt(b, parallelism=2.0).shuffle_grouping("words"),
     ["'b'", "parallelism", "2.0"]),
    ("parallelism-bool", lambda b: bolt(b, parallelism=True).shuffle_grouping("words"),
     ["'b'", "parallelism", "True"]),
    ("parallelism-str", lambda b: bolt(b, parallelism="2").shuffle_grouping("words"),
     ["'b'", "parallelism", "'2'"]),
    ("spout-parallelism-zero", lambda b: b.set_spout("s2", WordSpout(), parallelism=0),
     ["'s2'", "parallelism"]),
    ("num-tasks-negative", lambda b: bolt(b).set_num_tasks(-1).shuffle_grouping("words"),
     ["'b'", "num_tasks", "-1"]),
    ("num-tasks-float", lambda b: bolt(b).set_num_tasks(2.5).shuffle_grouping("words"),
     ["'b'", "num_tasks", "2.5"]),
    ("unpicklable-bolt", lambda b: bolt(b, obj=LockBolt()).shuffle_grouping("words"),
     ["'b'", "LockBolt", "cannot be pickled", "lock"]),
    ("declare-raises", lambda b: with_spout(RaisingSpout(), "r"),
     ["'r'", "declare_output_fields", "RuntimeError", "schema service down"]),
    ("stream-declared-twice",
     lambda b: with_spout(StreamsSpout((Fields("a"), "s"), (Fields("b"), "s")), "x"),
     ["'x'", "'s'", "declared twice"]),
    ("duplicate-field-names", lambda b: with_spout(StreamsSpout((["a", "a"], "s"),), "x"),
     ["'x'", "duplicate", "'a'"]),
    ("reserved-stream-dunder", lambda b: with_spout(StreamsSpout((Fields("a"), "__x"),), "x"),
     ["'x'", "'__x'", "reserved"]),
    ("reserved-stream-dollar", lambda b: with_spout(StreamsSpout((Fields("a"), "$tick"),), "x"),
     ["'x'", "'$tick'", "reserved"]),
    ("reserved-stream-ack", lambda b: with_spout(StreamsSpout((Fields("a"), "__ack_ack"),), "x"),
     ["'x'", "'__ack_ack'", "reserved"]),
    ("component-conf-raises", lambda b: bolt(b, obj=ConfBolt(KeyError("k"))).shuffle_grouping("words"),
     ["'b'", "get_component_configuration", "KeyError"]),
    ("component-conf-not-dict", lambda b: bolt(b, obj=ConfBolt([1])).shuffle_grouping("words"),
     ["'b'", "get_component_configuration", "list"]),
]


@pytest.mark.parametrize("build, needles", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_invalid_topology_is_refused_with_a_precise_message(build, needles):
    b = with_spout()
    with pytest.raises(InvalidTopologyError) as info:
        made = build(b)
        (made if isinstance(made, TopologyBuilder) else b).create_topology()
    message = str(info.value)
    for needle in needles:
        assert needle in message, f"{needle!r} not in {message!r}"


def test_num_tasks_zero_is_refused():
    b = with_spout()
    bolt(b).set_num_tasks(0).shuffle_grouping("words")
    with pytest.raises(InvalidTopologyError, match=r"'b'.*num_tasks"):
        b.create_topology()


def test_non_string_stream_name_is_refused():
    with pytest.raises(InvalidTopologyError, match=r"'x'.*5"):
        with_spout(StreamsSpout((Fields("a"), 5),), "x").create_topology()


def test_fields_grouping_accepts_a_single_field_name_string():
    b = with_spout()
    bolt(b).fields_grouping("words", "word")
    (inp,) = b.create_topology().components["b"].inputs
    assert inp.grouping.fields == Fields("word")


# ---- valid topologies ------------------------------------------------------------------


def build_valid():
    b = TopologyBuilder()
    b.set_spout("words", WordSpout(), parallelism=2)
    (bolt(b, "split", parallelism=2).set_num_tasks(4).shuffle_grouping("words")
     .direct_grouping("words", "picked").set_memory_load(128).set_cpu_load(50)
     .add_configuration("topology.tick.tuple.freq.secs", 5))
    b.set_bolt("count", ConfBolt({"k": 1, "topology.tick.tuple.freq.secs": 1}), parallelism=3) \
        .fields_grouping("split", ["word"]).add_configuration("k", 2)
    b.set_bolt("sink", SinkBolt()).global_grouping("count").all_grouping("words", "errors") \
        .custom_grouping("split", ModGrouping())
    return b.create_topology()


def test_valid_topology_has_its_specs():
    topo = build_valid()
    assert sorted(topo.components) == ["count", "sink", "split", "words"]
    assert [s.id for s in topo.spouts] == ["words"]
    assert [c.id for c in topo.bolts] == ["count", "sink", "split"]
    split = topo.components["split"]
    assert (split.kind, split.parallelism, split.num_tasks) == ("bolt", 2, 4)
    assert split.memory_load_mb == 128.0 and split.cpu_load_percent == 50.0
    assert split.class_name.endswith("test_builder.SplitBolt")
    assert [(i.component, i.stream, i.grouping.kind) for i in split.inputs] == [
        ("words", "default", "shuffle"), ("words", "picked", "direct")]
    assert topo.components["words"].num_tasks == 2  # defaults to the parallelism
    assert set(topo.components["words"].streams) == {"default", "errors", "picked"}
    assert topo.components["words"].streams["picked"].direct


def test_fields_grouping_with_a_list_becomes_fields():
    (inp,) = build_valid().components["count"].inputs
    assert inp.grouping.fields == Fields("word")


def test_declarer_conf_overrides_component_conf():
    topo = build_valid()
    assert topo.components["count"].conf == {"k": 2, "topology.tick.tuple.freq.secs": 1}
    assert topo.components["split"].conf == {"topology.tick.tuple.freq.secs": 5, "topology.tasks": 4}


def test_payload_unpickles_to_an_equivalent_component():
    obj = cloudpickle.loads(build_valid().components["count"].payload)
    assert isinstance(obj, ConfBolt) and obj.conf["k"] == 1


def test_subscribers_sorted_by_component():
    topo = build_valid()
    assert [(c, g.kind) for c, g in topo.subscribers("words", "default")] == [("split", "shuffle")]
    assert [c for c, _ in topo.subscribers("split", "default")] == ["count", "sink"]
    assert topo.subscribers("words", "nothing") == []


def test_groupings_chain_and_return_the_declarer():
    d = bolt(with_spout())
    for call in (d.shuffle_grouping, d.none_grouping, d.global_grouping, d.all_grouping,
                 d.local_or_shuffle_grouping):
        assert isinstance(call("words", "errors"), ComponentDeclarer)
    assert d.set_num_tasks(3) is d and d.add_configuration("a", 1) is d


def test_self_subscription_and_cycles_are_allowed():
    b = with_spout()
    bolt(b, "a").shuffle_grouping("words").shuffle_grouping("b")
    bolt(b, "b").shuffle_grouping("a")
    assert sorted(b.create_topology().components) == ["a", "b", "words"]
