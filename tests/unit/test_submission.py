"""Submit-time checks (squall/runtime/submission.py): names and configuration (E5)."""

from __future__ import annotations

import pytest

from squall.api.builder import TopologyBuilder
from squall.api.components import Bolt, Spout, StatefulBolt
from squall.api.config import DEFAULTS, Config, task_conf
from squall.api.errors import InvalidTopologyError
from squall.api.fields import Fields
from squall.runtime.submission import check_name, prepare_conf

TICK = "topology.tick.tuple.freq.secs"


class WordSpout(Spout):
    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"))


class TickBolt(Bolt):
    def __init__(self, freq=None):
        self.freq = freq

    def execute(self, tup):
        pass

    def get_component_configuration(self):
        return {"topology.tick.tuple.freq.secs": self.freq}


def topology(freq=None):
    b = TopologyBuilder()
    b.set_spout("words", WordSpout())
    b.set_bolt("ticker", TickBolt(freq)).shuffle_grouping("words")
    return b.create_topology()


@pytest.mark.parametrize("name", ["wc", "word-count_2.v1", "A", "x" * 128, "9lives"])
def test_good_names(name):
    assert check_name(name) == name


@pytest.mark.parametrize("name", ["", "-lead", ".hidden", "has space", "slash/name", "x" * 129,
                                  "ünï", None, 5, "tab\t"])
def test_bad_names_are_refused_naming_the_name(name):
    with pytest.raises(InvalidTopologyError, match="topology name") as info:
        check_name(name)
    assert repr(name) in str(info.value)


def test_name_with_trailing_newline_is_refused():
    with pytest.raises(InvalidTopologyError, match="topology name"):
        check_name("wc\n")


def test_defaults_fill_an_empty_or_missing_config():
    assert prepare_conf(None, topology()) == DEFAULTS
    assert prepare_conf({}, topology()) == DEFAULTS


def test_user_values_override_defaults_and_unknown_keys_pass_through():
    conf = Config()
    conf.set_num_workers(3)
    conf["my.key"] = "v"
    merged = prepare_conf(conf, topology())
    assert merged["topology.workers"] == 3
    assert merged["my.key"] == "v"
    assert merged["topology.message.timeout.secs"] == 30


def test_prepare_conf_does_not_modify_the_users_config():
    conf = {"topology.workers": 2}
    prepare_conf(conf, topology())
    assert conf == {"topology.workers": 2}


@pytest.mark.parametrize("conf", [[("topology.workers", 1)], "topology.workers=1", 5, ("a",)])
def test_non_dict_config_is_refused(conf):
    with pytest.raises(InvalidTopologyError, match=rf"must be a dict.*{type(conf).__name__}"):
        prepare_conf(conf, topology())


@pytest.mark.parametrize("not_a_topology", [None, {}, TopologyBuilder(), "wc"])
def test_non_topology_is_refused(not_a_topology):
    with pytest.raises(InvalidTopologyError, match="create_topology"):
        prepare_conf({}, not_a_topology)


BAD_VALUES = [
    ("topology.workers", 0), ("topology.workers", -1), ("topology.workers", 1.5),
    ("topology.workers", "2"), ("topology.workers", True), ("topology.workers", None),
    ("topology.message.timeout.secs", 0), ("topology.message.timeout.secs", -5),
    ("topology.message.timeout.secs", "30"), ("topology.message.timeout.secs", None),
    ("topology.message.timeout.secs", False),
    ("topology.max.spout.pending", 0), ("topology.max.spout.pending", -1),
    ("topology.max.spout.pending", 2.5), ("topology.max.spout.pending", True),
    ("topology.tick.tuple.freq.secs", 0), ("topology.tick.tuple.freq.secs", -1),
    ("topology.tick.tuple.freq.secs", "1"),
    ("topology.executor.receive.buffer.size", 0), ("topology.executor.receive.buffer.size", 10.5),
    ("squall.transfer.batch.size", 0), ("squall.transfer.batch.size", "512"),
    ("squall.spout.max.retries", -1), ("squall.spout.max.retries", 2.5),
    ("squall.spout.max.retries", "3"), ("squall.spout.max.retries", True),
]


@pytest.mark.parametrize("key, value", BAD_VALUES, ids=[f"{k}={v!r}" for k, v in BAD_VALUES])
def test_bad_values_are_refused_naming_key_and_value(key, value):
    with pytest.raises(InvalidTopologyError) as info:
        prepare_conf({key: value}, topology())
    assert key in str(info.value)
    assert repr(value) in str(info.value)


GOOD_VALUES = [
    ("topology.workers", 4), ("topology.message.timeout.secs", 0.5),
    ("squall.spout.max.retries", 0), ("squall.spout.max.retries", 5),
    ("topology.max.spout.pending", None), ("topology.max.spout.pending", 1),
    ("topology.tick.tuple.freq.secs", None), ("topology.tick.tuple.freq.secs", 0.25),
]


@pytest.mark.parametrize("key, value", GOOD_VALUES, ids=[f"{k}={v!r}" for k, v in GOOD_VALUES])
def test_good_values_are_accepted(key, value):
    assert prepare_conf({key: value}, topology())[key] == value


@pytest.mark.parametrize("freq", [0, -1, "5", True])
def test_bad_component_tick_frequency_names_the_component(freq):
    with pytest.raises(InvalidTopologyError, match=r"'ticker'.*tick.tuple.freq.secs") as info:
        prepare_conf({}, topology(freq))
    assert repr(freq) in str(info.value)


@pytest.mark.parametrize("freq", [None, 1, 0.5])
def test_good_component_tick_frequency(freq):
    topo = topology(freq)
    merged = prepare_conf({TICK: 7}, topo)
    assert merged[TICK] == 7  # the topology's own, for other bolts
    ticker = topo.components["ticker"].conf
    assert ticker[TICK] == freq and type(ticker[TICK]) is type(freq)
    # what the ticker's tasks run with: the component's value wins over the topology's
    assert task_conf(merged, ticker)[TICK] == freq
    assert task_conf(merged, topo.components["words"].conf)[TICK] == 7


class _Stateful(StatefulBolt):
    def execute(self, tup):
        pass


def stateful_topology():
    b = TopologyBuilder()
    b.set_spout("s", WordSpout())
    b.set_bolt("k", _Stateful()).shuffle_grouping("s")
    return b.create_topology()


def test_checkpoint_interval_not_below_message_timeout_is_refused():
    conf = {"topology.message.timeout.secs": 10, "topology.state.checkpoint.interval.ms": 10_000}
    with pytest.raises(InvalidTopologyError, match="checkpoint.interval.ms .10000. must be below"):
        prepare_conf(conf, stateful_topology())
    prepare_conf(conf, topology())  # no stateful bolt: no checkpoints, nothing to refuse


def test_stateful_topologies_need_ackers():
    conf = {"topology.acker.executors": 0}
    with pytest.raises(InvalidTopologyError, match="stateful bolts need acking"):
        prepare_conf(conf, stateful_topology())
