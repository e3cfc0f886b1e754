"""The chain planner (``squall.runtime.chain``): each rule that fuses a bolt, each exclusion."""

import pytest

from squall import (
    AsyncBolt,
    BasicBolt,
    Bolt,
    Count,
    Fields,
    Spout,
    StatefulBolt,
    TopologyBuilder,
    WindowedBolt,
)
from squall.runtime.chain import ChainLink, link_refusal, partners, plan_chains, plan_links
from squall.runtime.plan import make_plan, spec_tasks


class Src(Spout):
    def next_tuple(self):
        pass

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("v"))
        declarer.declare(Fields("v"), stream="picked", direct=True)


class Map(BasicBolt):
    def execute(self, tup, collector):
        collector.emit([tup[0]])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("v"))


class Rich(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("v"))


class ChainableRich(Rich):
    chainable = True


class NotChainableMap(Map):
    chainable = False


class Stateful(StatefulBolt):
    def init_state(self, state):
        pass

    def execute(self, tup):
        pass

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("v"))


class Async(AsyncBolt):
    async def execute(self, tup):
        pass

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("v"))


class Windowed(WindowedBolt):
    def execute(self, window):
        pass

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("v"))


def chains(builder, conf=None):
    topology = builder.create_topology()
    return make_plan(topology, dict(conf or {})).chains


def refusal(builder, cid, conf=None):
    topology = builder.create_topology()
    conf = dict(conf or {})
    counts = {c: spec_tasks(s, conf) for c, s in topology.components.items()}
    return link_refusal(topology, conf, counts, cid)


def pipeline(n=2, *, bolt=Map, grouping="shuffle_grouping", maps=3):
    b = TopologyBuilder()
    b.set_spout("sentence", Src(), n)
    up = "sentence"
    for i in range(1, maps + 1):
        getattr(b.set_bolt(f"map{i}", bolt(), n), grouping)(up)
        up = f"map{i}"
    return b


def test_a_pipeline_of_basic_bolts_with_equal_parallelism_is_one_chain():
    assert chains(pipeline()) == [["sentence", "map1", "map2", "map3"]]


def test_plan_chains_is_what_the_plan_holds():
    topology = pipeline().create_topology()
    counts = {c: spec_tasks(s, {}) for c, s in topology.components.items()}
    assert plan_chains(topology, {}, counts) == make_plan(topology, {}).chains


def test_local_or_shuffle_chains_too():
    assert chains(pipeline(grouping="local_or_shuffle_grouping")) == [["sentence", "map1", "map2", "map3"]]


def test_the_link_names_upstream_stream_and_downstream():
    topology = pipeline(maps=1).create_topology()
    counts = {c: spec_tasks(s, {}) for c, s in topology.components.items()}
    assert plan_links(topology, {}, counts) == {"map1": ChainLink("sentence", "default", "map1")}


def test_chaining_off_for_the_topology():
    assert chains(pipeline(), {"squall.chaining": False}) == []
    assert refusal(pipeline(), "map1", {"squall.chaining": False}) == "squall.chaining is False"


def test_chaining_off_for_one_bolt_splits_the_chain_there():
    b = pipeline()
    b._declarers["map2"].conf["squall.chaining"] = False
    assert chains(b) == [["map2", "map3"], ["sentence", "map1"]]


@pytest.mark.parametrize("grouping", ["fields", "all", "global", "none", "partial_key", "direct"])
def test_groupings_other_than_shuffle_do_not_chain(grouping):
    b = TopologyBuilder()
    b.set_spout("s", Src(), 2)
    d = b.set_bolt("m", Map(), 2)
    if grouping in ("fields", "partial_key"):
        getattr(d, f"{grouping}_grouping")("s", Fields("v"))
    elif grouping == "direct":
        d.direct_grouping("s", stream="picked")
    else:
        getattr(d, f"{grouping}_grouping")("s")
    assert chains(b) == []
    assert grouping in refusal(b, "m")


def test_a_rich_bolt_chains_only_when_it_says_chainable():
    assert chains(pipeline(bolt=Rich)) == []
    assert "chainable" in refusal(pipeline(bolt=Rich), "map1")
    assert chains(pipeline(bolt=ChainableRich)) == [["sentence", "map1", "map2", "map3"]]


def test_a_basic_bolt_may_opt_out():
    assert chains(pipeline(bolt=NotChainableMap)) == []


def test_different_parallelism_or_task_counts_break_the_chain():
    b = TopologyBuilder()
    b.set_spout("s", Src(), 2)
    b.set_bolt("a", Map(), 2).shuffle_grouping("s")
    b.set_bolt("b", Map(), 3).shuffle_grouping("a")
    b.set_bolt("c", Map(), 3).shuffle_grouping("b")
    assert chains(b) == [["b", "c"], ["s", "a"]]
    assert "parallelism differs" in refusal(b, "b")
    b2 = TopologyBuilder()
    b2.set_spout("s", Src(), 2)
    b2.set_bolt("a", Map(), 2).shuffle_grouping("s").set_num_tasks(4)
    assert chains(b2) == []


