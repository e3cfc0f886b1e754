"""A real redis-server on 127.0.0.1 that tests start, stop and restart."""

from __future__ import annotations

import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from tests.server_process import start_server, stop_process

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
    """A redis-server subprocess on 127.0.0.1 that a test can stop and start again on the same port.

    ``host``, ``port`` and ``wrap`` (a command prefix, such as ``ip netns exec NS``) put it
    on another host (``tests.netns``).
    """

    def __init__(self, workdir: Path, extra_args: tuple[str, ...] = (), *, host: str = "127.0.0.1",
                 port: int | None = None, wrap: list[str] | None = None) -> None:
        self.host = host
        self.port = port or free_port()
        self.wrap = list(wrap or [])
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
        # a Redis without a password answers only loopback clients unless told: the other hosts
        # of tests.netns are its clients
        protected = "yes" if self.host == "127.0.0.1" else "no"
        args = [*self.wrap, exe, "--port", str(self.port), "--bind", self.host, "--protected-mode", protected,
                "--daemonize", "no",
                "--dir", str(self.workdir), "--save", "", "--appendonly", "no", *self.extra_args]
        self.proc = start_server(args, self.workdir / "redis.log", lambda: ping(self.host, self.port),
                                 what=f"redis-server did not answer PING on port {self.port}",
                                 timeout=timeout, interval=0.02, cwd=self.workdir)

    def stop(self) -> None:
        if self.proc is None:
            return
        stop_process(self.proc, 5.0)
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()
