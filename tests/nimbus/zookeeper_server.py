"""A real ZooKeeper server (standalone, on 127.0.0.1) that tests start and stop.

It runs Debian's ZooKeeper (``scripts/setup-zookeeper.sh`` installs it) with Java
directly, from a config written here: a temporary data directory, a free port bound to
127.0.0.1 only, a short tick so that short session timeouts are allowed.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from tests.server_process import start_server, stop_process

SETUP_HINT = ("run scripts/setup-zookeeper.sh (as root it installs Debian's zookeeper), "
              "then run the tests again")


def zookeeper_classpath() -> str | None:
    """The classpath of an installed ZooKeeper server, or None."""
    home = os.environ.get("ZOOKEEPER_HOME")
    candidates = [Path(home) / "lib" if home else None, Path("/usr/share/java")]
    for directory in filter(None, candidates):
        jar = directory / "zookeeper.jar"
        if jar.is_file():
            return str(jar)
        jars = sorted(directory.glob("zookeeper-3*.jar"))
        if jars:
            return ":".join(str(j) for j in directory.glob("*.jar"))
    return None


def ruok(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5) as s:
            s.sendall(b"ruok")
            return s.recv(16) == b"imok"
    except OSError:
        return False


class ZooKeeperServer:
    """A ZooKeeper subprocess; ``uri(root)`` is what Nimbus's ``--store`` takes.

    ``host``, ``port`` and ``wrap`` (a command prefix, such as ``ip netns exec NS``) put it
    on another host (``tests.netns``).
    """

    def __init__(self, workdir: Path, *, host: str = "127.0.0.1", port: int | None = None,
                 wrap: list[str] | None = None) -> None:
        self.workdir = workdir
        self.host = host
        self.wrap = list(wrap or [])
        if port is None:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
        self.port = port
        self.proc: subprocess.Popen | None = None

    def uri(self, root: str = "/squall") -> str:
        return f"zk://{self.host}:{self.port}{root}"

    def start(self, timeout: float = 30.0) -> None:
        classpath = zookeeper_classpath()
        java = shutil.which("java")
        if classpath is None or java is None:
            pytest.fail(f"no ZooKeeper server installed; {SETUP_HINT}", pytrace=False)
        data = self.workdir / "data"
        data.mkdir(parents=True, exist_ok=True)
        cfg = self.workdir / "zoo.cfg"
        cfg.write_text(f"tickTime=500\ndataDir={data}\nclientPort={self.port}\n"
                       f"clientPortAddress={self.host}\nadmin.enableServer=false\n"
                       f"minSessionTimeout=1000\nmaxSessionTimeout=30000\n4lw.commands.whitelist=ruok\n")
        self.proc = start_server(
            [*self.wrap, java, "-Xmx256m", f"-Dzookeeper.log.dir={self.workdir}", "-cp", classpath,
             "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(cfg)],
            self.workdir / "zookeeper.log", lambda: ruok(self.port, self.host),
            what=f"ZooKeeper did not answer on port {self.port}", timeout=timeout, start_new_session=True)

    def stop(self) -> None:
        if self.proc is None:
            return
        stop_process(self.proc, 10.0)
        self.proc = None
