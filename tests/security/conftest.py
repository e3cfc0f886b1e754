"""Fixtures of the security suite: a real ZooKeeper (shared with the Nimbus suite)."""

from __future__ import annotations

from tests.nimbus.conftest import pytest_configure, zookeeper  # noqa: F401 - fixtures re-exported
