"""Each grouping's semantics, on LocalCluster through complete_topology."""

from collections import Counter

import pytest

from squall import Config, CustomStreamGrouping, Fields, Spout, TopologyBuilder
from squall.testing import MockedSources, complete_topology
from tests.integration.components import WhoGotIt


class Source(Spout):
    def declare_output_fields(self, declarer):
        declarer.declare(Fields("key", "n"))


def run(grouping, n_items=200, workers=1, parallelism=4, source_parallelism=1):
    b = TopologyBuilder()
    b.set_spout("src", Source(), source_parallelism)
    grouping(b.set_bolt("who", WhoGotIt(), parallelism))
    conf = Config()
    conf.set_num_workers(workers)
    items = [[f"k{i % 17}", i] for i in range(n_items)]
    result = complete_topology(b.create_topology(), MockedSources({"src": items}), conf)
    assert result.acked("src") == list(range(n_items))
    return result.emitted("who"), result


def test_fields_grouping_sends_each_key_to_one_task_and_uses_all_tasks():
    emitted, _ = run(lambda d: d.fields_grouping("src", Fields("key")), workers=2)
    tasks_by_key = {}
    for task, (key, _n) in emitted:
        tasks_by_key.setdefault(key, set()).add(task)
    assert all(len(ts) == 1 for ts in tasks_by_key.values())
    assert {t for ts in tasks_by_key.values() for t in ts} == {2, 3, 4, 5}
    assert len(emitted) == 200


def test_all_grouping_sends_every_tuple_to_every_task():
    emitted, _ = run(lambda d: d.all_grouping("src"), workers=2)
    per_task = Counter(task for task, _ in emitted)
    assert per_task == {2: 200, 3: 200, 4: 200, 5: 200}


def test_global_grouping_sends_everything_to_the_lowest_task():
    emitted, _ = run(lambda d: d.global_grouping("src"), workers=2)
    assert {task for task, _ in emitted} == {2}
    assert len(emitted) == 200


@pytest.mark.parametrize("kind", ["shuffle", "none"])
def test_shuffle_and_none_are_balanced(kind):
    emitted, _ = run(lambda d: getattr(d, f"{kind}_grouping")("src"), n_items=203)
    counts = Counter(task for task, _ in emitted)
    assert set(counts) == {2, 3, 4, 5}
    assert max(counts.values()) - min(counts.values()) <= 1


class DirectSource(Spout):
    """Emits each tuple directly to the target task chosen by n % tasks."""

    def open(self, conf, context, collector):
        self.collector = collector
        self.targets = context.get_component_tasks("who")
        self.i = 0

    def next_tuple(self):
        if self.i < 40:
            target = self.targets[self.i % 3]  # never the 4th task
            self.collector.emit_direct(target, [self.i], stream="picked", msg_id=self.i)
            self.i += 1

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"), stream="picked", direct=True)


def test_direct_grouping_reaches_only_the_chosen_task():
    b = TopologyBuilder()
    b.set_spout("src", DirectSource())
    b.set_bolt("who", WhoGotIt(), 4).direct_grouping("src", stream="picked")
    conf = Config()
    conf.set_num_workers(2)
    result = complete_topology(b.create_topology(), MockedSources(), conf, timeout_secs=5)
    emitted = result.emitted("who")
    assert len(emitted) == 40
    for task, (n,) in emitted:
        assert task == [2, 3, 4][n % 3]


def test_local_or_shuffle_prefers_tasks_in_the_same_worker():
    # 2 workers; spout task 1 lives in worker 0 with "who" tasks dealt round robin
    emitted, result = run(lambda d: d.local_or_shuffle_grouping("src"), workers=2)
    tasks = {task for task, _ in emitted}
    workers = {w["worker"]: set(w["tasks"]) for w in result.info["workers"]}
    spout_worker = next(w for w, ts in workers.items() if 1 in ts)
    assert tasks and tasks <= workers[spout_worker]


class EvenOdd(CustomStreamGrouping):
    def prepare(self, context, stream, target_tasks):
        self.targets = target_tasks

    def choose_tasks(self, task_id, values):
        return [self.targets[values[1] % 2]]


def test_custom_grouping_choose_tasks_is_honoured():
    emitted, _ = run(lambda d: d.custom_grouping("src", EvenOdd()), workers=2)
    for task, (_key, n) in emitted:
        assert task == (2 if n % 2 == 0 else 3)
    assert len(emitted) == 200
