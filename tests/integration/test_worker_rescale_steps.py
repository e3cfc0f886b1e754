"""The worker's end of the Spark live rescale (``spark.worker_rescale``), run on LocalCluster workers.

The messages are what ``spark.live_move`` sends; here they reach the steps directly, so the
steps' own logic (deriving and checking the plan, undoing) runs without Spark.
"""

import pytest

from squall import LocalCluster
from squall.runtime.live_plan import live_plan, task_changes
from squall.spark import worker_rescale
from squall.testing import simulated_time
from tests.integration.components import RECORD, reset
from tests.integration.test_live_rescale import RELEASE, WORDS, acked, c, word_topology


@pytest.fixture(autouse=True)
def _clean():
    reset()
    RELEASE.clear()
    yield
    RELEASE.set()
    reset()


def run(worker, **msg):
    ran, box = worker_rescale.start_step(worker, msg)
    assert ran.wait(10)
    return worker_rescale.answer(box)


def test_the_steps_grow_a_bolt_and_a_plan_that_differs_is_refused():
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("t", c(), word_topology(held=True))
        workers = cluster.workers("t")
        old = workers[0].plan
        changes = task_changes(old, {"count": 4})
        new = live_plan(old, changes)
        tasks = [[t, comp] for t, comp in sorted(new.task_component.items())]
        learn = {"parallelism": {"count": 4}, "changes": {k: list(v) for k, v in changes.items()}}

        bad = run(workers[0], step="learn", **learn, tasks=tasks[:-1])
        assert bad["error"] == ("RuntimeError: the plan derived here differs from the master's "
                                "(a worker on an older plan)")
        assert workers[0].plan is old
        assert run(workers[0], step="nope")["error"] == "ValueError: unknown rescale step 'nope'"

        for w in workers:
            assert run(w, step="learn", **learn, tasks=tasks)["error"] is None
            assert w.plan.component_tasks == new.component_tasks
        added = sorted(set(new.task_component) - set(old.task_component))
        where = new.task_worker()
        for w in workers:
            ids = [t for t in added if where[t] == w.index]
            if ids:
                assert run(w, step="add", ids=ids)["value"] == len(ids)
        feeding = new.component_tasks["src"]
        for w in workers:
            ids = [t for t in feeding if where[t] == w.index]
            if ids:
                assert run(w, step="switch", ids=ids)["value"] >= 0
        RELEASE.set()  # the words after the first HELD reach the new routing
        cluster.wait_quiet(trees=True)
        assert acked("spout") == set(range(len(WORDS)))
        assert set(added) & {task for task, _ in RECORD["count.seen"]}  # the new tasks counted


def test_unlearn_and_unadd_undo_the_first_steps():
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("t", c(), word_topology())
        w = cluster.workers("t")[0]
        old, topology = w.plan, w.topology
        changes = task_changes(old, {"count": 3})
        new = live_plan(old, changes)
        tasks = [[t, comp] for t, comp in sorted(new.task_component.items())]
        run(w, step="learn", parallelism={"count": 3}, changes={k: list(v) for k, v in changes.items()},
            tasks=tasks)
        (added,) = set(new.task_component) - set(old.task_component)
        if new.task_worker()[added] == w.index:
            run(w, step="add", ids=[added])
            assert added in w.tasks
            run(w, step="unadd", ids=[added])
        assert added not in w.tasks
        assert run(w, step="unlearn")["error"] is None
        assert w.plan is old and w.topology is topology
        cluster.wait_quiet(trees=True)
        assert acked("spout") == set(range(len(WORDS)))
