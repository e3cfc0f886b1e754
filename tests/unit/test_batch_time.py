"""The batch time (``squall.transfer.batch.time.ms``): a busy round sends and takes mid-way.

A tuple batched for another worker waits at most about the batch time for its frame
while the loop keeps working (bolt queues are handled in slices, spouts call by call),
instead of waiting for the round's end. Workers are driven round by round in this thread
on an in-process hub; the loop's real-time clock (``round.perf_counter``) is replaced by
a fake one that only the components move, so the tests do not depend on the machine.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
import zmq

from squall import BasicBolt, Config, Fields, Spout, TopologyBuilder
from squall.api.errors import InvalidTopologyError
from squall.runtime import round as round_module
from squall.runtime.plan import make_plan
from squall.runtime.round import BOLT_BATCH, BOLT_ROUND_BUDGET, SLICE, SPOUT_BATCH
from squall.runtime.submission import prepare_conf, prepare_topology
from squall.runtime.transport import InProcessHub
from squall.runtime.worker import Worker
from squall.spark.transport import ZmqTransport


class FakeClock:
    """A real-time clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


CLOCK = FakeClock()
SEEN: list[int] = []


class Numbers(Spout):
    """Emits 0, 1, 2, ... untracked; each call takes ``cost`` seconds of the fake clock."""

    def __init__(self, limit: int, cost: float = 0.0) -> None:
        self.limit = limit
        self.cost = cost

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        self.collector = collector
        self.i = 0

    def next_tuple(self) -> None:
        if self.i < self.limit:
            CLOCK.now += self.cost
            self.collector.emit([self.i])
            self.i += 1

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("n"))


class Relay(BasicBolt):
    """Passes each value on; each call takes ``cost`` seconds of the fake clock."""

    def __init__(self, cost: float) -> None:
        self.cost = cost

    def execute(self, tup: Any, collector: Any) -> None:
        CLOCK.now += self.cost
        collector.emit([tup[0]])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("n"))


class Sink(BasicBolt):
    def execute(self, tup: Any, collector: Any) -> None:
        SEEN.append(tup[0])

    def declare_output_fields(self, declarer: Any) -> None:
        pass


@pytest.fixture(autouse=True)
def fake_clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    monkeypatch.setattr(round_module, "perf_counter", CLOCK)
    SEEN.clear()
    return CLOCK


def build(topology: Any, batch_ms: float | None, capacity: int = 64,
          workers: int = 2) -> tuple[list[Worker], InProcessHub]:
    conf = Config()
    conf.set_num_workers(workers)
    conf.set_num_ackers(0)
    conf["squall.chaining"] = False  # queues and frames between tasks are what is tested
    conf["squall.spout.round.budget.ms"] = 1e6  # the fake clock must not end the spout phase
    if batch_ms is not None:
        conf["squall.transfer.batch.time.ms"] = batch_ms
    merged = prepare_conf(conf, topology)
    topology = prepare_topology(topology)
    plan = make_plan(topology, merged)
    hub = InProcessHub(workers, capacity)
    ws = [Worker(topology_name="t", topology=topology, conf=merged, plan=plan, index=i,
                 transport=hub.endpoint(i)) for i in range(workers)]
    for w in ws:
        w.open_tasks()
    return ws, hub


def relay_topology(n: int, cost: float) -> Any:
    # tasks are numbered by component name: a_numbers and c_relay on worker 0, b_sink on 1
    b = TopologyBuilder()
    b.set_spout("a_numbers", Numbers(n))
    b.set_bolt("c_relay", Relay(cost)).shuffle_grouping("a_numbers")
    b.set_bolt("b_sink", Sink()).shuffle_grouping("c_relay")
    return b.create_topology()


def placed(w: Worker, component: str) -> bool:
    return any(t.component == component for t in w.tasks.values())


def test_a_long_bolt_queue_is_sent_in_several_frames_during_the_round():
    ws, hub = build(relay_topology(SPOUT_BATCH, cost=0.0001), batch_ms=1.0)
    w0, w1 = ws
    assert placed(w0, "c_relay") and placed(w1, "b_sink") and placed(w0, "a_numbers")
    w0.run_once()  # the spout fills the relay's queue (local)
    relay = next(t for t in w0.tasks.values() if t.component == "c_relay")
    assert len(relay.inbox) == SPOUT_BATCH
    sent = w0.round.early_sends
    w0.run_once()  # the relay: 16 tuples (1.6 ms) a slice, so a send after each slice
    assert w0.round.early_sends - sent == SPOUT_BATCH // SLICE
    assert len(hub.queues[1]) == SPOUT_BATCH // SLICE  # a frame a slice, the last one empty: none
    for _ in range(3):
        w1.run_once()
    assert SEEN == list(range(SPOUT_BATCH))  # in emit order


