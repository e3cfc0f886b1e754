"""Storm's RedisKeyValueStateProvider configuration, as Storm's documentation writes it, on squall."""

from __future__ import annotations

import json
import logging

import pytest

from squall import LocalCluster
from squall.state import StateConfigError, load_provider
from squall.state import redis as squall_redis
from squall.state.redis import RedisStateProvider, storm_config
from tests.integration.test_stateful import SENTENCES, committed_counts, conf, expected, run_until_acked
from tests.redis_server import RedisServer

STORM_PROVIDER = "org.apache.storm.redis.state.RedisKeyValueStateProvider"


def storm_doc_config(port: int) -> str:
    """Storm's example (StatefulTopology's javadoc, storm.yaml) with this test's port: a JSON string."""
    return ('{"keyClass":"...", "valueClass":"...", "keySerializerClass":"...", '
            '"valueSerializerClass":"...", "jedisPoolConfig":{"host":"localhost", "port":PORT, '
            '"timeout":2000, "database":0, "password":"xyz"}}').replace("PORT", str(port))


@pytest.fixture
def redis_with_password(tmp_path):
    """A real redis-server whose password is Storm's example one, ``xyz``."""
    import redis

    server = RedisServer(tmp_path / "redis")
    server.start()
    redis.Redis(host=server.host, port=server.port).config_set("requirepass", "xyz")
    yield server
    server.stop()


def test_storm_form_maps_onto_squall_keys():
    cfg, ignored = storm_config(json.loads(storm_doc_config(6380)))
    assert cfg == {"host": "localhost", "port": 6380, "timeout": 2.0, "db": 0, "password": "xyz"}
    assert ignored == ["keyClass", "valueClass", "keySerializerClass", "valueSerializerClass"]


def test_squall_form_is_left_alone():
    raw = {"host": "h", "port": 1}
    assert storm_config(raw) == (raw, [])


@pytest.mark.parametrize("raw, words", [
    ({"jedisClusterConfig": {"nodes": ["h:1"]}}, ["jedisClusterConfig", "use jedisPoolConfig"]),
    ({"jedisPoolConfig": {"host": "h"}, "port": 1}, ["mixes", "port"]),
    ({"jedisPoolConfig": {"host": "h", "maxTotal": 8}}, ["jedisPoolConfig", "maxTotal"]),
    ({"jedisPoolConfig": {"timeout": -1}}, ["timeout", "milliseconds"]),
    ({"jedisPoolConfig": [1]}, ["jedisPoolConfig must be an object"]),
    ({"keyClass": "x", "retries": 3}, ["unknown keys ['retries']"]),
])
def test_what_cannot_be_honoured_is_an_error_naming_the_key(raw, words):
    with pytest.raises(StateConfigError) as e:
        RedisStateProvider().new_state("ns", {"topology.state.provider.config": raw}, None)
    assert "topology.state.provider.config" in str(e.value)
    for w in words:
        assert w in str(e.value)


def test_storm_java_provider_names_load_squall_providers():
    assert type(load_provider({"topology.state.provider": STORM_PROVIDER})) is RedisStateProvider
    with pytest.raises(StateConfigError, match="HBaseKeyValueStateProvider.*no squall counterpart"):
        load_provider({"topology.state.provider": "org.apache.storm.hbase.state.HBaseKeyValueStateProvider"})


def test_state_works_with_storms_config_and_warns_once_per_ignored_key(redis_with_password, caplog):
    squall_redis._warned.clear()
    c = {"topology.state.provider": STORM_PROVIDER,
         "topology.state.provider.config": storm_doc_config(redis_with_password.port)}
    with caplog.at_level(logging.WARNING, logger="squall.state.redis"):
        provider = load_provider(c)
        state = provider.new_state("storm-form", c, None)
        state.put("apple", 3)
        state.prepare_commit(1)
        state.commit(1)
        again = provider.new_state("storm-form", c, None)
        assert again.get("apple") == 3
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 4, warned
    assert any("keySerializerClass" in w for w in warned)


def test_wrong_password_from_storm_config_fails_naming_redis(redis_with_password):
    raw = json.loads(storm_doc_config(redis_with_password.port))
    raw["jedisPoolConfig"]["password"] = "wrong"
    c = {"topology.state.provider": STORM_PROVIDER, "topology.state.provider.config": raw}
    state = load_provider(c).new_state("bad-password", c, None)
    with pytest.raises(Exception, match="(?i)password|auth"):
        state.get("x")


def test_a_stateful_topology_runs_on_storms_redis_config(redis_with_password):
    c = conf({"topology.state.provider": STORM_PROVIDER,
              "topology.state.provider.config": storm_doc_config(redis_with_password.port)})
    sentences = SENTENCES * 20
    with LocalCluster() as cluster:
        run_until_acked(cluster, "storm-redis", c, sentences, len(sentences))
        assert cluster.get_topology_info("storm-redis")["errors"] == []
        cluster.kill_topology("storm-redis")
    assert committed_counts(c, "storm-redis") == expected(sentences)
