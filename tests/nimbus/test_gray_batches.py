"""JStorm's gray upgrade routine on a real Nimbus, and the cluster's configuration file.

A real ``squall nimbus`` (Spark local[4]) reads a ``storm.yaml``-style cluster file with
topology defaults, a Storm key it ignores with a warning, Storm's ``supervisor.slots.ports``
(the ports the workers bind), and an action notifier plugin.
One 4-worker word count then goes, in order, through: the precedence of configuration
checked in ``info --conf`` and in what the spout's ``open`` got; a gray upgrade over three
batches (FILE, then no FILE, then the same FILE again) and complete-upgrade, checking
after each batch which workers run which code; a gray upgrade rolled back from the middle;
an upgrade whose only selector is ``topology.upgrade.worker.num`` in its configuration (a
gray upgrade, not a hot deploy); the refusal of a gray upgrade of a deactivated topology;
and an upgrade that expires and so stops blocking a rebalance. Counts stay exact over every
acked sentence throughout.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.nimbus import results as R
from tests.nimbus.harness import Cli, NimbusProcess, cleanup_topologies, free_port, wait_for
from tests.nimbus.test_lifecycle import assert_exact, ok, progress, refused
from tests.nimbus.topology_source import write_topology

pytestmark = [pytest.mark.spark, pytest.mark.slow]
NAME = "gray"

CLUSTER_YAML = """\
# the cluster's defaults, as a storm.yaml holds them
storm.zookeeper.servers: ["zk1.example.com"]
topology.message.timeout.secs: 9
topology.stats.sample.rate: 0.25
topology.max.spout.pending: 100
topology.upgrade.expire.secs: 600
nimbus.topology.action.notifier.plugin.class: recorder.Recorder
supervisor.slots.ports: {slots}
"""

RECORDER = '''\
"""A topology action notifier: one line per action; it fails on deactivate."""
import os

PATH = {path!r}


class Recorder:
    def prepare(self, conf):
        self.timeout = conf["nimbus.master.timeout.secs"]

    def notify(self, topology_name, action, who=None):
        with open(PATH, "a") as f:
            f.write(f"{{topology_name}} {{action}} {{who}}\\n")
        if action == "deactivate":
            raise RuntimeError("the operator's system is down")

    def cleanup(self):
        pass
'''


class World:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.out = root / "out"
        self.state = root / "state"
        self.actions = root / "actions.txt"
        (root / "recorder.py").write_text(RECORDER.format(path=str(self.actions)))
        self.cluster_file = root / "cluster.yaml"
        # Storm's worker ports: every worker binds one of them (room for restarts that overlap)
        self.slots = sorted({free_port() for _ in range(10)})
        self.cluster_file.write_text(CLUSTER_YAML.format(slots=self.slots))

        def write(v: str, **kw) -> Path:
            d = root / v
            d.mkdir(parents=True, exist_ok=True)
            # a count task on every worker: whichever worker a batch picks counts on the new code
            return write_topology(d / "wordcount.py", self.out, self.state, v, workers=4, count_parallelism=4,
                                  spout_conf={"topology.max.spout.pending": 32}, **kw)
        self.files = {v: write(v) for v in ("v1", "v2", "v3", "v5")}
        self.files["v4"] = write("v4", conf_extra={"topology.upgrade.worker.num": 1})
        self.nimbus = NimbusProcess(self.home, root, conf_file=self.cluster_file)
        self.cli = Cli(self.nimbus.url, self.home, root)

    def info(self) -> dict:
        return self.cli.json("info", NAME)

    def versions(self) -> dict[int, int]:
        return {w["worker"]: w["version"] for w in self.info()["workers"]}

    def on(self, version: int) -> list[int]:
        return sorted(w for w, v in self.versions().items() if v == version)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    w = World(tmp_path_factory.mktemp("nimbus-gray"))
    w.nimbus.start()
    try:
        yield w
    finally:
        cleanup_topologies(w.cli, w.home)
        w.nimbus.stop()


@pytest.fixture(autouse=True)
def _upgrade_closed(world):
    """The tests share one topology: one that fails mid-upgrade rolls it back, so that the
    next test starts from a running topology, not from its predecessor's open upgrade."""
    yield
    try:
        info = world.info()
    except Exception:  # noqa: BLE001 - the topology may be gone (the last test kills it)
        return
    if info.get("upgrade") and info["upgrade"].get("state") not in (None, "EXPIRED"):
        world.cli("rollback", NAME)
    if info.get("status") == "INACTIVE":
        world.cli("activate", NAME)


