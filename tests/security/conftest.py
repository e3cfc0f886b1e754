"""Fixtures of the security suite: a real ZooKeeper (shared with the Nimbus suite), and
subprocesses (Nimbus, the ``squall`` command) that run this checkout's squall."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.nimbus import harness
from tests.nimbus.conftest import pytest_configure, zookeeper  # noqa: F401 - fixtures re-exported
from tests.state.conftest import redis_server  # noqa: F401 - fixture re-exported

ROOT = str(Path(__file__).resolve().parents[2])
_base_env = harness.base_env


@pytest.fixture(autouse=True)
def this_checkout(monkeypatch):
    """Nimbus and the commands import squall from this checkout, whatever is installed."""
    monkeypatch.setattr(harness, "base_env", lambda home: {**_base_env(home), "PYTHONPATH": ROOT})
