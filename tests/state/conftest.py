"""Fixtures for the state tests: a real redis-server per test session (and restartable ones
for outage tests), and one `backend` fixture parametrized over the three providers."""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from squall.state.base import KeyValueState, StateProvider
from squall.state.local import LocalStateProvider
from squall.state.memory import InMemoryStateProvider
from tests.redis_server import SETUP_HINT, RedisServer, free_port, ping  # noqa: F401


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    """A throwaway redis-server (no persistence) for the whole session: yields (host, port)."""
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server.address
    finally:
        server.stop()


@pytest.fixture
def redis_factory(tmp_path):
    """Makes started RedisServer objects (with extra redis-server args) and stops them after the test."""
    servers: list[RedisServer] = []

    def make(*extra_args: str) -> RedisServer:
        server = RedisServer(tmp_path / f"redis{len(servers)}", tuple(extra_args))
        servers.append(server)
        server.start()
        return server

    yield make
    for server in servers:
        server.stop()


@dataclass
class Backend:
    """One provider under test, with the conf its states need; closes what it opened."""

    name: str
    provider_cls: type[StateProvider]
    conf: dict
    durable: bool  # survives the process (local, redis)
    opened: list[KeyValueState] = field(default_factory=list)

    def provider(self) -> StateProvider:
        return self.provider_cls()

    def state(self, namespace: str, provider: StateProvider | None = None) -> KeyValueState:
        state = (provider or self.provider()).new_state(namespace, self.conf, None)
        assert isinstance(state, KeyValueState)
        self.opened.append(state)
        return state


@pytest.fixture(params=["memory", "local", "redis"])
def backend(request, tmp_path):
    if request.param == "memory":
        b = Backend("memory", InMemoryStateProvider, {}, durable=False)
    elif request.param == "local":
        conf = {"topology.state.provider": "squall.state.local.LocalStateProvider",
                "topology.state.provider.config": {"path": str(tmp_path / "state")}}
        b = Backend("local", LocalStateProvider, conf, durable=True)
    else:
        from squall.state.redis import RedisStateProvider

        host, port = request.getfixturevalue("redis_server")
        # others may write to a Redis: pickled values need the topology's key (tests/security)
        conf = {"topology.state.provider": "squall.state.redis.RedisStateProvider",
                "topology.state.provider.config": {"host": host, "port": port},
                "topology.state.key": "contract-test-key"}
        b = Backend("redis", RedisStateProvider, conf, durable=True)
    yield b
    for state in b.opened:
        state.close()


@pytest.fixture
def namespace(request) -> str:
    """A namespace no other test uses (the memory and redis stores outlive a test)."""
    return f"{request.node.name}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def subprocess_env() -> dict:
    """Environment for a child Python that imports squall from this checkout."""
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    return env
