"""Issue 10 items 4 and 5 on the Spark runtime (local[3], two worker processes):
``topology.tasks`` by ``add_configuration``, partial key grouping, and the load-aware shuffle
with its switch."""

from __future__ import annotations

import pytest

from squall.api.fields import Fields
from squall.runtime.routing import PartialKeyRouter
from tests.spark import helpers
from tests.spark import parity_module as pm
from tests.spark import topo_module as tm

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.mark.timeout(240)
@pytest.mark.parametrize("disable_load_aware", [False, True])
def test_component_tasks_partial_key_and_load_aware_shuffle_on_spark(
        local_cluster, tmp_path, disable_load_aware):
    n = 400
    conf, topology = pm.wordcount(n, str(tmp_path), disable_load_aware=disable_load_aware)
    name = f"parity-{int(disable_load_aware)}"
    local_cluster.submit_topology(name, conf, topology)
    try:
        acked = helpers.wait_all_acked(str(tmp_path), n, timeout=120)
        info = local_cluster.get_topology_info(name)
    finally:
        local_cluster.kill_topology(name, wait_secs=0)
    assert acked == set(range(n))
    _, counts, _ = tm.read_results(str(tmp_path))
    assert counts == tm.expected_counts(n)  # partial key: a word's count summed over two tasks

    split_tasks = info["components"]["split"]["tasks"]
    assert len(split_tasks) == 4  # add_configuration("topology.tasks", 4) on 2 executors
    (spout_task,) = info["components"]["sentences"]["tasks"]
    worker_tasks = next(set(w["tasks"]) for w in info["workers"] if spout_task in w["tasks"])
    splits = pm.read_splits(str(tmp_path))
    assert len({(src, task) for src, task, _ in splits}) >= 2
    remote = sum(1 for _src, _task, local in splits if not local)
    if disable_load_aware:
        assert {task for _src, task, _ in splits} == set(split_tasks)  # balanced over all four
        assert 0.3 < remote / len(splits) < 0.7
    else:
        assert remote == 0  # every sentence split in the spout's worker
        assert {task for _src, task, _ in splits} == set(split_tasks) & worker_tasks

    count_tasks = info["components"]["count"]["tasks"]
    candidates = PartialKeyRouter(count_tasks, Fields("word", "id", "pos"), Fields("word")).candidates
    for word, tasks in pm.words_by_task(str(tmp_path)).items():
        assert tasks <= set(candidates([word, 0, 0])), (word, tasks)