def records_since(world: World, t: float) -> set[str]:
    return {r.version for r in R.records(world.out) if r.time > t}


def explain(world: World):
    """What the topology did lately: the last record per version, the last emit and ack, and
    each worker's state, version and send buffer, for a wait that timed out."""
    def text() -> str:
        now = time.time()
        last: dict[str, float] = {}
        for r in R.records(world.out):
            last[r.version] = max(last.get(r.version, 0.0), r.time)
        emitted = [t for _, t in R.emitted(world.out)]
        ages = {v: round(now - t, 1) for v, t in sorted(last.items())}
        try:
            info = world.info()
            keys = ("tuples", "unsent", "held_rounds", "pressured_by")
            workers = [(w["worker"], w.get("state"), w.get("version"), w.get("pid"),
                        {k: w.get("transfer", {}).get(k) for k in keys}) for w in info["workers"]]
            status = (info["status"], (info.get("upgrade") or {}).get("state"), info.get("last_error"))
        except Exception as e:  # noqa: BLE001 - the explanation must not hide the timeout
            workers, status = [], repr(e)
        return (f"seconds since the last record per version {ages}; since the last emit "
                f"{round(now - max(emitted), 1) if emitted else None}; acked {len(R.acked(world.out))}; "
                f"status {status}; workers {workers}")
    return text


def test_submit_takes_the_cluster_defaults_and_info_conf_says_where(world):
    assert "storm.zookeeper.servers" in world.nimbus.log_tail()  # the ignored Storm key is named
    ok(world.cli("submit", str(world.files["v1"]), "--name", NAME, timeout=300))
    assert world.versions() == {0: 1, 1: 1, 2: 1, 3: 1}
    # supervisor.slots.ports became the workers' ports (issue 41, item 10)
    ports = {int(w["address"].rsplit(":", 1)[1]) for w in world.info()["workers"]}
    assert len(ports) == 4 and ports <= set(world.slots), (ports, world.slots)
    conf = world.cli.json("info", NAME, "--conf")
    rows = {r["key"]: (r["value"], r["source"]) for r in conf["topology"]}
    assert rows["topology.debug"] == (False, "default")
    assert rows["topology.stats.sample.rate"] == (0.25, f"cluster ({world.cluster_file})")
    assert rows["topology.message.timeout.secs"] == (5, "topology")  # the file's 9 is overridden
    assert rows["topology.max.spout.pending"] == (64, "topology")  # the file's 100 too
    assert conf["components"]["sentences"] == [
        {"key": "topology.max.spout.pending", "value": 32, "source": "component sentences"}]
    # and what the spout was given: every level where it wins
    got = wait_for(lambda: [json.loads(p.read_text()) for p in world.out.glob("conf-*.json")], 60,
                   "the spout's configuration")
    assert got[-1] == {"topology.message.timeout.secs": 5, "topology.max.spout.pending": 32,
                       "topology.stats.sample.rate": 0.25, "topology.debug": False,
                       "topology.executor.receive.buffer.size": 32768}
    table = ok(world.cli("info", NAME, "--conf"))
    assert "cluster (" in table and "component sentences" in table
    # the client finds Nimbus through a cluster file too (no --nimbus, no $SQUALL_NIMBUS)
    client_file = world.root / "client.yaml"
    client_file.write_text(f"squall.nimbus.url: {world.nimbus.url}\n")
    listed = ok(world.cli("list", env={"SQUALL_NIMBUS": "", "SQUALL_CONF": str(client_file)}))
    assert NAME in listed
    progress(world)
    # per-task liveness: every task of every worker, with a fresh heartbeat
    info = world.info()
    tasks = {t["task"]: t for t in info["tasks"]}
    user_tasks = {t for c in ("sentences", "split", "count") for t in info["components"][c]["tasks"]}
    assert user_tasks <= set(tasks) <= {t for w in info["workers"] for t in w["tasks"]}
    assert all(t["heartbeat_age_secs"] < 10 for t in tasks.values()), info["tasks"]
    spout = [t for t in tasks.values() if t["component"] == "sentences"]
    assert len(spout) == 1 and spout[0]["emitted"] > 0 and spout[0]["idle_secs"] < 10
    assert "IDLE S" in ok(world.cli("info", NAME, "--tasks"))