def test_without_a_batch_time_the_round_sends_one_frame():
    ws, hub = build(relay_topology(SPOUT_BATCH, cost=0.0001), batch_ms=1e9)
    w0, w1 = ws
    w0.run_once()
    w0.run_once()
    assert w0.round.early_sends == 0
    assert len(hub.queues[1]) == 1
    w1.run_once()
    assert SEEN == list(range(SPOUT_BATCH))


def test_a_fast_round_makes_no_early_send():
    ws, hub = build(relay_topology(SPOUT_BATCH, cost=0.0), batch_ms=1.0)
    w0, _ = ws
    w0.run_once()
    w0.run_once()
    assert w0.round.early_sends == 0 and len(hub.queues[1]) == 1


def test_a_bolt_still_handles_at_most_a_batch_a_round_in_slices():
    ws, _ = build(relay_topology(3 * BOLT_BATCH, cost=0.0), batch_ms=1.0)
    w0, _ = ws
    relay = next(t for t in w0.tasks.values() if t.component == "c_relay")
    for _ in range(4 * BOLT_BATCH // SPOUT_BATCH):
        w0.spouts[0].idle_until = 0.0
        w0.round.run_spouts()  # queue without handling
    queued = len(relay.inbox)
    assert queued > BOLT_BATCH
    w0.round.process(relay)
    assert queued - len(relay.inbox) == BOLT_BATCH


def test_frames_taken_mid_batch_do_not_shorten_the_batch():
    # a spout on each worker feeds the one relay: the other worker's emits cross
    b = TopologyBuilder()
    b.set_spout("a_numbers", Numbers(4 * BOLT_BATCH), parallelism=2)
    b.set_bolt("c_relay", Relay(0.0001)).shuffle_grouping("a_numbers")
    b.set_bolt("b_sink", Sink()).shuffle_grouping("c_relay")
    ws, hub = build(b.create_topology(), batch_ms=1.0)
    here = next(w for w in ws if placed(w, "c_relay"))
    assert all(w.spouts for w in ws)
    relay = next(t for t in here.tasks.values() if t.component == "c_relay")
    for w in ws:
        w.round.io_at = float("inf")  # no takes while the queues fill
        for _ in range(2 * BOLT_BATCH // SPOUT_BATCH):
            w.spouts[0].idle_until = 0.0
            w.round.run_spouts()  # the relay's worker queues, the other batches for it
            w.send()
    queued = len(relay.inbox)
    frames = hub.queues[here.index]
    assert queued == 2 * BOLT_BATCH and len(frames) == 2 * BOLT_BATCH // SPOUT_BATCH
    here.round.io_at = CLOCK.now + 0.001
    work = here.round.process(relay)  # 1.6 ms a slice: the frames are taken after the first one
    assert len(frames) == 0
    assert queued + 2 * BOLT_BATCH - len(relay.inbox) == BOLT_BATCH  # a whole batch all the same
    assert work == BOLT_BATCH + 2 * BOLT_BATCH  # what came is work of the round


def test_a_bolt_handles_what_a_local_upstream_bolt_emitted_in_the_same_round():
    # task ids follow component names, the reverse of the stream's order here
    b = TopologyBuilder()
    b.set_spout("a_numbers", Numbers(SPOUT_BATCH))
    b.set_bolt("c_relay", Relay(0.0)).shuffle_grouping("a_numbers")
    b.set_bolt("b_sink", Sink()).shuffle_grouping("c_relay")
    (w,), _ = build(b.create_topology(), batch_ms=1.0, workers=1)
    assert [t.component for t in w.processors][:2] == ["c_relay", "b_sink"]
    w.run_once()  # the spout queues for the relay
    assert SEEN == []
    w.run_once()  # the relay, then the sink
    assert SEEN == list(range(SPOUT_BATCH))


def queued_relay(cost: float) -> tuple[Worker, Any]:
    ws, _ = build(relay_topology(4 * BOLT_BATCH, cost=cost), batch_ms=1.0)
    w0 = next(w for w in ws if placed(w, "c_relay"))
    relay = next(t for t in w0.tasks.values() if t.component == "c_relay")
    w0.round.io_at = float("inf")
    for _ in range(3 * BOLT_BATCH // SPOUT_BATCH):
        w0.spouts[0].idle_until = 0.0
        w0.round.run_spouts()  # queue without handling
    assert len(relay.inbox) == 3 * BOLT_BATCH
    w0.active = False  # the round's spout phase adds nothing
    return w0, relay


def test_a_round_makes_passes_over_the_bolts_until_their_queues_are_empty():
    w0, relay = queued_relay(cost=0.0)
    w0.run_once()
    assert len(relay.inbox) == 0  # three passes, not a batch a round


def test_no_pass_starts_once_the_bolt_phase_has_used_its_time():
    per_tuple = BOLT_ROUND_BUDGET / (BOLT_BATCH + BOLT_BATCH // 2)  # 1.5 batches fill the time
    w0, relay = queued_relay(cost=per_tuple)
    t0 = CLOCK.now
    w0.run_once()
    assert len(relay.inbox) == BOLT_BATCH  # the second pass ends the phase; no third
    assert CLOCK.now - t0 == pytest.approx(2 * BOLT_BATCH * per_tuple)


def spout_topology(n: int, cost: float) -> Any:
    b = TopologyBuilder()
    b.set_spout("a_numbers", Numbers(n, cost))
    b.set_bolt("b_sink", Sink()).shuffle_grouping("a_numbers")
    return b.create_topology()


def test_spout_emits_are_sent_during_the_spout_phase():
    ws, hub = build(spout_topology(SPOUT_BATCH, cost=0.0004), batch_ms=1.0)
    w0, w1 = ws
    assert placed(w0, "a_numbers") and placed(w1, "b_sink")
    w0.run_once()  # 0.4 ms a call: a send every third emit
    assert w0.spouts[0].spout.i == SPOUT_BATCH
    assert w0.round.early_sends == SPOUT_BATCH // 3
    assert len(hub.queues[1]) == SPOUT_BATCH // 3 + 1
    w1.run_once()
    assert SEEN == list(range(SPOUT_BATCH))


def test_a_full_peer_stops_the_spouts_at_the_early_send():
    ws, hub = build(spout_topology(SPOUT_BATCH, cost=0.0004), batch_ms=1.0, capacity=1)
    w0, w1 = ws
    w0.run_once()  # the first early send fills the peer's one slot; the second is refused
    spout = w0.spouts[0].spout
    assert spout.i == 6
    w0.run_once()  # the refused frame waits: throttled, no emit
    assert spout.i == 6 and w0.throttled
    while spout.i < SPOUT_BATCH or not w0.is_idle():
        w1.run_once()
        w0.run_once()
    for _ in range(3):
        w1.run_once()
    assert SEEN == list(range(SPOUT_BATCH))  # nothing lost, in order


def test_transfer_stats_count_what_crossed():
    ws, _ = build(relay_topology(SPOUT_BATCH, cost=0.0), batch_ms=1e9)
    w0, w1 = ws
    w0.run_once()
    w0.run_once()
    stats = w0.transfer_stats()
    assert stats["tuples"] == SPOUT_BATCH and stats["acker"] == 0
    assert stats["frames"] == 1 and stats["bytes"] > SPOUT_BATCH
    assert w1.transfer_stats()["tuples"] == 0


def test_a_negative_batch_time_is_refused():
    conf = Config()
    conf["squall.transfer.batch.time.ms"] = -1
    with pytest.raises(InvalidTopologyError, match="batch.time.ms"):
        prepare_conf(conf, spout_topology(1, 0.0))


def test_a_zmq_wait_under_a_millisecond_sleeps_rather_than_returning_at_once():
    ctx = zmq.Context()
    transport = ZmqTransport(ctx, insecure=True)
    try:
        t0 = time.perf_counter()
        for _ in range(5):
            transport.wait(0.0004)  # ZeroMQ polls in milliseconds: rounded up, not to 0
        assert time.perf_counter() - t0 >= 5 * 0.0004
    finally:
        transport.close()
        ctx.term()
