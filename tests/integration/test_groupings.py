"""Each grouping's semantics, on LocalCluster through complete_topology."""

from collections import Counter

import pytest

from squall import (
    BasicBolt,
    Config,
    CustomStreamGrouping,
    Fields,
    GlobalStreamId,
    PartialKeyGrouping,
    Spout,
    TopologyBuilder,
)
from squall.runtime.routing import PartialKeyRouter
from squall.testing import MockedSources, complete_topology
from tests.integration.components import RECORD, WhoGotIt, record, reset


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


# ---- partial key, custom grouping by field name, load-aware shuffle (issue 10 item 5) ----


def test_partial_key_grouping_sends_each_key_to_at_most_two_tasks():
    emitted, _ = run(lambda d: d.partial_key_grouping("src", Fields("key")), workers=2, n_items=340)
    tasks_by_key = {}
    for task, (key, _n) in emitted:
        tasks_by_key.setdefault(key, Counter())[task] += 1
    assert len(emitted) == 340 and len(tasks_by_key) == 17
    candidates = PartialKeyRouter([2, 3, 4, 5], Fields("key", "n"), Fields("key")).candidates
    for key, per_task in tasks_by_key.items():
        assert set(per_task) <= set(candidates([key, 0])), (key, per_task)
    assert any(len(per_task) == 2 for per_task in tasks_by_key.values())  # keys do split
    totals = Counter(task for task, _ in emitted)
    assert len(totals) == 4 and max(totals.values()) - min(totals.values()) <= 2


def test_partial_key_grouping_object_as_a_custom_grouping_routes_as_the_declarers():
    by_object, _ = run(lambda d: d.custom_grouping("src", PartialKeyGrouping(Fields("key"))),
                       workers=2, n_items=340)
    by_declarer, _ = run(lambda d: d.partial_key_grouping("src", Fields("key")), workers=2,
                         n_items=340)
    assert sorted(by_object) == sorted(by_declarer)  # one emitter: the same choices in order


class ByFieldName(CustomStreamGrouping):
    """Routes on the field named ``field``, found through the GlobalStreamId, as Storm's do."""

    def __init__(self, field):
        self.field = field

    def prepare(self, context, stream, target_tasks):
        fields = context.get_component_output_fields(stream.component_id, stream.stream_id)
        record("custom.prepared", (stream, tuple(fields), tuple(target_tasks)))
        self.index = fields.index(self.field)
        self.targets = target_tasks

    def choose_tasks(self, task_id, values):
        return [self.targets[values[self.index] % len(self.targets)]]


def test_custom_grouping_is_prepared_with_the_global_stream_id():
    reset()
    emitted, _ = run(lambda d: d.custom_grouping("src", ByFieldName("n")), workers=2)
    assert RECORD["custom.prepared"] == [(GlobalStreamId("src", "default"), ("key", "n"),
                                          (2, 3, 4, 5))]
    stream = RECORD["custom.prepared"][0][0]
    assert (stream.component_id, stream.stream_id) == ("src", "default")
    for task, (_key, n) in emitted:
        assert task == 2 + n % 4


class Sentences(Spout):
    def declare_output_fields(self, declarer):
        declarer.declare(Fields("sentence"))


class Where(BasicBolt):
    """Records, per input, whether it came from a task of this worker; splits sentences."""

    def prepare(self, conf, context):
        self.local = set(context.worker_tasks)
        self.task = context.task_id
        self.component = context.component_id

    def execute(self, tup, collector):
        record(f"{self.component}.in", (tup.task, self.task, tup.task in self.local))
        if self.component == "split":
            for word in tup[0].split():
                collector.emit([word])

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("word"))


SENTENCES = ["the cow jumped over the moon", "an apple a day keeps the doctor away",
             "four score and seven years ago", "snow white and the seven dwarfs",
             "i am at two with nature"]


def word_count(disable_load_aware, parallelism=2, sentences=400):
    """storm-starter's word count on 2 workers: sentence -> split (shuffle) -> count (fields)."""
    reset()
    b = TopologyBuilder()
    b.set_spout("sentence", Sentences(), parallelism)
    b.set_bolt("split", Where(), parallelism).shuffle_grouping("sentence")
    b.set_bolt("count", Where(), parallelism).fields_grouping("split", Fields("word"))
    conf = Config()
    conf.set_num_workers(2)
    conf["topology.disable.loadaware.messaging"] = disable_load_aware
    conf["squall.chaining"] = False  # the shuffle itself is measured: split must not be fused
    items = [[SENTENCES[i % 5]] for i in range(sentences)]
    result = complete_topology(b.create_topology(), MockedSources({"sentence": items}), conf)
    assert len(result.acked("sentence")) == sentences
    return RECORD["split.in"], RECORD["count.in"]


def remote(edge):
    return sum(1 for _src, _dst, local in edge if not local)


@pytest.mark.parametrize("parallelism", [2, 4])
def test_load_aware_shuffle_keeps_a_word_count_in_its_worker(parallelism):
    split_in, count_in = word_count(disable_load_aware=False, parallelism=parallelism)
    assert len(split_in) == 400 and remote(split_in) == 0  # every sentence split where emitted
    # each worker's split tasks are used, and each emitter balances over its local ones
    per_emitter = {}
    for src, dst, _ in split_in:
        per_emitter.setdefault(src, Counter())[dst] += 1
    assert len({dst for _src, dst, _ in split_in}) == parallelism
    for counts in per_emitter.values():
        assert max(counts.values()) - min(counts.values()) <= 1
    assert 0.3 < remote(count_in) / len(count_in) < 0.7  # fields grouping: not affected


def test_disabled_load_awareness_is_the_balanced_shuffle_across_workers():
    split_in, _ = word_count(disable_load_aware=True, parallelism=4)
    per_emitter = {}
    for src, dst, _ in split_in:
        per_emitter.setdefault(src, Counter())[dst] += 1
    for counts in per_emitter.values():
        assert len(counts) == 4 and max(counts.values()) - min(counts.values()) <= 1
    assert 0.3 < remote(split_in) / len(split_in) < 0.7


def test_cross_worker_traffic_saved_on_a_two_worker_word_count():
    """The figure in docs/groupings.md: tuples crossing workers per sentence, on and off."""
    crossing = {}
    for disabled in (True, False):
        split_in, count_in = word_count(disable_load_aware=disabled, sentences=1000)
        crossing[disabled] = (remote(split_in) + remote(count_in)) / 1000
    print(f"\ncross-worker tuples per sentence: balanced {crossing[True]:.2f}, "
          f"load-aware {crossing[False]:.2f}")
    assert crossing[False] < crossing[True] - 0.3
