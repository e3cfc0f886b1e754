"""Every stream grouping in one topology, and where each one sent its tuples.

A spout ``numbers`` (2 tasks) emits ``[n, key]`` for n = 0..N-1 on its default stream, and
the same values on a direct stream ``picked``. One recording bolt (3 tasks) subscribes with
each grouping:

    shuffle            load-aware: the emitting worker's tasks while their queues keep up,
                       balanced among them (within one per emitting spout task)
    fields("key")      equal keys always reach the same task
    all                every task gets every tuple
    global             everything to the lowest task id
    none               balanced over the 3 tasks, within one per emitting spout task
    direct             the spout picks the task: tasks[n % 3] (``emit_direct`` on ``picked``)
    local_or_shuffle   only tasks in the emitting spout task's worker, when there are some
    partial_key("key") each key to the less loaded of its two candidate tasks
    custom             ``ThirdsGrouping``: multiples of 3 to the first task, the rest to the last

Run it with ``python -m examples.all_groupings`` (or ``python examples/all_groupings.py``).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from squall import (
    BasicBolt,
    Config,
    CustomStreamGrouping,
    Fields,
    GlobalStreamId,
    LocalCluster,
    Spout,
    TopologyBuilder,
)

if __package__ in (None, ""):  # run as a script: make the ``examples`` package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from examples import _results  # noqa: E402

TOPOLOGY_NAME = "all-groupings"
SPOUT = "numbers"
DIRECT_STREAM = "picked"
GROUPINGS = ["shuffle", "fields", "all", "global", "none", "direct", "local_or_shuffle",
             "partial_key", "custom"]
NUM_KEYS = 5


class NumberSpout(Spout):
    """Emits ``[n, key]`` once on the default stream and once, direct, on ``picked``.

    Its tasks share n = 0..limit-1 (task i of k emits n = i, i+k, ...); every tuple has a
    message id so the program can wait until all of them are acked.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        self._collector = collector
        tasks = context.get_this_component_tasks()
        self._next = tasks.index(context.task_id)
        self._step = len(tasks)
        self._direct_tasks = context.get_component_tasks("direct")

    def next_tuple(self) -> None:
        n = self._next
        if n >= self.limit:
            return
        self._next += self._step
        values = [n, f"k{n % NUM_KEYS}"]
        self._collector.emit(values, msg_id=("default", n))
        target = self._direct_tasks[n % len(self._direct_tasks)]
        self._collector.emit_direct(target, values, stream=DIRECT_STREAM, msg_id=(DIRECT_STREAM, n))

    def fail(self, msg_id: Any) -> None:
        print(f"tuple {msg_id} failed", file=sys.stderr)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("n", "key"))
        declarer.declare(Fields("n", "key"), stream=DIRECT_STREAM, direct=True)


class ThirdsGrouping(CustomStreamGrouping):
    """A custom grouping: multiples of 3 go to the first target task, other numbers to the last."""

    def prepare(self, context: Any, stream: GlobalStreamId, target_tasks: list[int]) -> None:
        self._first = [min(target_tasks)]
        self._last = [max(target_tasks)]

    def choose_tasks(self, task_id: int, values: list) -> list[int]:
        return self._first if values[0] % 3 == 0 else self._last


class Recorder(BasicBolt):
    """Counts what each of its tasks receives, by source task and by key, in ``_results``."""

    def prepare(self, conf: dict, context: Any) -> None:
        name, me = context.topology_name, (context.component_id, context.task_id)
        self.sources = _results.register(name, (*me, "from"))
        self.keys = _results.register(name, (*me, "keys"))

    def execute(self, tup: Any, collector: Any) -> None:
        self.sources[tup.task] += 1
        self.keys[tup["key"]] += 1


