"""A live rescale of a keyed stateful bolt under faults, on LocalCluster with simulated time.

The exactly-once word count of integration/test_exactly_once (list spout -> split -> relay ->
count, a ``StatefulBolt`` by fields grouping -> sink) has its count bolt rescaled 4 -> 12 -> 4
while it runs. During each move, at a step its seed picks, one fault: a task's data fails (its
next PREPARE fails, so a checkpoint rolls back: if it is the move's, the move fails and the
old routing stays, and the test asks again), or a worker crashes and is replaced as a crashed
process is (the move then ends in a restart under the new plan). The committed counts and
the sink's committed contents must equal the source: nothing lost, nothing counted twice.
A few seeds by default; every one with ``SQUALL_FAULT_SEEDS=all`` (``make faults``).
"""

from __future__ import annotations

import os
import random
from collections import Counter

import pytest

from squall import LocalCluster
from squall.runtime.checkpoint import Phase
from squall.state import memory
from squall.testing import simulated_time
from squall.testing.invariants import tally
from tests.integration.components import RECORD
from tests.integration.eo_components import Faults, committed, sentences
from tests.integration.test_exactly_once import (
    NAME,
    STEP,
    build,
    conf,
    coordinator,
    expected,
    restart_worker,
)
from tests.integration.test_live_rescale_keyed import keyed_counts, moving
from tests.integration.test_stateful import committed_counts

ALL_SEEDS = range(20)
SEEDS = ALL_SEEDS if os.environ.get("SQUALL_FAULT_SEEDS") == "all" else range(3)
SENTENCES = 300


def inject(cluster: LocalCluster, rng: random.Random, kind: str) -> str:
    """One fault of ``kind`` on a task or worker the seed picks; what it was."""
    workers = cluster.workers(NAME)
    if kind == "restart":
        index = rng.randrange(len(workers))
        restart_worker(cluster, index)
        return f"worker {index} restarted"
    tasks = [t for w in workers for t in w.tasks.values()
             if t.component in ("split", "relay", "count", "sink") and hasattr(t, "alignment")]
    task = rng.choice(tasks)
    w = next(w for w in workers if task.task_id in w.tasks)
    w.call(task.alignment.fail_data).wait(10)  # as a data tuple failed in it
    return f"task {task.task_id} ({task.component}) failed a tuple"


def run(seed: int) -> dict:
    memory.clear()
    RECORD.clear()
    Faults.plan = {}
    rng = random.Random(seed)
    texts = sentences(seed, SENTENCES)
    wanted = [12, 4]
    # a move rides the next checkpoint (0.2 s) and ends at the one after: about 4 steps
    plan = [(rng.randrange(0, 4), rng.choice(["fail", "restart"])) for _ in wanted]
    done, faults, records = [], [], []
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology(NAME, conf("exactly_once"), build(texts, counts=4))
        since = None
        fault_at = None
        for step in range(4000):
            cluster.advance_time(STEP, increment=STEP, quiet_timeout=0.5)
            record, coord = coordinator(cluster)
            if fault_at is not None and fault_at >= 0 and step == fault_at and moving(cluster):
                faults.append(inject(cluster, rng, plan[len(done)][1]))
            if moving(cluster):
                continue
            rec = cluster.get_topology_info(NAME)["rescale"]
            if fault_at is not None:  # the move in progress ended
                records.append(rec)
                fault_at = None
                if rec["status"] == "done":
                    done.append(wanted.pop(0))
            if wanted and record.phase is Phase.COMMITTED and not coord.recovering:
                if since is None:
                    since = record.txid
                elif record.txid > since:
                    cluster.rebalance(NAME, parallelism={"count": wanted[0]})
                    since = None
                    # one fault per target: its retry after a failed move runs clean
                    hit = len(faults) > len(done)
                    fault_at = -1 if hit else step + 1 + plan[len(done)][0]
                    continue
            total = sum(committed(f"{NAME}/source/{i}").get("position", 0) for i in range(2))
            if not wanted and record.phase is Phase.COMMITTED and not coord.recovering \
                    and not coord.in_flight and total == len(texts):
                break
        else:
            raise AssertionError(f"not settled (seed {seed}): {coordinator(cluster)}, "
                                 f"faults {faults[:5]}, records {records[-3:]}, left {wanted}")
        info = cluster.get_topology_info(NAME)
        tasks = info["components"]["count"]["tasks"]
        cluster.kill_topology(NAME)
    c = conf("exactly_once")
    return {"texts": texts, "counts": keyed_counts(), "sink": dict(committed_counts(c, NAME, "sink")),
            "faults": faults, "records": records, "tasks": tasks}


@pytest.mark.parametrize("seed", SEEDS)
def test_live_rescale_4_12_4_under_faults_loses_nothing_and_repeats_nothing(seed):
    out = run(seed)
    words, arrivals = expected(out["texts"])
    counts = tally(words, Counter(out["counts"]))
    sink = tally(arrivals, Counter(out["sink"]))
    why = (out["faults"], out["records"])
    assert (counts.lost, counts.duplicated) == ([], []), (counts, why)
    assert (sink.lost, sink.duplicated) == ([], []), (sink, why)
    assert len(out["tasks"]) == 4
    assert out["faults"], why  # at least one fault hit a move


def figures(seeds=ALL_SEEDS) -> str:
    """The faults, the moves' outcomes and their pauses over ``seeds`` (docs/state.md quotes it)."""
    kinds: Counter = Counter()
    outcomes: Counter = Counter()
    pauses = []
    for seed in seeds:
        out = run(seed)
        kinds.update("restart" if "restarted" in f else "fail" for f in out["faults"])
        for r in out["records"]:
            how = "live" if r["live"] else "restart"
            outcomes[f"{r['status']} ({how})"] += 1
            if r["status"] == "done" and r["live"]:
                pauses.append(r["pause_ms"])
    return (f"faults {dict(kinds)}; moves {dict(outcomes)}; pause_ms of live moves: "
            f"min {min(pauses)}, max {max(pauses)}")


if __name__ == "__main__":  # python -m tests.faults.test_live_rescale_faults
    print(figures())
