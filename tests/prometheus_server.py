"""A real Prometheus server (Debian's ``prometheus``) on 127.0.0.1 that scrapes the given targets.

Tests use it to check that what squall exposes on ``/metrics`` is what Prometheus itself
reads and computes with (``histogram_quantile()`` over squall's histograms), not only what a
client library's parser accepts.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.redis_server import free_port
from tests.server_process import start_server, stop_process

SETUP_HINT = ("run scripts/setup-prometheus.sh (as root it installs Debian's prometheus), "
              "then run the tests again")


class PrometheusServer:
    """``prometheus`` scraping ``targets`` (host:port, path /metrics) every ``interval``."""

    def __init__(self, workdir: Path, targets: list[str], interval: str = "1s") -> None:
        self.workdir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.targets = targets
        self.interval = interval
        self.proc: subprocess.Popen | None = None
        workdir.mkdir(parents=True, exist_ok=True)

    def __enter__(self) -> PrometheusServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, timeout: float = 30.0) -> None:
        exe = shutil.which("prometheus")
        if exe is None:
            pytest.fail(f"prometheus is not on PATH; {SETUP_HINT}", pytrace=False)
        config = self.workdir / "prometheus.yml"
        config.write_text(json.dumps({  # YAML is a superset of JSON
            "global": {"scrape_interval": self.interval, "evaluation_interval": self.interval},
            "scrape_configs": [{"job_name": "squall", "metrics_path": "/metrics",
                                "static_configs": [{"targets": self.targets}]}]}))
        args = [exe, f"--config.file={config}", f"--storage.tsdb.path={self.workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}"]
        self.proc = start_server(args, self.workdir / "prometheus.log", self._ready,
                                 what=f"prometheus did not get ready on port {self.port}",
                                 timeout=timeout, cwd=self.workdir)

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as resp:
                return resp.status == 200
        except OSError:
            return False

    def query(self, expr: str) -> list[dict]:
        """The instant vector ``expr`` evaluates to now (Prometheus's HTTP API)."""
        url = f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
        with urllib.request.urlopen(url, timeout=10) as resp:
            body = json.load(resp)
        assert body["status"] == "success", body
        return body["data"]["result"]

    def targets_health(self) -> list[str]:
        """The health of each scrape target ("up", "down", "unknown")."""
        with urllib.request.urlopen(f"{self.url}/api/v1/targets", timeout=10) as resp:
            return [t["health"] for t in json.load(resp)["data"]["activeTargets"]]

    def log_tail(self, n: int = 3000) -> str:
        path = self.workdir / "prometheus.log"
        return path.read_text(errors="replace")[-n:] if path.exists() else ""

    def stop(self) -> None:
        if self.proc is None:
            return
        stop_process(self.proc, 10.0)
        self.proc = None
