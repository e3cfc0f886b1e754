"""Multilang bolts (pystorm, Node.js) in a topology whose workers run on Spark (local[3])."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest

from squall import Config, Fields, TopologyBuilder
from squall.multilang import ShellBolt
from tests.spark import helpers
from tests.spark import topo_module as tm

pytestmark = [pytest.mark.spark, pytest.mark.slow]
RESOURCES = str(Path(__file__).parents[1] / "multilang" / "resources")


def topology(split: ShellBolt, n: int, out_dir: str):
    builder = TopologyBuilder()
    builder.set_spout("sentences", tm.SentenceSpout(n, out_dir, rate=300), parallelism=1)
    builder.set_bolt("split", split, parallelism=2).shuffle_grouping("sentences")
    builder.set_bolt("count", tm.CountBolt(out_dir), parallelism=2).fields_grouping("split", Fields("word"))
    conf = Config()
    conf.set_num_workers(2)
    conf.set_message_timeout_secs(5)
    conf.set_max_spout_pending(64)
    return conf, builder.create_topology()


def _splits():
    out = [("pystorm", ShellBolt([sys.executable, "pystorm_wordpos.py"], resources=RESOURCES,
                                 outputs={"default": Fields("word", "id", "pos")}))]
    if shutil.which("node"):
        out.append(("node", ShellBolt(["node", "wordpos.js"], resources=RESOURCES,
                                      outputs={"default": Fields("word", "id", "pos")})))
    return out


@pytest.mark.timeout(240)
@pytest.mark.parametrize("kind,split", _splits(), ids=lambda v: v if isinstance(v, str) else "")
def test_multilang_bolt_on_spark_counts_exactly_and_survives_a_killed_subprocess(
        local_cluster, tmp_path, kind, split):
    n = 1500
    conf, topo = topology(split, n, str(tmp_path))
    name = f"ml-{kind}"
    local_cluster.submit_topology(name, conf, topo)
    try:
        helpers.wait_acked_at_least(str(tmp_path), 200, timeout=60)
        victim = _subprocess_of(kind)
        os.kill(victim, signal.SIGKILL)  # a subprocess of this test's topology
        acked = helpers.wait_all_acked(str(tmp_path), n, timeout=120)
        errors = local_cluster.get_topology_info(name)["errors"]
    finally:
        local_cluster.kill_topology(name, wait_secs=0)
    assert acked == set(range(n)), f"{n - len(acked)} sentences never acked"
    _, counts, _ = tm.read_results(str(tmp_path))
    assert counts == tm.expected_counts(n)
    assert any("SubprocessDiedError" in e["message"] and "killed by SIGKILL" in e["message"]
               for e in errors)


def _subprocess_of(kind: str) -> int:
    """The pid of one multilang subprocess (a grandchild of this test, found in /proc)."""
    script = "pystorm_wordpos.py" if kind == "pystorm" else "wordpos.js"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(arg.decode(errors="replace").endswith(script) for arg in cmdline) \
                    and _descends_from(int(pid), os.getpid()):
                return int(pid)
        time.sleep(0.2)
    raise AssertionError(f"no {script} subprocess found")


def _descends_from(pid: int, ancestor: int) -> bool:
    while pid > 1:
        if pid == ancestor:
            return True
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return False
