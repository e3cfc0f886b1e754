"""A real redis-server per test (started and stopped by the test) for the connector tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.redis_server import RedisServer


@pytest.fixture
def redis_server(tmp_path):
    server = RedisServer(tmp_path / "redis")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def redis_client(redis_server):
    import redis

    client = redis.Redis(host=redis_server.host, port=redis_server.port, decode_responses=True)
    yield client
    client.close()


@pytest.fixture
def subprocess_env() -> dict:
    """Environment for a child Python that imports squall and the tests from this checkout."""
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    return env


@pytest.fixture(scope="module")
def spark():
    """A SparkSession on local[2], shared by a test module."""
    pyspark_sql = pytest.importorskip("pyspark.sql")
    s = (pyspark_sql.SparkSession.builder.master("local[2]").appName("squall-connector-tests")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
         .getOrCreate())
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


@pytest.fixture
def kafka_broker(tmp_path):
    """A Tansu broker per test (memory storage: empty at every start)."""
    from tests.kafka_broker import KafkaBroker

    broker = KafkaBroker(tmp_path / "kafka")
    broker.start()
    yield broker
    broker.stop()
