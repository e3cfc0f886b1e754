"""Fields, Tuple, MessageId (squall/api/fields.py, tuple.py) and Config (squall/api/config.py)."""

from __future__ import annotations

import pickle

import cloudpickle
import pytest

import squall
from squall.api.config import DEFAULTS, SETTINGS, Config, effective_conf
from squall.api.fields import Fields
from squall.api.tuple import MessageId, Tuple

# ---- Fields ----------------------------------------------------------------------------


def test_fields_order_and_index():
    f = Fields("word", "count")
    assert list(f) == ["word", "count"] and f.to_list() == ["word", "count"]
    assert f.index("count") == 1 and f[0] == "word" and len(f) == 2


def test_fields_from_iterables_and_mixed():
    assert Fields(["a", "b"]) == Fields("a", "b") == Fields("a", ["b"]) == Fields(("a", "b"))
    assert len(Fields()) == 0


def test_fields_unknown_index_names_the_fields():
    with pytest.raises(KeyError, match=r"'nope'.*Fields\('word', 'count'\)"):
        Fields("word", "count").index("nope")


def test_fields_contains():
    f = Fields("a")
    assert "a" in f and f.contains("a")
    assert "b" not in f and not f.contains("b") and 1 not in f


@pytest.mark.parametrize("bad", [[""], ["a", ""], [[1]], [["a", None]], [("a", b"b")]])
def test_fields_refuse_non_strings(bad):
    with pytest.raises(ValueError, match="non-empty strings"):
        Fields(*bad)


@pytest.mark.parametrize("bad", [[1], ["a", None]])
def test_fields_refuse_a_bare_non_string_name(bad):
    with pytest.raises(ValueError, match="non-empty strings"):
        Fields(*bad)


def test_fields_refuse_duplicates():
    with pytest.raises(ValueError, match=r"duplicate field names \['a'\]"):
        Fields("a", "b", "a")


def test_fields_equality_and_hash():
    assert Fields("a", "b") == Fields("a", "b")
    assert Fields("a", "b") != Fields("b", "a")
    assert Fields("a") != ("a",)
    assert len({Fields("a", "b"), Fields("a", "b"), Fields("b")}) == 2
    assert repr(Fields("a", "b")) == "Fields('a', 'b')"


def test_fields_select():
    f = Fields("a", "b", "c")
    assert f.select(Fields("c", "a"), [1, 2, 3]) == [3, 1]


@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps])
def test_fields_pickle_and_keep_their_index(dumps):
    f = pickle.loads(dumps(Fields("x", "y")))
    assert f == Fields("x", "y") and f.index("y") == 1 and "x" in f


# ---- Tuple -----------------------------------------------------------------------------


def make_tuple(values=("hello", 3), ids=None, component="split", stream="default"):
    return Tuple(list(values), Fields("word", "count"), component, stream, 4, ids)


def test_tuple_access_by_position_and_name():
    t = make_tuple()
    assert t[0] == "hello" and t[1] == 3 and t[-1] == 3
    assert t["word"] == "hello" and t["count"] == 3
    assert t.get_value_by_field("count") == 3
    assert t.values == ["hello", 3] and list(t) == ["hello", 3] and len(t) == 2
    assert t.select(Fields("count", "word")) == [3, "hello"]


def test_tuple_bad_keys():
    t = make_tuple()
    with pytest.raises(KeyError, match="nope"):
        t["nope"]
    with pytest.raises(IndexError):
        t[5]


def test_tuple_metadata_and_repr():
    t = make_tuple()
    assert (t.component, t.stream, t.task, t.fields) == ("split", "default", 4, Fields("word", "count"))
    assert "split" in repr(t) and "hello" in repr(t)


@pytest.mark.parametrize(
    "component, stream, tick",
    [("__system", "__tick", True), ("split", "__tick", False), ("__system", "default", False),
     ("split", "default", False)],
)
def test_is_tick(component, stream, tick):
    assert make_tuple(component=component, stream=stream).is_tick() is tick


