"""A live rescale of an exactly-once spout under faults, on LocalCluster with simulated time.

The exactly-once word count of integration/test_exactly_once, read by a ``PartitionedSpout``
(its positions merge), has its spout rescaled 2 -> 3 -> 2 while it runs. During each move, at
a step its seed picks, one fault: a bolt task's data fails, the split bolt raises on the next
sentences read, or a spout task's next PREPARE fails (a checkpoint rolls back: if it is the
move's, the move fails, the old spout tasks go on, and the test asks again), or a worker
crashes and is replaced as a crashed process is (the move then ends in a restart under the
new plan). The committed counts and the sink's
committed contents must equal the source: nothing lost, nothing counted twice. A few seeds by
default; every one with ``SQUALL_FAULT_SEEDS=all`` (``make faults``).
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
from tests.faults.test_live_rescale_faults import inject
from tests.integration.components import RECORD
from tests.integration.eo_components import Faults, PartitionedSpout, sentences
from tests.integration.test_exactly_once import (
    NAME,
    RATE,
    STEP,
    _positions_total,
    build,
    conf,
    coordinator,
    expected,
)
from tests.integration.test_live_rescale_keyed import keyed_counts, moving
from tests.integration.test_stateful import committed_counts

ALL_SEEDS = range(20)
SEEDS = ALL_SEEDS if os.environ.get("SQUALL_FAULT_SEEDS") == "all" else range(3)
SENTENCES = 300


def fault(cluster: LocalCluster, rng: random.Random, kind: str) -> str:
    """One fault of ``kind``.

    ``spout``: a spout task fails its next PREPARE (its position may be off); ``split``: the
    split bolt raises after the first word of the next sentence of each partition (a real
    tuple fails, half split: only the spout seeking back reads it again).
    """
    if kind == "split":
        nexts = [int(name[1:]) + n * task.spout.parts for w in cluster.workers(NAME)
                 for task in list(w.tasks.values()) if task.component == "source"
                 and getattr(task, "recovered", False) for name, n in dict(task.spout.at).items()]
        with Faults.lock:
            Faults.plan.update({("split", i): "raise" for i in nexts})
        return f"split raises on sentences {sorted(nexts)}"
    if kind != "spout":
        return inject(cluster, rng, kind)
    tasks = [(w, t) for w in cluster.workers(NAME) for t in w.tasks.values()
             if t.component == "source" and hasattr(t, "slipped")]
    w, task = rng.choice(tasks)
    w.call(lambda: task.collector.fail_next_prepare("a planned fault")).wait(10)
    return f"spout task {task.task_id} fails its next PREPARE"


def run(seed: int) -> dict:
    memory.clear()
    RECORD.clear()
    Faults.plan = {}
    rng = random.Random(seed)
    texts = sentences(seed, SENTENCES)
    wanted = [3, 2]
    # a move rides the next checkpoint (0.2 s) and ends at the one after: about 4 steps
    plan = [(rng.randrange(0, 4), rng.choice(["fail", "restart", "spout", "split"])) for _ in wanted]
    done, faults, records = [], [], []
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology(NAME, conf("exactly_once"),
                                build(texts, spout=PartitionedSpout(texts, NAME, rate=RATE)))
        since = None
        fault_at = None
        for step in range(4000):
            cluster.advance_time(STEP, increment=STEP, quiet_timeout=0.5)
            record, coord = coordinator(cluster)
            if fault_at is not None and fault_at >= 0 and step == fault_at and moving(cluster):
                faults.append(fault(cluster, rng, plan[len(done)][1]))
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
                    cluster.rebalance(NAME, parallelism={"source": wanted[0]})
                    since = None
                    # one fault per target: its retry after a failed move runs clean
                    hit = len(faults) > len(done)
                    fault_at = -1 if hit else step + 1 + plan[len(done)][0]
                    continue
            if not wanted and record.phase is Phase.COMMITTED and not coord.recovering \
                    and not coord.in_flight and _positions_total() == len(texts):
                break
        else:
            raise AssertionError(f"not settled (seed {seed}): {coordinator(cluster)}, "
                                 f"faults {faults[:5]}, records {records[-3:]}, left {wanted}")
        info = cluster.get_topology_info(NAME)
        tasks = info["components"]["source"]["tasks"]
        errors = [e["message"] for e in info["errors"]]
        cluster.kill_topology(NAME)
    c = conf("exactly_once")
    return {"texts": texts, "counts": keyed_counts(), "sink": dict(committed_counts(c, NAME, "sink")),
            "faults": faults, "records": records, "tasks": tasks, "errors": errors}


@pytest.mark.parametrize("seed", SEEDS)
def test_live_spout_rescale_2_3_2_under_faults_loses_nothing_and_repeats_nothing(seed):
    out = run(seed)
    words, arrivals = expected(out["texts"])
    counts = tally(words, Counter(out["counts"]))
    sink = tally(arrivals, Counter(out["sink"]))
    why = (out["faults"], out["records"], out["errors"][:3])
    assert (counts.lost, counts.duplicated) == ([], []), (counts, why)
    assert (sink.lost, sink.duplicated) == ([], []), (sink, why)
    assert len(out["tasks"]) == 2
    assert out["faults"], why  # at least one fault hit a move


def figures(seeds=ALL_SEEDS) -> str:
    """The faults, the moves' outcomes and their pauses over ``seeds`` (docs/state.md quotes it)."""
    kinds: Counter = Counter()
    outcomes: Counter = Counter()
    pauses = []
    for seed in seeds:
        out = run(seed)
        kinds.update(f.split(" ")[0] if "restarted" not in f else "restart" for f in out["faults"])
        for r in out["records"]:
            how = "live" if r["live"] else "restart"
            outcomes[f"{r['status']} ({how})"] += 1
            if r["status"] == "done" and r["live"]:
                pauses.append(r["pause_ms"])
    return (f"faults {dict(kinds)}; moves {dict(outcomes)}; pause_ms of live moves: "
            f"min {min(pauses)}, max {max(pauses)}")


if __name__ == "__main__":  # python -m tests.faults.test_live_spout_faults
    print(figures())
