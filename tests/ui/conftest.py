"""One real Nimbus running the UI tests' topology, shared by the REST and browser tests.

Nimbus is a real ``squall nimbus`` process (tests/nimbus/harness.py) sampling its metric
history every second, and the topology is submitted with the real ``squall submit``.
Everything a test saves for people to look at (screenshots, the Prometheus page) goes to
``SQUALL_TEST_ARTIFACTS`` (default ``test-artifacts/ui`` under the repository).
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path

import pytest

import squall
from tests.nimbus import harness
from tests.nimbus.harness import Cli, NimbusProcess, cleanup_topologies, wait_for
from tests.ui.topology_source import write_topology

NAME = "uiwc"
REPO = Path(__file__).resolve().parents[2]


def pytest_configure(config):
    config.addinivalue_line("markers", "spark: needs pyspark, pyzmq and Java 17+")
    config.addinivalue_line("markers", "slow: long-running tests (run in CI all the same)")
    config.addinivalue_line("markers", "browser: needs Debian's chromium")


def artifacts_dir() -> Path:
    """Where screenshots and other artifacts go."""
    root = Path(os.environ.get("SQUALL_TEST_ARTIFACTS") or REPO / "test-artifacts")
    d = root / "ui"
    d.mkdir(parents=True, exist_ok=True)
    return d


class World:
    """The Nimbus, the command line and the topology the tests share."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.file = write_topology(root / "topo" / "uiwc.py")
        self.nimbus = NimbusProcess(self.home, root, conf={"nimbus.history.interval.secs": "1"})
        self.cli = Cli(self.nimbus.url, self.home, root)

    @property
    def url(self) -> str:
        return self.nimbus.url

    @property
    def token(self) -> str:
        return (self.home / "nimbus.token").read_text().strip()

    def get(self, path: str, token: str | None = "") -> dict:
        """GET ``path``, with the token unless ``token`` is None (errors need it)."""
        token = self.token if token == "" else token
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        req = urllib.request.Request(f"{self.url}{path}", headers=headers)
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.load(resp)

    def raw(self, path: str) -> tuple[int, dict, bytes]:
        try:
            with urllib.request.urlopen(f"{self.url}{path}", timeout=30) as resp:
                return resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def post(self, path: str, body: dict | None = None, token: str | None = "") -> tuple[int, dict]:
        headers = {"Content-Type": "application/json"}
        token = self.token if token == "" else token
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        req = urllib.request.Request(f"{self.url}{path}", data=json.dumps(body or {}).encode(),
                                     headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=180) as resp:
                return resp.status, json.load(resp)
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def info(self) -> dict:
        return self.cli.json("info", NAME)


def _env_with_this_squall(home: Path) -> dict:
    """The harness's environment, with the squall under test importable by the subprocesses.

    The harness passes no PYTHONPATH, so Nimbus would import the installed squall; in a
    worktree that is not the code under test. Only squall's own root is added: the
    topology's code still reaches the workers only through the upload.
    """
    env = _base_env(home)
    env["PYTHONPATH"] = str(Path(squall.__file__).resolve().parents[1])
    return env


_base_env = harness.base_env


@pytest.fixture(scope="package")
def world(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(harness, "base_env", _env_with_this_squall)
        w = World(tmp_path_factory.mktemp("ui"))
        w.nimbus.start()
        try:
            w.cli("submit", str(w.file), "--name", NAME, check=True, timeout=300)
            # the figures move and the history has a few samples before any test looks
            wait_for(lambda: (w.info()["components"].get("report") or {}).get("executed", 0) > 20, 90,
                     "the topology to process tuples")
            wait_for(lambda: len(w.get(f"/api/v1/topologies/{NAME}/history?window=600")["points"]) >= 1, 30,
                     "a history sample")
            yield w
        finally:
            cleanup_topologies(w.cli, w.home)
            w.nimbus.stop()
