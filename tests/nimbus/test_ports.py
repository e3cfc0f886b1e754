"""Nimbus's port is fixed by configuration: ``nimbus.thrift.port`` (Storm's key) or ``--port``.

A real ``squall nimbus`` process reads the cluster file; no Spark is needed.
"""

from __future__ import annotations

import json
import subprocess
import urllib.request

from tests.nimbus.harness import PYTHON, base_env, free_port
from tests.waiting import wait_for


def _health(port: int) -> dict | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/health", timeout=1) as resp:
            return json.load(resp)
    except OSError:
        return None


def _run(tmp_path, args: list[str]) -> subprocess.Popen:
    log = open(tmp_path / "nimbus.log", "ab")  # noqa: SIM115 - closed with the process
    return subprocess.Popen([PYTHON, "-m", "squall.cli.main", "nimbus", "--data-dir", str(tmp_path / "home"),
                             *args], env=base_env(tmp_path / "home"), stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def test_nimbus_listens_on_nimbus_thrift_port_of_the_cluster_file(tmp_path):
    port = free_port()
    conf = tmp_path / "squall.yaml"
    conf.write_text(f"nimbus.thrift.port: {port}\nnimbus.seeds: [127.0.0.1]\n")
    proc = _run(tmp_path, ["--conf", str(conf)])
    try:
        assert wait_for(lambda: _health(port) is not None or proc.poll() is not None, 30)
        health = _health(port)
        assert health is not None, (tmp_path / "nimbus.log").read_text()
        assert health["url"] == f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(30)


def test_the_port_option_wins_over_the_file(tmp_path):
    port, other = free_port(), free_port()
    conf = tmp_path / "squall.yaml"
    conf.write_text(f"nimbus.thrift.port: {other}\n")
    proc = _run(tmp_path, ["--conf", str(conf), "--port", str(port)])
    try:
        assert wait_for(lambda: _health(port) is not None or proc.poll() is not None, 30)
        assert _health(port) is not None, (tmp_path / "nimbus.log").read_text()
        assert _health(other) is None
    finally:
        proc.terminate()
        proc.wait(30)
