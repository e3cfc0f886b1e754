"""Real ZooKeeper servers (standalone, or an ensemble of three, on 127.0.0.1) that tests start and stop.

It runs Debian's ZooKeeper (``scripts/setup-zookeeper.sh`` installs it) with Java
directly, from a config written here: a temporary data directory, a free port bound to
127.0.0.1 only, a short tick so that short session timeouts are allowed. An ensemble
(``ZooKeeperEnsemble``) gives each member a ``myid`` and the ``server.N`` lines of all,
with quorum and election ports of their own, and its URI names every member.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
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


def four_letters(port: int, word: bytes, host: str = "127.0.0.1") -> bytes:
    """A four-letter command's answer (empty if the server does not answer)."""
    try:
        with socket.create_connection((host, port), timeout=0.5) as s:
            s.sendall(word)
            out = b""
            while chunk := s.recv(4096):
                out += chunk
            return out
    except OSError:
        return b""


def ruok(port: int, host: str = "127.0.0.1") -> bool:
    return four_letters(port, b"ruok", host) == b"imok"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ZooKeeperServer:
    """A ZooKeeper subprocess; ``uri(root)`` is what Nimbus's ``--store`` takes.

    ``host``, ``port`` and ``wrap`` (a command prefix, such as ``ip netns exec NS``) put it
    on another host (``tests.netns``).
    """

    def __init__(self, workdir: Path, *, host: str = "127.0.0.1", port: int | None = None,
                 wrap: list[str] | None = None, myid: int | None = None,
                 servers: list[str] | None = None) -> None:
        self.workdir = workdir
        self.host = host
        self.wrap = list(wrap or [])
        self.port = port if port is not None else free_port()
        self.myid = myid  # an ensemble member: its id, and every member's server.N line
        self.servers = list(servers or [])
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
        text = (f"tickTime=500\ndataDir={data}\nclientPort={self.port}\n"
                f"clientPortAddress={self.host}\nadmin.enableServer=false\n"
                f"minSessionTimeout=1000\nmaxSessionTimeout=30000\n4lw.commands.whitelist=ruok,srvr\n")
        if self.myid is not None:
            (data / "myid").write_text(f"{self.myid}\n")
            text += "initLimit=10\nsyncLimit=4\n" + "".join(f"{line}\n" for line in self.servers)
        cfg.write_text(text)
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


class ZooKeeperEnsemble:
    """Three (or ``size``) ZooKeeper servers on 127.0.0.1 forming one ensemble.

    ``uri(root)`` names every member (``zk://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3/root``);
    ``stop(i)`` and ``start(i)`` stop and restart one member, its data kept.
    """

    def __init__(self, workdir: Path, size: int = 3) -> None:
        ports = [(free_port(), free_port()) for _ in range(size)]
        lines = [f"server.{i + 1}=127.0.0.1:{q}:{e}" for i, (q, e) in enumerate(ports)]
        self.members = [ZooKeeperServer(workdir / f"zk{i + 1}", myid=i + 1, servers=lines)
                        for i in range(size)]

    def uri(self, root: str = "/squall") -> str:
        return "zk://" + ",".join(f"{m.host}:{m.port}" for m in self.members) + root

    def mode(self, i: int) -> str | None:
        """``leader``, ``follower``, or None while member ``i`` does not serve (no quorum)."""
        m = self.members[i]
        for line in four_letters(m.port, b"srvr", m.host).decode(errors="replace").splitlines():
            if line.startswith("Mode: "):
                return line.split(": ", 1)[1].strip()
        return None

    def start(self, i: int | None = None, timeout: float = 60.0) -> None:
        """Start member ``i`` (every member if None) and wait until the running ones serve."""
        for m in self.members if i is None else [self.members[i]]:
            m.start(timeout)
        running = [j for j, m in enumerate(self.members) if m.proc is not None]
        deadline = time.monotonic() + timeout
        while not all(self.mode(j) in ("leader", "follower") for j in running):
            if time.monotonic() > deadline:
                pytest.fail(f"the ZooKeeper ensemble did not form within {timeout:.0f}s "
                            f"(modes {[self.mode(j) for j in running]})", pytrace=False)
            time.sleep(0.2)

    def stop(self, i: int | None = None) -> None:
        """Stop member ``i`` (every member if None)."""
        for m in self.members if i is None else [self.members[i]]:
            m.stop()
