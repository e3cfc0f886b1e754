"""Components and hooks of the user-metrics and task-hook tests, importable by path.

``topology.auto.task.hooks`` names hook classes by import path, so they live in a module
(events go to ``tests.integration.components.RECORD``, as the other shared components do).
"""

from __future__ import annotations

import asyncio

from squall import AsyncBolt, BasicBolt, Bolt, Fields, Spout
from squall.api.hooks import BaseTaskHook
from tests.integration.components import record


class RecordingHook:
    """Records every event with the info's main fields (a plain object, not a BaseTaskHook)."""

    def prepare(self, conf, context):
        self.task = context.task_id
        self.component = context.component_id
        record("hook.prepare", (self.component, self.task))

    def cleanup(self):
        record("hook.cleanup", (self.component, self.task))

    def emit(self, info):
        record("hook.emit", (self.component, info.task_id, info.stream, list(info.values),
                             list(info.out_tasks)))

    def spout_ack(self, info):
        record("hook.spout_ack", (info.spout_task_id, info.message_id, info.complete_latency_ms))

    def spout_fail(self, info):
        record("hook.spout_fail", (info.spout_task_id, info.message_id, info.fail_latency_ms))

    def bolt_execute(self, info):
        record("hook.bolt_execute", (info.executing_task_id, list(info.tuple.values),
                                     info.execute_latency_ms))

    def bolt_ack(self, info):
        record("hook.bolt_ack", (info.acking_task_id, list(info.tuple.values), info.process_latency_ms))

    def bolt_fail(self, info):
        record("hook.bolt_fail", (info.failing_task_id, list(info.tuple.values), info.fail_latency_ms))


class ExplodingHook(BaseTaskHook):
    """Raises on every execute: the component reports it, the topology goes on."""

    def bolt_execute(self, info):
        raise RuntimeError(f"hook exploded on {info.tuple.values}")


class NotConstructible:
    def __init__(self, needed):
        self.needed = needed


class HooksBolt(Bolt):
    """Storm's TopologyIntegrationTest.HooksBolt: emits what its hook counted so far."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.counts = {"emit": 0, "ack": 0, "fail": 0, "executed": 0}
        counts = self.counts

        class Counting(BaseTaskHook):
            def bolt_execute(self, info):
                counts["executed"] += 1

            def bolt_fail(self, info):
                counts["fail"] += 1

            def bolt_ack(self, info):
                counts["ack"] += 1

            def emit(self, info):
                counts["emit"] += 1

        context.add_task_hook(Counting())

    def execute(self, tup):
        c = self.counts
        self.collector.emit([c["emit"], c["ack"], c["fail"], c["executed"]])
        if c["ack"] - c["fail"] == 0:
            self.collector.ack(tup)
        else:
            self.collector.fail(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("emit", "ack", "fail", "executed"))


class MeteredSpout(Spout):
    """Emits ``n`` numbers with msg ids and registers one metric of each kind."""

    def __init__(self, n: int, track: bool = True):
        self.n = n
        self.track = track

    def open(self, conf, context, collector):
        self.collector = collector
        self.i = 0
        idx, count = context.get_this_task_index(), len(context.get_this_component_tasks())
        self.todo = [i for i in range(self.n) if i % count == idx]
        self.emitted = context.register_counter("emitted")
        self.sizes = context.register_histogram("sizes")
        self.lines = context.register_meter("lines")
        self.next_timer = context.register_timer("next")
        context.register_gauge("left", lambda: len(self.todo))

    def next_tuple(self):
        with self.next_timer.time():
            if self.todo:
                i = self.todo.pop(0)
                self.collector.emit([i], msg_id=i if self.track else None)
                self.emitted.inc()
                self.sizes.update(i)
                self.lines.mark(2)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"))


class SummingBolt(BasicBolt):
    """Counts and sums what it gets in user metrics; a gauge that raises on a chosen task."""

    def prepare(self, conf, context):
        self.seen = context.register_counter("seen")
        self.values = context.register_histogram("values")
        self.total = 0
        context.register_gauge("total", lambda: self.total)
        context.register_gauge("broken", lambda: 1 / 0)

    def execute(self, tup, collector):
        self.seen.inc()
        self.values.update(tup[0])
        self.total += tup[0]


class JudgeBolt(Bolt):
    """Acks even values and fails odd ones."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        if tup[0] % 2 == 0:
            self.collector.ack(tup)
        else:
            self.collector.fail(tup)


class CountingHook(BaseTaskHook):
    """Counts its task's executes in a user metric (so hooks are visible wherever metrics are)."""

    def prepare(self, conf, context):
        self.executes = context.register_counter("hook.executes")

    def bolt_execute(self, info):
        self.executes.inc()


class HoldBolt(Bolt):
    """Holds its inputs and acks them all on the next tick; a meter marks every input."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.held = []
        self.inputs = context.register_meter("inputs")
        self.sizes = context.register_histogram("sizes")

    def execute(self, tup):
        if tup.is_tick():
            for held in self.held:
                self.collector.ack(held)
            self.held = []
            self.collector.ack(tup)
            return
        self.inputs.mark()
        self.sizes.update(tup[0])
        self.held.append(tup)


class AsyncJudge(AsyncBolt):
    """JudgeBolt as an AsyncBolt: acks even values, fails odd ones, after an await."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    async def execute(self, tup):
        await asyncio.sleep(0)
        if tup[0] % 2 == 0:
            self.collector.ack(tup)
        else:
            self.collector.fail(tup)
