"""Fixtures for the state tests: a real redis-server per test session (and restartable ones
for outage tests), and one `backend` fixture parametrized over the three providers."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from squall.state.base import KeyValueState, StateProvider
from squall.state.local import LocalStateProvider
from squall.state.memory import InMemoryStateProvider

SETUP_HINT = ("run scripts/setup-redis.sh (as root it installs Debian's redis-server), "
              "then run the tests again")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ping(host: str, port: int, timeout: float = 0.5) -> bool:
    """Whether a Redis server answers PING (raw RESP: no client library involved)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """A redis-server subprocess on 127.0.0.1 that a test can stop and start again on the same port."""

    def __init__(self, workdir: Path, extra_args: tuple[str, ...] = ()) -> None:
        self.host = "127.0.0.1"
        self.port = free_port()
        self.workdir = workdir
        self.extra_args = extra_args
        self.proc: subprocess.Popen | None = None
        workdir.mkdir(parents=True, exist_ok=True)

    @property
    def address(self) -> tuple[str, int]:
        return self.host, self.port

    def conf(self, **extra) -> dict:
        return {"topology.state.provider.config": {"host": self.host, "port": self.port, **extra}}

    def start(self, timeout: float = 10.0) -> None:
        assert self.proc is None, "already running"
        exe = shutil.which("redis-server")
        if exe is None:
            pytest.fail(f"redis-server is not on PATH; {SETUP_HINT}", pytrace=False)
        args = [exe, "--port", str(self.port), "--bind", "127.0.0.1", "--daemonize", "no",
                "--dir", str(self.workdir), "--save", "", "--appendonly", "no", *self.extra_args]
        with open(self.workdir / "redis.log", "ab") as log:  # the child keeps its own copy of the fd
            self.proc = subprocess.Popen(args, cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while not ping(self.host, self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                tail = (self.workdir / "redis.log").read_text(errors="replace")[-2000:]
                pytest.fail(f"redis-server did not answer PING on port {self.port}:\n{tail}", pytrace=False)
            time.sleep(0.02)

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


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
        conf = {"topology.state.provider": "squall.state.redis.RedisStateProvider",
                "topology.state.provider.config": {"host": host, "port": port}}
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