def test_gray_upgrade_in_three_batches_then_complete(world):
    out = ok(world.cli("upgrade", NAME, str(world.files["v2"]), "--worker-num", "1"))
    assert "run version 2" in out
    info = world.info()
    up = info["upgrade"]
    assert (info["status"], up["state"], up["from"], up["to"]) == ("UPGRADING", "BATCH_FINISHED", 1, 2)
    first = world.on(2)
    assert len(first) == 1 and up["workers"] == first and set(up["old_workers"]) == {0, 1, 2, 3} - set(first)
    since_first = up["since"][str(first[0])]
    assert [w["version_since"] for w in info["workers"] if w["worker"] == first[0]] == [since_first]
    t = time.time()
    wait_for(lambda: {"v1", "v2"} <= records_since(world, t + 0.5), 90, "both versions counting",
             explain=explain(world))
    # a different version, or a rebalance, is refused while the upgrade is open
    refused(world.cli("upgrade", NAME, str(world.files["v5"]), "--worker-num", "1"), 5, "being upgraded",
            "version 2")
    refused(world.cli("rebalance", NAME, "--workers", "3"), 5, "being upgraded", f"workers {first}")

    # batch 2: no FILE, JStorm's continueUpgrading
    ok(world.cli("upgrade", NAME, "--worker-num", "1"))
    second = world.on(2)
    assert len(second) == 2 and set(first) < set(second)
    up = world.info()["upgrade"]
    assert up["state"] == "BATCH_FINISHED" and up["since"][str(first[0])] == since_first
    # batch 3: the same FILE again
    ok(world.cli("upgrade", NAME, str(world.files["v2"]), "--worker-num", "1"))
    third = world.on(2)
    assert len(third) == 3 and set(second) < set(third)
    text = ok(world.cli("info", NAME))
    assert "gray upgrade: version 1 -> 2, BATCH_FINISHED" in text
    assert [b["workers"] for b in world.info()["upgrade"]["batches"]] == [
        first, sorted(set(second) - set(first)), sorted(set(third) - set(second))]
    progress(world)

    assert "upgraded: version 2" in ok(world.cli("complete-upgrade", NAME))
    info = world.info()
    assert (info["status"], info["version"], info["upgrade"]) == ("ACTIVE", 2, None)
    assert info["last_upgrade"]["state"] == "COMPLETED"
    assert world.versions() == {0: 2, 1: 2, 2: 2, 3: 2}
    done = time.time()
    wait_for(lambda: records_since(world, done + 1.0), 60, "counts after the upgrade completed")
    assert records_since(world, done + 1.0) == {"v2"}
    assert_exact(world)


def base_and_next(world: World) -> tuple[int, int, str]:
    """The running version, the number the next upload gets, and the running file's tag."""
    info = world.info()
    records = [r for r in R.records(world.out) if r.time > time.time() - 30]
    return info["version"], max(info["versions"]) + 1, max(records, key=lambda r: r.time).version


def test_rollback_from_the_middle_restores_the_old_code_everywhere(world):
    base, new, tag = base_and_next(world)
    ok(world.cli("upgrade", NAME, str(world.files["v3"]), "--worker-num", "2"))
    assert len(world.on(new)) == 2
    ok(world.cli("upgrade", NAME, "--worker-num", "1"))
    assert len(world.on(new)) == 3
    wait_for(lambda: [r for r in R.records(world.out) if r.version == "v3"], 60, "records of v3")
    assert f"rolled back: version {base}" in ok(world.cli("rollback", NAME))
    info = world.info()
    assert (info["status"], info["version"], info["upgrade"]) == ("ACTIVE", base, None)
    assert info["last_upgrade"]["state"] == "ROLLED_BACK" and len(info["last_upgrade"]["workers"]) == 3
    assert world.versions() == {0: base, 1: base, 2: base, 3: base}
    rolled = time.time()
    progress(world)
    wait_for(lambda: records_since(world, rolled + 1.0), 60, "counts after the rollback")
    assert records_since(world, rolled + 1.0) == {tag}
    assert_exact(world)


def test_upgrade_keys_in_the_configuration_make_a_gray_upgrade_not_a_hot_deploy(world):
    base, new, _ = base_and_next(world)
    before = world.info()
    pids = {w["worker"]: w["pid"] for w in before["workers"]}
    out = ok(world.cli("upgrade", NAME, str(world.files["v4"])))  # no selector on the command line
    assert f"run version {new}" in out
    info = world.info()
    assert info["status"] == "UPGRADING" and info["upgrade"]["state"] == "BATCH_FINISHED"
    assert (info["epoch"], info["master"]["pid"]) == (before["epoch"], before["master"]["pid"])
    moved = world.on(new)
    assert len(moved) == 1
    assert {w["worker"]: w["pid"] for w in info["workers"] if w["worker"] not in moved} == {
        w: p for w, p in pids.items() if w not in moved}, "workers outside the batch were restarted"
    # the same file again: its topology.upgrade.worker.num moves one more
    ok(world.cli("upgrade", NAME, str(world.files["v4"])))
    assert len(world.on(new)) == 2
    ok(world.cli("rollback", NAME))
    assert world.versions() == {0: base, 1: base, 2: base, 3: base}


