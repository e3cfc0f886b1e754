"""At-least-once from a ``FileSpout`` on Spark (local[3]) under worker SIGKILLs, no rescale
(RELIABILITY C1, S1).

A ``FileSpout`` over six files (2 tasks, progress written every 0.2 s) -> ``CountFirst`` (a
``StatefulBolt`` counting each line in Redis state, acking once a checkpoint commits it) on
three worker processes, ``topology.guarantee: at_least_once``. In each seeded run one or two
worker processes are SIGKILLed at seeded points of progress and relaunched by squall's
supervision; every line must end counted at least once (duplicates allowed), and the
assertion names the lines lost, if any. ``SQUALL_FAULT_SEEDS``: how many of the 8 seeds
(unset, and ``make test``: 2), or ``all`` (``make faults``).
"""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

import pytest

from squall import Config, Fields, TopologyBuilder
from squall.connectors.files import FileSpout
from tests.connectors.test_seekable_rescale import CountFirst
from tests.fault_seeds import fault_seeds as shared_fault_seeds
from tests.integration.test_stateful import committed_counts
from tests.redis_server import RedisServer

pytestmark = [pytest.mark.spark, pytest.mark.slow]
FILES, LINES = 6, 300
ALL_SEEDS = 8
DEFAULT_SEEDS = 2  # make test; make faults runs them all


def fault_seeds() -> range:
    """The seeds to run (``tests.fault_seeds``; unset: ``DEFAULT_SEEDS``)."""
    return shared_fault_seeds(ALL_SEEDS, DEFAULT_SEEDS)


@pytest.fixture(scope="module")
def redis(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("alo-file-redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def file_topology(tmp_path, redis_port: int) -> tuple[Config, object, set[str]]:
    """FileSpout (2 tasks) over ``FILES`` files -> CountFirst (2 tasks) on 3 workers, at-least-once."""
    src = tmp_path / "in"
    src.mkdir()
    for f in range(FILES):
        (src / f"f{f}.txt").write_text("".join(f"{f}:{i}\n" for i in range(LINES)), encoding="utf-8")
    want = {f"{f}:{i}" for f in range(FILES) for i in range(LINES)}
    b = TopologyBuilder()
    b.set_spout("source", FileSpout(str(src), "*.txt", progress=str(tmp_path / "progress"),
                                    commit_interval_secs=0.2, poll_secs=0.1, read_bytes=64), 2)
    b.set_bolt("sink", CountFirst(), 2).fields_grouping("source", Fields("line"))
    conf = Config()
    conf.set_num_workers(3)
    conf.set_max_spout_pending(20)  # slow enough that lines are in flight at each kill
    conf.update({"topology.guarantee": "at_least_once", "topology.state.checkpoint.interval.ms": 300,
                 "topology.message.timeout.secs": 10,
                 "topology.state.provider": "squall.state.redis.RedisStateProvider",
                 "topology.state.provider.config": {"host": "127.0.0.1", "port": redis_port}})
    return conf, b.create_topology(), want


def hosted_components(info: dict, worker: dict) -> list[str]:
    """The components (not squall's own) with a task on ``worker``."""
    tasks = set(worker.get("tasks") or ())
    return sorted(c for c, comp in info["components"].items()
                  if not c.startswith("__") and tasks & set(comp.get("tasks") or ()))


def progress_against(progress: Path, lost: list[str]) -> dict[str, str]:
    """Per file with a lost line: the first lost line's byte offset and the committed progress.

    A progress past a lost line means the spout committed over a line never counted.
    """
    out: dict[str, str] = {}
    for line in lost:
        f, i = (int(p) for p in line.split(":"))
        name = f"f{f}.txt"
        if name in out:
            continue
        offset = sum(len(f"{f}:{j}\n") for j in range(i))
        try:
            committed = (progress / f"{name}.offset").read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            committed = "none"
        out[name] = f"line {line} at byte {offset}, progress {committed}"
    return out


def figures(info: dict) -> str:
    """Per component its tasks and counters, per worker its state, restarts and tasks: what a
    stall looks like (which side stopped)."""
    keys = ("emitted", "acked", "failed", "executed")
    comps = {c: {t: {k: f[k] for k in keys if f.get(k)} for t, f in (d.get("by_task") or {}).items()}
             for c, d in info["components"].items() if c in ("source", "sink")}
    workers = {w["worker"]: (w["state"], w["restarts"], w["tasks"]) for w in info["workers"]}
    return f"components {comps}; workers {workers}"


def lost_message(got: dict, want: set[str], what: list[str], errors: list[str],
                 progress: Path | None = None) -> str:
    """One line naming the lost lines (the first 20), the faults done, the files' progress
    against them and the last errors."""
    lost = sorted(want - set(got), key=lambda s: tuple(int(p) for p in s.split(":")))
    where = progress_against(progress, lost) if progress is not None else {}
    return f"{len(lost)} lines lost: {lost[:20]}; {what}; {where}; {errors}"


@pytest.mark.timeout(400)
@pytest.mark.parametrize("seed", fault_seeds())
def test_an_at_least_once_file_spout_under_worker_sigkills_loses_no_line(local_cluster, redis, tmp_path,
                                                                         seed):
    rng = random.Random(700 + seed)
    name = f"alo-file-kill-{seed}"
    conf, topology, want = file_topology(tmp_path, redis.port)
    local_cluster.submit_topology(name, conf, topology)

    def counted() -> int:
        return len(committed_counts(conf, name, "sink"))

    done: list[str] = []
    try:
        shares = sorted(rng.uniform(0.1, 0.7) for _ in range(rng.choice((1, 2))))
        for share in shares:
            deadline = time.monotonic() + 150
            while counted() < share * len(want):
                assert time.monotonic() < deadline, f"{counted()} lines counted; {done}"
                time.sleep(0.1)
            info = local_cluster.get_topology_info(name)
            hosted = {w["worker"]: hosted_components(info, w) for w in info["workers"] if w.get("pid")}
            pids = {w["worker"]: w["pid"] for w in info["workers"] if w.get("pid")}
            # mostly a worker reading files (its spout's lines in flight), else any
            pool = sorted(w for w in pids if "source" in hosted[w]) if rng.random() < 0.6 else sorted(pids)
            worker = rng.choice(pool or sorted(pids))
            try:
                os.kill(pids[worker], signal.SIGKILL)
            except ProcessLookupError:
                pass
            done.append(f"SIGKILL worker {worker} ({'+'.join(hosted[worker])}) at {counted()} lines")
        deadline = time.monotonic() + 200
        while counted() < len(want) and time.monotonic() < deadline:
            time.sleep(0.5)
        got = committed_counts(conf, name, "sink")
        info = local_cluster.get_topology_info(name)
    finally:
        local_cluster.kill_topology(name, wait_secs=0)
    errors = [e["message"][:200] for e in info["errors"]][-5:]
    print(f"seed {seed}: {done}; {len(got)} of {len(want)} lines, "
          f"{sum(got.values()) - len(got)} counted more than once; "
          f"restarts {sum(w['restarts'] for w in info['workers'])}")
    assert sum(w["restarts"] for w in info["workers"]) >= 1, info["workers"]  # it really was killed
    assert set(got) <= want, sorted(set(got) - want)[:5]
    assert not want - set(got), lost_message(got, want, [*done, figures(info)], errors, tmp_path / "progress")