def build_topology(*, tuples: int = 300, parallelism: int = 3) -> Any:
    """The topology: ``tuples`` numbers, one ``parallelism``-task bolt per grouping."""
    builder = TopologyBuilder()
    builder.set_spout(SPOUT, NumberSpout(tuples), parallelism=2)

    def bolt(grouping: str) -> Any:
        return builder.set_bolt(grouping, Recorder(), parallelism=parallelism)

    bolt("shuffle").shuffle_grouping(SPOUT)
    bolt("fields").fields_grouping(SPOUT, Fields("key"))
    bolt("all").all_grouping(SPOUT)
    bolt("global").global_grouping(SPOUT)
    bolt("none").none_grouping(SPOUT)
    bolt("direct").direct_grouping(SPOUT, stream=DIRECT_STREAM)
    bolt("local_or_shuffle").local_or_shuffle_grouping(SPOUT)
    bolt("partial_key").partial_key_grouping(SPOUT, Fields("key"))
    bolt("custom").custom_grouping(SPOUT, ThirdsGrouping())
    return builder.create_topology()


def received(topology_name: str = TOPOLOGY_NAME) -> dict[str, dict[int, dict[str, Counter]]]:
    """What each task received: grouping -> task -> {"from": by source task, "keys": by key}."""
    out: dict[str, dict[int, dict[str, Counter]]] = {}
    for (grouping, task, what), counter in _results.snapshot(topology_name).items():
        out.setdefault(grouping, {}).setdefault(task, {})[what] = counter
    return out


def run(*, tuples: int = 300, workers: int = 2, timeout: float = 60.0) -> dict:
    """Run until all ``2 * tuples`` spout tuples are acked; returns what each task received."""
    conf = Config()
    conf.set_num_workers(workers)
    _results.reset(TOPOLOGY_NAME)
    with LocalCluster() as cluster:
        cluster.submit_topology(TOPOLOGY_NAME, conf, build_topology(tuples=tuples))
        deadline = time.monotonic() + timeout
        while True:
            info = cluster.get_topology_info(TOPOLOGY_NAME)
            spout = info["components"][SPOUT]
            if spout["acked"] + spout["failed"] >= 2 * tuples or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        cluster.kill_topology(TOPOLOGY_NAME)
    worker_of = {t: w["worker"] for w in info["workers"] for t in w["tasks"]}
    return {"received": received(TOPOLOGY_NAME), "info": info, "worker_of": worker_of}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tuples", type=int, default=300, help="numbers the spout emits (default 300)")
    parser.add_argument("--workers", type=int, default=2, help="worker threads (default 2)")
    args = parser.parse_args(argv)

    result = run(tuples=args.tuples, workers=args.workers)
    info, worker_of, got = result["info"], result["worker_of"], result["received"]
    spout_tasks = info["components"][SPOUT]["tasks"]
    print(f"spout {SPOUT!r}: tasks {spout_tasks} on workers {[worker_of[t] for t in spout_tasks]}; "
          f"{args.tuples} tuples on the default stream, {args.tuples} on {DIRECT_STREAM!r}; "
          f"acked {info['components'][SPOUT]['acked']}, failed {info['components'][SPOUT]['failed']}")
    print(f"{'grouping':<17} {'task':>4} {'worker':>6} {'tuples':>6}  from spout tasks   keys")
    for grouping in GROUPINGS:
        tasks = info["components"][grouping]["tasks"]
        for i, task in enumerate(tasks):
            rec = got.get(grouping, {}).get(task, {})
            sources, keys = rec.get("from", Counter()), rec.get("keys", Counter())
            src = ", ".join(f"{s}: {n}" for s, n in sorted(sources.items())) or "-"
            key_list = ", ".join(sorted(keys)) or "-"
            label = grouping if i == 0 else ""
            print(f"{label:<17} {task:>4} {worker_of[task]:>6} {sum(sources.values()):>6}  "
                  f"{src:<17}  {key_list}")
    for error in info["errors"][:5]:
        print(f"error in {error['component']} task {error['task']}: {error['message']}")
    return 1 if info["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