def test_a_gray_upgrade_needs_an_active_topology(world):
    base, _, _ = base_and_next(world)
    ok(world.cli("deactivate", NAME))  # the notifier raises on this one: Nimbus carries on
    assert world.info()["status"] == "INACTIVE"
    err = refused(world.cli("upgrade", NAME, str(world.files["v5"]), "--worker-num", "1"), 5, "ACTIVE")
    assert "INACTIVE" in err
    assert world.info()["upgrade"] is None and world.info()["version"] == base
    ok(world.cli("activate", NAME))


def test_an_expired_upgrade_no_longer_blocks_a_rebalance(world):
    base, new, _ = base_and_next(world)
    ok(world.cli("upgrade", NAME, str(world.files["v5"]), "--worker-num", "1",
                 "--conf", "topology.upgrade.expire.secs=4"))
    assert len(world.on(new)) == 1
    refused(world.cli("rebalance", NAME, "--workers", "3"), 5, "being upgraded")
    # expired as soon as the time is up; the monitor then gives the topology back (ACTIVE)
    expired = wait_for(lambda: (i := world.info())["upgrade"]["state"] == "EXPIRED"
                       and i["status"] == "ACTIVE" and i, 30, "the upgrade to expire")
    assert "expired" in world.nimbus.log_tail(20000)
    assert "expired; workers [" in expired["last_error"]  # which workers run which code
    assert expired["versions"][-1] == new and sorted(world.versions().values()) == [base, base, base, new]
    ok(world.cli("rebalance", NAME, "--workers", "3", timeout=300))
    info = world.info()
    assert info["upgrade"] is None and info["last_upgrade"]["state"] == "EXPIRED"
    assert world.versions() == {0: base, 1: base, 2: base}
    progress(world)
    assert_exact(world)


def test_a_new_gray_upgrade_over_an_expired_one_starts_from_the_base_version(world):
    base, new, _ = base_and_next(world)
    # the last test rebalanced the topology to 3 workers; a gray upgrade runs under the running
    # shape whatever the file says (docs/nimbus.md), so saying the count again changes nothing
    workers = f"topology.workers={len(world.versions())}"
    ok(world.cli("upgrade", NAME, str(world.files["v5"]), "--worker-num", "2",
                 "--conf", "topology.upgrade.expire.secs=3", "--conf", workers))
    stale = world.on(new)
    assert len(stale) == 2
    wait_for(lambda: world.info()["status"] == "ACTIVE", 30, "the upgrade to expire")
    # a new upgrade (another version) is no longer refused; the expired one's workers go back first
    ok(world.cli("upgrade", NAME, str(world.files["v3"]), "--workers", "0", "--conf", workers))
    info = world.info()
    versions = world.versions()
    assert versions[0] == new + 1 and sorted(versions.values()) == [base] * (len(versions) - 1) + [new + 1]
    assert info["upgrade"]["from"] == base and info["last_upgrade"]["state"] == "EXPIRED"
    assert info["last_upgrade"]["workers"] == stale
    ok(world.cli("rollback", NAME))
    assert world.versions() == {0: base, 1: base, 2: base}
    progress(world)
    assert_exact(world)


def test_the_notifier_heard_every_action_and_who_asked(world):
    ok(world.cli("kill", NAME, "--wait", "1", timeout=180))
    lines = wait_for(lambda: world.actions.exists() and "killTopology" in world.actions.read_text()
                     and world.actions.read_text().split("\n"), 10, "the kill to be notified")
    actions = [line.split()[1] for line in lines if line]
    for action in ("submitTopology", "grayUpgrade", "completeUpgrade", "rollback", "deactivate", "activate",
                   "rebalance", "killTopology"):
        assert action in actions, f"{action} not notified: {actions}"
    assert actions.count("grayUpgrade") == 3 + 2 + 2 + 1 + 2
    who = {line.split()[2] for line in lines if line}
    assert all(w.endswith("@127.0.0.1") and not w.startswith("?") for w in who), who
    assert "the operator's system is down" in world.nimbus.log_tail(50000)