def test_a_bolt_with_two_inputs_does_not_chain():
    b = TopologyBuilder()
    b.set_spout("s", Src(), 1)
    b.set_spout("t", Src(), 1)
    b.set_bolt("m", Map(), 1).shuffle_grouping("s").shuffle_grouping("t")
    assert chains(b) == []
    assert refusal(b, "m") == "2 inputs (a chained bolt has one)"


def test_an_upstream_with_two_consumers_chains_neither():
    b = TopologyBuilder()
    b.set_spout("s", Src(), 1)
    b.set_bolt("m", Map(), 1).shuffle_grouping("s")
    b.set_bolt("n", Map(), 1).shuffle_grouping("s")
    assert chains(b) == []
    assert "2 subscriptions" in refusal(b, "n")


@pytest.mark.parametrize("where", ["downstream", "upstream", "topology"])
def test_threaded_tasks_do_not_chain(where):
    b = pipeline(maps=2)
    conf = {}
    if where == "topology":
        conf["squall.task.threaded"] = True
    else:
        b._declarers["map2" if where == "downstream" else "map1"].set_threaded()
    assert refusal(b, "map2", conf).startswith("it or its upstream")


def test_a_bolt_with_tick_tuples_does_not_chain():
    b = pipeline(maps=2)
    b._declarers["map2"].add_configuration("topology.tick.tuple.freq.secs", 1)
    assert chains(b) == [["sentence", "map1"]]
    assert chains(pipeline(), {"topology.tick.tuple.freq.secs": 1}) == []


def test_stateful_windowed_and_async_bolts_do_not_chain():
    for cls, why in ((Stateful, "stateful"), (Async, "AsyncBolt")):
        assert why in refusal(pipeline(maps=1, bolt=cls), "map1")
    b = TopologyBuilder()
    b.set_spout("s", Src(), 1)
    b.set_bolt("w", Windowed().with_window(Count(3)), 1).shuffle_grouping("s")
    assert chains(b) == []


def test_an_async_upstream_does_not_chain():
    b = TopologyBuilder()
    b.set_spout("s", Src(), 1)
    b.set_bolt("a", Async(), 1).shuffle_grouping("s")
    b.set_bolt("m", Map(), 1).shuffle_grouping("a")
    assert refusal(b, "m") == "its upstream 'a' is an AsyncBolt"


def test_a_checkpointed_topology_does_not_chain():
    b = pipeline(maps=2)
    b.set_bolt("count", Stateful(), 2).shuffle_grouping("map2")
    assert chains(b) == []  # every bolt subscribes to $checkpoint: two inputs each
    assert chains(pipeline(), {"topology.guarantee": "exactly_once"}) == []


def test_partners_pair_the_kth_tasks_of_each_worker():
    links = {"m": ChainLink("s", "default", "m")}
    tasks = {"s": [5, 6], "m": [1, 2]}
    assert partners(links, tasks, {1, 2, 5, 6}) == {5: ("default", 1), 6: ("default", 2)}
    assert partners(links, tasks, {1, 5}) == {5: ("default", 1)}
    assert partners(links, tasks, {2, 5}) == {}  # a pair split over two workers stays grouped


def test_the_plan_places_a_chained_bolt_with_its_upstream():
    topology = pipeline(n=3).create_topology()
    plan = make_plan(topology, {"topology.workers": 2})
    where = plan.task_worker()
    for k in range(3):
        ups = {where[plan.component_tasks[c][k]] for c in ("sentence", "map1", "map2", "map3")}
        assert len(ups) == 1


def test_squall_chaining_must_be_a_boolean():
    from squall import InvalidTopologyError
    from squall.runtime.submission import prepare_conf

    with pytest.raises(InvalidTopologyError, match="squall.chaining"):
        prepare_conf({"squall.chaining": "false"}, pipeline().create_topology())
    assert prepare_conf({}, pipeline().create_topology())["squall.chaining"] is True


def test_a_shuffle_kept_balanced_does_not_chain_and_local_or_shuffle_still_does():
    """Issue 41 item 7: topology.disable.loadaware.messaging asks for a balanced shuffle."""
    balanced = {"topology.disable.loadaware.messaging": True}
    assert chains(pipeline(), balanced) == []
    assert refusal(pipeline(), "map1", balanced) == (
        "a balanced shuffle (topology.disable.loadaware.messaging: True keeps it over every "
        "target task)")
    # local-or-shuffle asks for the emitting worker's tasks, not for balance over all
    assert chains(pipeline(grouping="local_or_shuffle_grouping"), balanced) == [
        ["sentence", "map1", "map2", "map3"]]
