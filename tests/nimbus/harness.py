"""Real ``squall nimbus`` processes and ``squall`` commands for the Nimbus tests.

Everything runs as a user would run it: Nimbus is ``python -m squall.cli.main nimbus`` on
127.0.0.1 and a free port, each command a new process, and results come back through the
files the topology writes (see ``topology_source``). PYTHONPATH holds only the squall under
test, so the topologies' code can only reach the workers through what ``squall submit`` uploads.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

PYTHON = sys.executable


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def base_env(home: Path) -> dict:
    """The environment of Nimbus and of the commands: loopback only, and on PYTHONPATH only
    the squall these tests import (a git worktree's, not the one the virtualenv installed)."""
    import squall

    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "SQUALL_TOKEN", "SQUALL_NIMBUS", "SQUALL_CONF")}
    env.update(SQUALL_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1",
               PYTHONPATH=str(Path(squall.__file__).resolve().parent.parent))
    return env


@dataclass
class Cli:
    """Runs ``squall`` commands against a Nimbus URL, with the token of ``home``."""

    url: str
    home: Path
    cwd: Path
    extra_env: dict = field(default_factory=dict)

    def __call__(self, *args: str, timeout: float = 300.0, env: dict | None = None,
                 check: bool = False) -> subprocess.CompletedProcess:
        full_env = {**base_env(self.home), "SQUALL_NIMBUS": self.url, **self.extra_env, **(env or {})}
        proc = subprocess.run([PYTHON, "-m", "squall.cli.main", *args], cwd=self.cwd, env=full_env,
                              capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"squall {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n"
                                 f"{proc.stderr}")
        return proc

    def json(self, *args: str, timeout: float = 300.0):
        proc = self("--json", *args, timeout=timeout, check=True)
        return json.loads(proc.stdout)


class NimbusProcess:
    """One ``squall nimbus`` process (on 127.0.0.1 unless ``host`` says another loopback address)."""

    def __init__(self, home: Path, workdir: Path, *, port: int | None = None, store: str | None = None,
                 conf: dict | None = None, name: str = "nimbus", args: list[str] | None = None,
                 conf_file: Path | None = None, host: str = "127.0.0.1",
                 wrap: list[str] | None = None) -> None:
        self.home = home
        self.wrap = list(wrap or [])  # a command prefix: ``ip netns exec NS`` runs it on another host
        self.workdir = workdir
        self.host = host
        self.port = port or free_port()
        self.url = f"http://{host}:{self.port}"
        self.store = store
        self.conf = {"squall.spark.master": "local[4]", "nimbus.master.timeout.secs": "8",
                     "nimbus.submit.timeout.secs": "150", **(conf or {})}
        self.conf_file = conf_file
        self.log_path = workdir / f"{name}-{self.port}.log"
        self.args = list(args or [])  # more options of ``squall nimbus``
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 30.0) -> NimbusProcess:
        args = [*self.wrap, PYTHON, "-m", "squall.cli.main", "nimbus", "--host", self.host,
                "--port", str(self.port), "--data-dir", str(self.home)]
        if self.store:
            args += ["--store", self.store]
        for k, v in self.conf.items():
            args += ["--conf", f"{k}={v}"]
        args += self.args
        if self.conf_file is not None:
            args += ["--conf", str(self.conf_file)]
        self.workdir.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            env = {**base_env(self.home), "SPARK_LOCAL_IP": self.host}
            self.proc = subprocess.Popen(args, cwd=self.workdir, env=env, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nimbus exited with {self.proc.returncode}:\n{self.log_tail()}")
            if self.health() is not None:
                return self
            time.sleep(0.1)
        raise RuntimeError(f"nimbus did not answer within {timeout}s:\n{self.log_tail()}")

    def health(self) -> dict | None:
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/health", timeout=1) as resp:
                return json.load(resp)
        except OSError:
            return None

    def wait_leader(self, timeout: float = 30.0) -> float:
        """Wait until this Nimbus leads; returns the seconds it took."""
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            h = self.health()
            if h and h["leader"]:
                return time.monotonic() - start
            time.sleep(0.1)
        raise AssertionError(f"nimbus {self.url} did not become the leader within {timeout}s")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal only the Nimbus process (its topologies run in sessions of their own)."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
            self.proc.wait(30)

    def stop(self) -> None:
        self.kill(signal.SIGTERM)

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""


def cleanup_topologies(cli: Cli, home: Path) -> None:
    """Kill what a test left running (through Nimbus, else by the launches' process groups)."""
    try:
        names = [t["name"] for t in cli.json("list", timeout=30)]
    except (AssertionError, subprocess.TimeoutExpired, ValueError):
        names = []
    for name in names:
        cli("kill", name, "--wait", "0", timeout=120)
    kill_leftover_launches(home)


def kill_leftover_launches(home: Path) -> None:
    """SIGKILL the process group of every launch recorded in ``home``'s store (last resort)."""
    import sqlite3

    db = home / "nimbus.sqlite3"
    if not db.exists():
        return
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT value FROM kv WHERE key LIKE 'topologies/%'").fetchall()
    for (value,) in rows:
        pid = (json.loads(value).get("launcher") or {}).get("pid")
        if pid:
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def wait_for(predicate, timeout: float, what: str, interval: float = 0.2, explain=None):
    """Poll ``predicate`` until it returns something truthy; returns that value.

    ``explain``, if given, is called on a timeout and its text ends the error: what the test
    saw of the system then, so that a failure in a long run says why without a rerun.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            seen = f"; {explain()}" if explain is not None else ""
            raise AssertionError(f"timed out after {timeout}s waiting for {what}{seen}")
        time.sleep(interval)