def test_message_id_of_tracked_and_untracked_tuples():
    assert make_tuple().id == MessageId(None)
    assert make_tuple().id.roots() == []
    t = make_tuple(ids={0xAB: 0x12, 0xCD: 0x34})
    assert sorted(t.id.roots()) == [0xAB, 0xCD]
    assert t.id == MessageId({0xCD: 0x34, 0xAB: 0x12})
    assert hash(t.id) == hash(MessageId({0xCD: 0x34, 0xAB: 0x12}))
    assert t.id != MessageId({0xAB: 0x12})
    assert repr(MessageId({0xAB: 0x12})) == "MessageId{ab:12}"


# ---- Config ----------------------------------------------------------------------------


API_DEFAULTS = {
    "topology.workers": 1,
    "topology.acker.executors": None,
    "topology.message.timeout.secs": 30,
    "topology.max.spout.pending": None,
    "topology.tick.tuple.freq.secs": None,
    "topology.debug": False,
    "topology.state.checkpoint.interval.ms": 1000,
    "topology.state.provider": "squall.state.memory.InMemoryStateProvider",
    "topology.state.provider.config": {},
    "topology.executor.receive.buffer.size": 32768,
    "topology.executor.send.buffer.size": 32768,
}


@pytest.mark.parametrize("key, value", sorted(API_DEFAULTS.items()))
def test_defaults_match_api_md(key, value):
    assert key in DEFAULTS
    assert DEFAULTS[key] == value


def test_every_setting_is_documented_once():
    keys = [s.key for s in SETTINGS]
    assert len(keys) == len(set(keys))
    assert all(s.doc for s in SETTINGS)


@pytest.mark.parametrize(
    "helper, value, key",
    [("set_num_workers", 3, "topology.workers"),
     ("set_num_ackers", 0, "topology.acker.executors"),
     ("set_message_timeout_secs", 12.5, "topology.message.timeout.secs"),
     ("set_max_spout_pending", 100, "topology.max.spout.pending"),
     ("set_max_spout_pending", None, "topology.max.spout.pending"),
     ("set_tick_tuple_freq_secs", 2, "topology.tick.tuple.freq.secs"),
     ("set_debug", True, "topology.debug")],
)
def test_config_helpers_set_storm_keys(helper, value, key):
    conf = Config()
    getattr(conf, helper)(value)
    assert conf == {key: value}


def test_config_is_a_dict_and_starts_empty():
    conf = Config({"squall.spark.master": "local[2]"})
    assert isinstance(conf, dict)
    assert conf == {"squall.spark.master": "local[2]"}
    assert Config() == {}


def test_effective_conf_layers_later_win_and_none_is_skipped():
    merged = effective_conf({"topology.workers": 2, "a": 1}, None, {"a": 2}, {})
    assert merged["topology.workers"] == 2 and merged["a"] == 2
    assert merged["topology.message.timeout.secs"] == 30
    assert effective_conf() == DEFAULTS
    assert effective_conf() is not DEFAULTS


def test_effective_conf_does_not_share_mutable_defaults():
    merged = effective_conf()
    try:
        merged["topology.state.provider.config"]["path"] = "/tmp/x"
        assert DEFAULTS["topology.state.provider.config"] == {}
        assert effective_conf()["topology.state.provider.config"] == {}
    finally:
        DEFAULTS["topology.state.provider.config"].pop("path", None)  # undo the pollution


# ---- the package's public names -------------------------------------------------------------


def test_public_names_resolve_lazily():
    for name in ["Spout", "Bolt", "BasicBolt", "TopologyBuilder", "Fields", "Tuple", "Config",
                 "CustomStreamGrouping", "FailedException", "InvalidTopologyError", "LocalCluster"]:
        assert getattr(squall, name).__name__ == name
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        squall.Nope  # noqa: B018
