"""iowait: sentence spout -> wait (about 5 ms on a local server per sentence) -> sink.

A topology that enriches each tuple from an outside system. The wait step runs three ways
on squall, side by side: on the worker's loop (``loop``: one waiting task stalls its
worker), each task on a thread of its own (``threaded``: ``set_threaded()``), and as an
``AsyncBolt`` (``async``: up to 100 waits in flight per task). Bytewax does the same wait
in a ``map`` step. Also the CPU-bound word count with every bolt ``set_threaded()``
(``wordcount-threaded``), to set against the ``wordcount`` workload on the loop.
Measured: sentences acked per second (squall, ackers on), latency, memory.
"""

from __future__ import annotations

from typing import Any

from squall import AsyncBolt, BasicBolt, Fields, TopologyBuilder

NAME = "iowait"
SYSTEMS = ("squall-local", "squall-spark", "bytewax")
WAIT_TASKS = 8  # tasks of the wait step, loop and threaded
ASYNC_TASKS = 2  # one per worker
ASYNC_CAPACITY = 100


def cases(profile: Any, system: str) -> list[dict]:
    from benchmarks.workloads import make_case

    if system == "bytewax":
        return [make_case(NAME, "map", system, profile)]
    return [make_case(NAME, v, system, profile, acking=True)
            for v in ("loop", "threaded", "async", "wordcount-threaded")]


class WaitStep(BasicBolt):
    """Waits for the delay server's answer, then passes the sentence on."""

    def __init__(self, port: int) -> None:
        self.port = port

    def prepare(self, conf: dict, context: Any) -> None:
        from benchmarks.peers._delay import DelayClient

        self.client = DelayClient(self.port)

    def execute(self, tup: Any, collector: Any) -> None:
        self.client.ask()
        collector.emit([tup[0]])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("sentence"))


class AsyncWaitStep(AsyncBolt):
    """The same wait, awaited: many sentences wait at once."""

    capacity = ASYNC_CAPACITY
    timeout = 10.0

    def __init__(self, port: int) -> None:
        self.port = port

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        self.collector = collector

    async def prepare_async(self, conf: dict, context: Any) -> None:
        from benchmarks.peers._delay import AsyncDelayClient

        self.client = AsyncDelayClient()
        await self.client.connect(self.port)

    async def execute(self, tup: Any) -> None:  # type: ignore[override]
        await self.client.ask()
        self.collector.emit([tup[0]], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("sentence"))


def build(case: dict, probe_dir: str) -> tuple[Any, Any]:
    from benchmarks.peers._delay import start_server
    from benchmarks.workloads.components import MapStep, SentenceSpout, SplitSentence, WordCount
    from benchmarks.workloads.wordcount import squall_conf

    n = case["workers"]
    variant = case["variant"]
    builder = TopologyBuilder()
    builder.set_spout("sentence", SentenceSpout(probe_dir), parallelism=n)
    if variant == "wordcount-threaded":
        builder.set_bolt("split", SplitSentence(), parallelism=n).set_threaded().shuffle_grouping("sentence")
        builder.set_bolt("count", WordCount(probe_dir), parallelism=n).set_threaded().fields_grouping(
            "split", Fields("word"))
        return builder.create_topology(), squall_conf(case)
    port = start_server()
    if variant == "async":
        builder.set_bolt("wait", AsyncWaitStep(port), parallelism=ASYNC_TASKS).shuffle_grouping("sentence")
    else:
        wait = builder.set_bolt("wait", WaitStep(port), parallelism=WAIT_TASKS).shuffle_grouping("sentence")
        if variant == "threaded":
            wait.set_threaded()
    builder.set_bolt("sink", MapStep(len, probe_dir), parallelism=n).shuffle_grouping("wait")
    return builder.create_topology(), squall_conf(case)
