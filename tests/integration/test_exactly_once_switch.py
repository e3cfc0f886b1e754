"""A topology name with durable state switched from at-least-once to exactly-once (issue 41
item 3d), on LocalCluster with the local (SQLite) provider and simulated time: its spouts
never had positions in the store, so the first exactly-once run starts each spout where its
source's own progress stands (what at-least-once committed there) instead of failing with
``MissingStateError``; and back (exactly-once -> at-least-once -> exactly-once), stale
positions of the first exactly-once run are not sought."""

from __future__ import annotations

from pathlib import Path

from squall import Config, LocalCluster, TopologyBuilder
from squall.connectors.files import FileSpout
from squall.state import load_provider
from squall.testing import simulated_time
from tests.integration.eo_components import Faults, Lines

NAME = "eo-switch"
STEP = 0.1


def conf(guarantee: str, store: Path) -> Config:
    c = Config()
    c.set_num_workers(2)
    c.update({"topology.guarantee": guarantee, "topology.state.checkpoint.interval.ms": 200,
              "topology.message.timeout.secs": 3,
              "topology.state.provider": "squall.state.local.LocalStateProvider",
              "topology.state.provider.config": {"path": str(store)}})
    return c


def counted(c: Config) -> dict:
    """The lines' committed counts, read beside the running topology.

    Only the committed rows: ``rollback`` would discard the staged rows of the bolt's
    prepared transaction in the shared database, and its commit would then commit nothing.
    """
    state = load_provider(c).new_state(f"{NAME}/lines/0", c, None)
    try:
        return dict(state.committed_items())
    finally:
        state.close()


def run(c: Config, src: Path, progress: Path, want: int) -> list[str]:
    """Run ``NAME`` under ``c`` until ``want`` lines are counted; the errors."""
    b = TopologyBuilder()
    b.set_spout("files", FileSpout(src, "*.txt", progress=progress, commit_interval_secs=0.2,
                                   poll_secs=0.1), 2)
    b.set_bolt("lines", Lines(), 1).shuffle_grouping("files")
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology(NAME, c, b.create_topology())
        for _ in range(300):
            cluster.advance_time(STEP, increment=STEP, quiet_timeout=0.2)
            if len(counted(c)) >= want:
                break
        cluster.advance_time(1.0, increment=STEP, quiet_timeout=0.2)  # acks, progress written
        errors = [e["message"] for e in cluster.get_topology_info(NAME)["errors"]]
        cluster.kill_topology(NAME)
    return errors


def write(src: Path, name: str, n: int) -> None:
    (src / name).write_text("".join(f"{name}:{i}\n" for i in range(n)), encoding="utf-8")


def test_switching_a_name_from_at_least_once_to_exactly_once_and_back_counts_each_line_once(tmp_path):
    Faults.plan = {}
    src, progress, store = tmp_path / "in", tmp_path / "progress", tmp_path / "state"
    src.mkdir()
    write(src, "a.txt", 20)
    errors = run(conf("at_least_once", store), src, progress, 20)
    write(src, "b.txt", 20)
    errors += run(conf("exactly_once", store), src, progress, 40)
    write(src, "c.txt", 20)
    errors += run(conf("at_least_once", store), src, progress, 60)
    write(src, "d.txt", 20)
    errors += run(conf("exactly_once", store), src, progress, 80)
    got = counted(conf("exactly_once", store))
    want = {f"{f}.txt:{i}": 1 for f in "abcd" for i in range(20)}
    assert got == want, (sorted(set(want) - set(got))[:5], sorted(k for k, n in got.items() if n > 1)[:5],
                         errors)
    assert not any("MissingStateError" in e for e in errors), errors
