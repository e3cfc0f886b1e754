"""Clear, bounded errors before Spark starts: no Java, an unreachable master."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from squall.spark import SparkCluster, SparkSetupError
from squall.spark.context import local_slots
from squall.spark.setup import parse_java_version
from tests.spark.helpers import free_port

pytestmark = pytest.mark.spark
ROOT = str(Path(__file__).resolve().parents[2])

NO_JAVA = """
import squall.spark
from tests.spark import topo_module as tm
conf, topology = tm.wordcount(1, ".")
try:
    with squall.spark.SparkCluster(master="local[1]") as cluster:
        cluster.submit_topology("t", conf, topology)
except squall.spark.SparkSetupError as e:
    print("ERROR:", e)
"""


@pytest.mark.timeout(60)
def test_no_java_is_one_clear_line(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path / "nowhere"), JAVA_HOME=str(tmp_path / "no-jdk"),
               PYTHONPATH=ROOT, SQUALL_LOG_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", NO_JAVA], env=env, capture_output=True, text=True,
                         timeout=50, cwd=tmp_path)
    lines = [line for line in out.stdout.splitlines() if line.startswith("ERROR:")]
    assert len(lines) == 1, out.stdout + out.stderr
    assert "needs Java 17+" in lines[0] and "no java executable" in lines[0]
    assert "JAVA_HOME" in lines[0]


@pytest.mark.timeout(60)
def test_unreachable_master_fails_fast(tmp_path):
    url = f"spark://127.0.0.1:{free_port()}"
    started = time.monotonic()
    with pytest.raises(SparkSetupError, match=r"cannot reach Spark master spark://127\.0\.0\.1:\d+"):
        SparkCluster(master=url, log_dir=str(tmp_path)).start()
    assert time.monotonic() - started < 10


def test_java_version_parsing():
    assert parse_java_version('openjdk version "17.0.15" 2025-04-15') == 17
    assert parse_java_version('java version "1.8.0_402"') == 8
    assert parse_java_version('openjdk version "21" 2023-09-19') == 21
    assert parse_java_version("garbage") is None


def test_local_slots():
    assert local_slots("local") == 1
    assert local_slots("local[3]") == 3
    assert local_slots("local[2,4]") == 2
    assert local_slots("local[*]") == (os.cpu_count() or 1)
    assert local_slots("spark://127.0.0.1:7077") is None
