"""Fixtures of the Nimbus suite: real Nimbus processes, and a real ZooKeeper for HA."""

from __future__ import annotations

import pytest

from tests.nimbus.zookeeper_server import ZooKeeperServer


def pytest_configure(config):
    config.addinivalue_line("markers", "spark: needs pyspark, pyzmq and Java 17+")
    config.addinivalue_line("markers", "slow: long-running tests (run in CI all the same)")


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory):
    """A standalone ZooKeeper server on 127.0.0.1 and a free port."""
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper"))
    server.start()
    yield server
    server.stop()
