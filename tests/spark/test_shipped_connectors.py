"""The connectors' client libraries reach the executors with ``squall.spark.env=auto``.

A topology with a Kafka spout, a Redis stream sink and Redis state is packed as squall
packs it for a cluster; the archive is unpacked as Spark unpacks ``spark.archives`` and
run on a bare virtualenv's Python (a machine that never saw these libraries), which must
import confluent-kafka and redis from it. A needed package that is not installed where
squall packs is refused at submit in one line naming it and the setting.
"""

from __future__ import annotations

import subprocess

import pytest

from squall import Bolt, Config, Fields, TopologyBuilder
from squall.connectors.kafka import KafkaSpout, KafkaSpoutConfig
from squall.connectors.redis import RedisStreamBolt
from squall.spark import needs
from squall.spark import settings as S
from squall.spark.environment import PYTHON_IN_ARCHIVE
from squall.spark.errors import SparkSetupError
from squall.spark.shipping import check_shipped, environment_settings
from tests.integration.components import ListSpout
from tests.spark.test_environment import bare_env, unpack
from tests.spark.test_environment import bare_python as bare_python  # noqa: F401 - a fixture

pytestmark = pytest.mark.spark
MASTER = "spark://10.77.43.9:7077"  # not local: auto packs (nothing connects to it)


class Parse(Bolt):
    def execute(self, tup):
        pass

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("user", "n"))


def kafka_redis_topology():
    b = TopologyBuilder()
    b.set_spout("events", KafkaSpout(KafkaSpoutConfig("kafka-host:9092", ["events"])), 1)
    b.set_bolt("parse", Parse(), 1).shuffle_grouping("events")
    b.set_bolt("out", RedisStreamBolt("counts", host="redis-host"), 1).shuffle_grouping("parse")
    conf = Config()
    conf["topology.state.provider"] = "squall.state.redis.RedisStateProvider"
    return conf, b.create_topology()


def test_a_kafka_and_redis_topology_ships_their_clients_to_a_bare_python(bare_python, tmp_path):
    conf, topology = kafka_redis_topology()
    conf[S.ENV_CACHE_DIR] = str(tmp_path / "cache")
    settings, packed = environment_settings(conf, MASTER, {}, topology)
    assert packed is not None and settings["spark.pyspark.python"] == PYTHON_IN_ARCHIVE
    names = {d.split("==")[0] for d in packed.distributions}
    assert {"confluent-kafka", "redis"} <= names, names
    workdir = unpack(packed.path, tmp_path / "executor")
    probe = "import confluent_kafka, redis, squall.connectors.kafka, squall.connectors.redis; print('ok')"
    done = subprocess.run([PYTHON_IN_ARCHIVE, "-c", probe], cwd=workdir, capture_output=True, text=True,
                          env={**bare_env(), "PYSPARK_PYTHON": bare_python}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_what_each_component_needs_is_named():
    conf, topology = kafka_redis_topology()
    found = needs.topology_needs(conf, topology)
    assert set(found) == {"confluent-kafka", "redis"}
    assert found["confluent-kafka"] == "component 'events' (squall.connectors.kafka.spout.KafkaSpout)"
    assert found["redis"].startswith("component 'out'")
    provider = "squall.state.redis.RedisStateProvider"
    assert needs.topology_needs({"topology.state.provider": provider}, None) == {
        "redis": f"topology.state.provider {provider}"}


def test_a_needed_package_not_installed_is_refused_in_one_line(monkeypatch, tmp_path):
    monkeypatch.setitem(needs.CONNECTOR_DISTRIBUTIONS, __name__, "no-such-client-lib")
    conf, topology = kafka_redis_topology()
    conf[S.ENV_CACHE_DIR] = str(tmp_path / "cache")
    with pytest.raises(SparkSetupError) as e:
        environment_settings(conf, MASTER, {}, topology)
    message = str(e.value)
    assert "\n" not in message
    assert "component 'parse'" in message and "no-such-client-lib" in message
    assert "squall.spark.env" in message


def test_a_later_topology_needing_what_the_running_environment_lacks_is_refused(tmp_path):
    first = Config()
    first[S.ENV_CACHE_DIR] = str(tmp_path / "cache")
    plain = TopologyBuilder()
    plain.set_spout("lines", ListSpout([["a b"]]))  # needs nothing beyond squall
    plain.set_bolt("parse", Parse()).shuffle_grouping("lines")
    # a SparkContext started for another topology, one that needed no connector
    _, packed = environment_settings(first, MASTER, {}, plain.create_topology())
    assert packed is not None
    conf, topology = kafka_redis_topology()
    with pytest.raises(SparkSetupError, match=r"component 'events' .* needs the confluent-kafka package .* "
                                              r"squall\.spark\.env\.packages"):
        check_shipped(packed, conf, topology)


def test_an_environment_packed_before_any_topology_takes_the_installed_clients(tmp_path):
    # SparkCluster.start() before its first submit: the later topologies' connectors are unknown
    first = Config()
    first[S.ENV_CACHE_DIR] = str(tmp_path / "cache")
    _, packed = environment_settings(first, MASTER, {})
    assert packed is not None
    names = {d.split("==", 1)[0].lower() for d in packed.distributions}
    assert {"confluent-kafka", "redis"} <= names, packed.distributions
    conf, topology = kafka_redis_topology()
    check_shipped(packed, conf, topology)  # not refused
