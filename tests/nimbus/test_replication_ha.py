"""Nimbus HA without a shared mount: code replicated to the standby, which relaunches from it.

Two real ``squall nimbus`` processes on 127.0.0.2 and 127.0.0.3, each with its own data
directory (blobs, logs; the same token, copied to both as an operator would), share a real
ZooKeeper. In order:

1. a submit asking for ``topology.min.replication.count: 2`` while only one Nimbus runs
   waits ``topology.max.replication.wait.time.sec`` and then says that one node holds it,
   and the topology runs (Storm goes on after the wait);
2. the standby started next copies the code, checks its digest and registers itself;
3. a copy corrupted on the standby's disk is detected by its digest and fetched again;
4. the leader's host "dies": Nimbus SIGKILLed, its topology master's process group
   SIGKILLed, its data directory deleted. The standby takes over and relaunches the
   topology from its own copy; the counts go on, exactly once for the acked spout.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

import pytest

from squall.store.blobs import FILES, digest_of
from tests.nimbus import results as R
from tests.nimbus.harness import Cli, NimbusProcess
from tests.nimbus.test_lifecycle import assert_exact, ok, progress
from tests.nimbus.topology_source import write_topology
from tests.waiting import wait_for

pytestmark = [pytest.mark.spark, pytest.mark.slow]
NAME = "wc-rep"
TOKEN = "replication-test-token-0123456789abcdef"
WAIT = 3  # topology.max.replication.wait.time.sec of the submit


def _home(path: Path) -> Path:
    path.mkdir(mode=0o700, parents=True)
    token = path / "nimbus.token"
    token.write_text(TOKEN + "\n")
    token.chmod(0o600)
    return path


@pytest.fixture(scope="module")
def world(tmp_path_factory, zookeeper):
    root = tmp_path_factory.mktemp("nimbus-rep")

    class W:
        pass
    w = W()
    w.root, w.out = root, root / "out"
    w.home_a, w.home_b = _home(root / "host-a"), _home(root / "host-b")
    w.file = write_topology(root / "wordcount.py", w.out, root / "state", "v1", rate=30,
                            conf_extra={"topology.min.replication.count": 2,
                                        "topology.max.replication.wait.time.sec": WAIT})
    conf = {"nimbus.zookeeper.session.timeout.secs": "4", "nimbus.code.sync.freq.secs": "2"}
    store = zookeeper.uri("/squall-rep")
    w.a = NimbusProcess(w.home_a, root, store=store, conf=conf, name="nimbus-a", host="127.0.0.2").start()
    w.a.wait_leader()
    w.b = NimbusProcess(w.home_b, root, store=store, conf=conf, name="nimbus-b", host="127.0.0.3")
    w.cli = Cli(f"{w.a.url},{w.b.url}", w.home_a, root)
    try:
        yield w
    finally:
        w.cli("kill", NAME, "--wait", "0", timeout=120)
        for n in (w.a, w.b):
            n.stop()
        for pid in getattr(w, "master_pids", []):  # whatever a failed test left running
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def copy_of(home: Path, topology_id: str) -> Path:
    return home / "blobs" / topology_id / "v1"


def digest_at(directory: Path) -> str | None:
    try:
        return digest_of({name: (directory / name).read_bytes() for name in FILES})
    except OSError:
        return None


def test_min_replication_two_with_one_nimbus_waits_then_says_how_many(world):
    proc = world.cli("--json", "submit", str(world.file), "--name", NAME, timeout=300)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    rep = summary["replication"]
    assert (rep["required"], rep["count"], rep["achieved"]) == (2, 1, False)
    assert rep["waited_secs"] >= WAIT and rep["holders"] == [world.a.url]
    assert "held by 1 of the 2 Nimbus nodes" in rep["message"] and "going on with 1" in rep["message"]
    assert "held by 1 of the 2 Nimbus nodes" in world.a.log_tail(200_000)
    world.topology_id = summary["id"]
    world.master_pids = [world.cli.json("info", NAME)["master"]["pid"]]
    progress(world)  # Storm's behaviour: after the wait, the topology runs all the same


def test_the_standby_holds_a_verified_copy_in_its_own_directory(world):
    world.b.start()
    assert world.b.health()["leader"] is False
    info = wait_for_info(world, lambda i: i["replication"]["count"] == 2, 30, "the standby's copy")
    assert sorted(info["replication"]["holders"]) == [world.a.url, world.b.url]
    theirs, mine = copy_of(world.home_a, world.topology_id), copy_of(world.home_b, world.topology_id)
    assert digest_at(mine) is not None and digest_at(mine) == digest_at(theirs)
    assert not mine.is_symlink() and mine.resolve() != theirs.resolve()
    out = ok(world.cli("info", NAME))
    assert "held by 2 Nimbus node(s)" in out


def test_a_corrupted_replica_is_detected_by_its_hash_and_fetched_again(world):
    mine = copy_of(world.home_b, world.topology_id)
    good = digest_at(mine)
    code = mine / "code.zip"
    code.write_bytes(code.read_bytes() + b"corruption")
    assert digest_at(mine) != good
    wait_for(lambda: "is corrupt" in world.b.log_tail(200_000), 30)
    assert "is corrupt" in world.b.log_tail(200_000), "the periodic check did not notice"
    assert wait_for(lambda: digest_at(mine) == good, 30), "the corrupt copy was not fetched again"
    wait_for_info(world, lambda i: i["replication"]["count"] == 2, 30, "the standby to register again")


def test_the_standby_relaunches_from_its_own_copy_when_the_leaders_host_dies(world):
    before = world.cli.json("info", NAME)
    progress(world, more=20)
    # the leader's host goes: Nimbus, its topology master, its disk
    world.a.kill(signal.SIGKILL)
    pgid = os.getpgid(before["master"]["pid"])
    os.killpg(pgid, signal.SIGKILL)
    shutil.rmtree(world.home_a / "blobs")
    took = world.b.wait_leader(timeout=40)
    print(f"standby leads {took:.1f}s after the SIGKILL")
    cli = Cli(world.b.url, world.home_b, world.root)
    after = wait_for_info(world, lambda i: i["epoch"] > before["epoch"] and i["master"]["state"] == "RUNNING",
                          240, "the relaunched master", cli=cli)
    world.master_pids.append(after["master"]["pid"])
    cmdline = Path(f"/proc/{after['master']['pid']}/cmdline").read_bytes().split(b"\0")
    blobs_arg = cmdline[cmdline.index(b"--blobs") + 1].decode()
    assert Path(blobs_arg).resolve() == (world.home_b / "blobs").resolve()
    assert (world.home_b / "logs" / f"{NAME}-{after['epoch']}.log").exists()
    progress(world, more=40, timeout=120)
    assert_exact(world)
    assert len(R.acked(world.out)) > 0


def wait_for_info(world, predicate, timeout: float, what: str, cli: Cli | None = None) -> dict:
    """Poll ``squall info`` until ``predicate`` holds; returns that info."""
    cli = cli or world.cli
    seen: dict = {}

    def check() -> bool:
        try:
            seen["info"] = cli.json("info", NAME, timeout=30)
        except AssertionError:
            return False
        return bool(predicate(seen["info"]))
    assert wait_for(check, timeout, step=0.5), f"timed out after {timeout}s waiting for {what}: {seen}"
    return seen["info"]
