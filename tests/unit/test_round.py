"""The round's decisions (squall/runtime/round.py) on plain data: no sockets, threads or clocks.

Tasks are fakes whose ``process`` moves a fake real-time clock by a cost per tuple and puts
what they emit in another fake's queue (a task of this worker) or in the fake exchange's
batch (a task of another worker). The exchange records its sends and hands over the frames
a test queued for it. Everything runs in this thread, on the fake clock.
"""

from __future__ import annotations

from collections import deque

import pytest

from squall.runtime.host import Task
from squall.runtime.round import (
    BOLT_BATCH,
    BOLT_PASSES,
    SLICE,
    SPOUT_BATCH,
    Round,
    RoundConfig,
    upstream_first,
)
from squall.runtime.tasks import SpoutTask


class Clock:
    """Real time that moves only when a fake task works."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Exchange:
    """The transport shell: counts sends, hands arrived tuples to ``target``'s queue."""

    def __init__(self) -> None:
        self.batched = 0  # tuples for other workers since the last send
        self.sends: list[int] = []  # tuples each send carried
        self.full = False  # a peer refuses frames
        self.arriving: deque[tuple[Task, int]] = deque()  # (target, tuples) per frame
        self.rooms: list[int] = []
        self.looks = 0  # ``waiting`` calls: the round deferred its send to the spouts'

    def send(self) -> bool:
        self.sends.append(self.batched)
        self.batched = 0
        return self.full

    def waiting(self) -> bool:
        self.looks += 1
        return self.full

    def receive(self, room: int) -> int:
        self.rooms.append(room)
        n = 0
        while self.arriving and n < room:
            target, count = self.arriving.popleft()
            target.inbox.extend(range(count))
            n += count
        return n


class Bolt(Task):
    """A bolt: each tuple costs ``cost`` seconds and emits ``fanout`` tuples to ``out``.

    ``out`` is another fake (a task of this worker), the exchange (another worker's task),
    or None.
    """

    def __init__(self, clock: Clock, task_id: int, component: str, *, cost: float = 0.0,
                 out: object = None, fanout: int = 1) -> None:
        self.inbox = deque()
        self.task_id = task_id
        self.component = component
        self.clock = clock
        self.cost = cost
        self.out = out
        self.fanout = fanout
        self.handled = 0

    def process(self, budget: int) -> int:
        n = min(budget, len(self.inbox))
        for _ in range(n):
            self.inbox.popleft()
            self.clock.now += self.cost
            if isinstance(self.out, Exchange):
                self.out.batched += self.fanout
            elif self.out is not None:
                self.out.inbox.extend(range(self.fanout))  # type: ignore[attr-defined]
        self.handled += n
        return n


class Spout(SpoutTask):
    """A spout: each call costs ``cost`` seconds and emits one tuple to ``out`` while it has some."""

    def __init__(self, clock: Clock, task_id: int, *, out: object, cost: float = 0.0,
                 limit: int = 10**9, component: str = "spout") -> None:
        self.inbox = deque()
        self.task_id = task_id
        self.component = component
        self.clock = clock
        self.out = out
        self.cost = cost
        self.limit = limit
        self.calls = 0
        self.emitted = 0
        self.idle_until = 0.0
        self.idle_streak = 0

    def can_emit(self) -> bool:
        return True

    def next_tuple(self) -> int:
        self.calls += 1
        self.clock.now += self.cost
        if self.emitted >= self.limit:
            return 0
        self.emitted += 1
        if isinstance(self.out, Exchange):
            self.out.batched += 1
        else:
            self.out.inbox.append(self.emitted)  # type: ignore[attr-defined]
        return 1

    def went_idle(self, now: float) -> None:
        self.idle_until = now + 1.0


def core(clock: Clock, exchange: Exchange, *, bolts: list[Bolt] = (), spouts: list[Spout] = (),
         **conf: object) -> Round:
    settings = {"topology.executor.receive.buffer.size": 1000,
                "squall.spout.round.budget.ms": 1e9, "squall.transfer.batch.time.ms": 1e9}
    settings.update({k.replace("_", "."): v for k, v in conf.items()})
    r = Round(RoundConfig(settings), exchange, now=clock)
    r.processors = list(bolts)
    r.spouts = list(spouts)
    r.queues = [*bolts, *spouts]
    return r


# ---- passes over the bolts -------------------------------------------------------------


def test_a_starved_bolt_is_served_by_further_passes_in_the_same_round():
    clock, ex = Clock(), Exchange()
    count = Bolt(clock, 3, "count")
    split = Bolt(clock, 2, "split", out=count, fanout=7)  # a sentence's words
    r = core(clock, ex, bolts=[split, count])
    split.inbox.extend(range(64))
    r.run(active=False)
    # one pass: split's 64 sentences -> 448 words, count a batch of them; the second pass
    # takes the rest, the third finds nothing and ends the phase
    assert 7 * 64 > BOLT_BATCH and count.handled == 7 * 64 and not count.inbox


def test_the_bolt_budget_ends_the_passes():
    clock, ex = Clock(), Exchange()
    count = Bolt(clock, 3, "count", cost=0.0001)
    split = Bolt(clock, 2, "split", out=count, fanout=7, cost=0.0001)
    r = core(clock, ex, bolts=[split, count])
    split.inbox.extend(range(64))
    r.run(active=False)  # the first pass takes 32 ms of the fake clock: over the 5 ms budget
    assert count.handled == BOLT_BATCH and len(count.inbox) == 7 * 64 - BOLT_BATCH


def test_a_cycle_of_bolts_on_a_still_clock_ends_the_round_after_the_last_pass():
    clock, ex = Clock(), Exchange()
    a = Bolt(clock, 1, "a")
    b = Bolt(clock, 2, "b", out=a)
    a.out = b
    r = core(clock, ex, bolts=[a, b])
    a.inbox.append(0)
    r.run(active=False)  # the tuple goes round forever; the round does not
    assert (a.handled, b.handled) == (BOLT_PASSES, BOLT_PASSES) and r.rounds == 1


def test_upstream_bolts_come_first_whatever_their_task_ids():
    clock = Clock()
    sink, relay = Bolt(clock, 1, "sink"), Bolt(clock, 2, "relay")
    sources = {"spout": [], "relay": [("spout", "default")], "sink": [("relay", "default")]}
    assert upstream_first([sink, relay], sources) == [relay, sink]


# ---- backpressure ----------------------------------------------------------------------


def test_spouts_stop_above_the_high_mark_and_start_again_below_the_low_mark():
    clock, ex = Clock(), Exchange()
    slow = Bolt(clock, 2, "slow", cost=0.001)  # a batch (256) a round: one pass is over budget
    spout = Spout(clock, 1, out=slow)
    r = core(clock, ex, bolts=[slow], spouts=[spout], topology_backpressure_water_mark_high=0.3,
             topology_backpressure_water_mark_low=0.1, topology_spout_max_batch_size=400)
    decisions = []
    for _ in range(12):
        before = spout.emitted
        r.run(active=True)
        # the queue the decision saw: after the bolts, before this round's emits
        decisions.append((r.throttled, len(slow.inbox) - (spout.emitted - before)))
    # the spouts stop once the queue reaches 300 (the high mark) and start again only once it
    # is at 100 or under (the low mark): never a change of mind between the marks
    changes = [(t, q) for (t, q), (t0, _) in zip(decisions[1:], decisions, strict=False) if t != t0]
    assert changes == [(True, 432), (False, 0)] * 2
    assert all(q >= 300 if t else q <= 100 for t, q in changes)
    stayed = [q for (t, q), (t0, _) in zip(decisions[1:], decisions, strict=False) if t and t0]
    assert stayed and all(100 < q for q in stayed)  # between the marks: still throttled


def test_a_throttled_round_emits_nothing_but_the_bolts_go_on():
    clock, ex = Clock(), Exchange()
    bolt = Bolt(clock, 2, "bolt")
    spout = Spout(clock, 1, out=bolt)
    r = core(clock, ex, bolts=[bolt], spouts=[spout])
    ex.full = True  # a peer cannot take more frames
    bolt.inbox.extend(range(10))
    r.run(active=True)
    assert r.throttled and spout.calls == 0 and bolt.handled == 10


def test_a_backpressure_cycle_keeps_its_bolts_running_and_the_spouts_stopped():
    # two bolts feed each other more than they take (a cycle): their queues pass the high
    # mark, the spouts stop, and the bolts still run every round, each round ending
    clock, ex = Clock(), Exchange()
    a = Bolt(clock, 1, "a", fanout=2)
    b = Bolt(clock, 2, "b", out=a, fanout=2)
    a.out = b
    spout = Spout(clock, 3, out=a)
    r = core(clock, ex, bolts=[a, b], spouts=[spout], topology_backpressure_water_mark_high=0.5)
    for _ in range(5):
        r.run(active=True)
    emitted = spout.emitted
    for _ in range(5):
        r.run(active=True)
    assert r.throttled and spout.emitted == emitted and r.rounds == 10
    assert len(a.inbox) + len(b.inbox) >= 500


def test_the_checkpoint_spout_emits_its_barriers_while_throttled():
    clock, ex = Clock(), Exchange()
    bolt = Bolt(clock, 2, "bolt")
    data, barrier = Spout(clock, 1, out=bolt), Spout(clock, 3, out=bolt, component="$checkpoint")
    r = core(clock, ex, bolts=[bolt], spouts=[data, barrier])
    r.barrier_spouts = [barrier]
    ex.full = True
    r.run(active=True)
    assert r.throttled and data.calls == 0 and barrier.calls == 1


def test_frames_are_taken_only_while_the_fullest_queue_has_room():
    clock, ex = Clock(), Exchange()
    bolt = Bolt(clock, 2, "bolt", cost=1.0)  # a batch ends the bolt phase
    r = core(clock, ex, bolts=[bolt], topology_executor_receive_buffer_size=100)
    bolt.inbox.extend(range(400))
    ex.arriving.append((bolt, 10))
    r.run(active=False)
    r.run(active=False)
    assert ex.rooms == [] and not bolt.inbox  # 400, then 144: no room either time
    r.run(active=False)
    assert ex.rooms == [100] and bolt.handled == 410


# ---- the spouts ------------------------------------------------------------------------


def test_a_spout_is_asked_at_most_the_max_batch_size_a_round():
    clock, ex = Clock(), Exchange()
    spout = Spout(clock, 1, out=ex)
    r = core(clock, ex, spouts=[spout], topology_spout_max_batch_size=5)
    r.run(active=True)
    assert spout.calls == 5
    assert core(clock, ex).spout_batch == SPOUT_BATCH == 128  # not set: the default


def test_the_spout_that_used_the_budget_lets_the_next_one_start_the_next_round():
    clock, ex = Clock(), Exchange()
    slow = Spout(clock, 1, out=ex, cost=0.01)  # one call is over the 5 ms budget
    other = Spout(clock, 2, out=ex)
    r = core(clock, ex, spouts=[slow, other], squall_spout_round_budget_ms=5)
    r.run(active=True)
    assert (slow.calls, other.calls) == (1, 0)
    r.run(active=True)
    assert (slow.calls, other.calls) == (2, SPOUT_BATCH)  # other first, then slow again


def test_an_inactive_topology_asks_no_spout():
    clock, ex = Clock(), Exchange()
    spout = Spout(clock, 1, out=ex)
    r = core(clock, ex, spouts=[spout])
    r.run(active=False)
    assert spout.calls == 0 and not r.throttled


# ---- mid-round sends (the batch time) --------------------------------------------------


class Relay(Bolt):
    """A bolt during whose first slice a frame for ``local`` arrives."""

    def process(self, budget: int) -> int:
        n = super().process(budget)
        if self.arrives is not None:
            self.out.arriving.append(self.arrives)  # type: ignore[union-attr]
            self.arrives = None
        return n


def test_a_long_bolt_phase_sends_every_batch_time_and_takes_what_arrived():
    clock, ex = Clock(), Exchange()
    local = Bolt(clock, 3, "local")
    relay = Relay(clock, 2, "relay", cost=0.0001, out=ex)  # 1.6 ms a slice
    relay.arrives = (local, 3)
    r = core(clock, ex, bolts=[relay, local], squall_transfer_batch_time_ms=1.0)
    relay.inbox.extend(range(4 * SLICE))
    work = r.run(active=False)
    # a send after each slice (the batch time ran out each time), each with a look for
    # frames, then the round's own send; the frame that came mid-round is taken at the
    # first of them and handled in the same pass, as work of the round
    assert r.early_sends == 4 and ex.sends == [SLICE] * 4 + [0]
    assert len(ex.rooms) == 1 + 4 and local.handled == 3 and work == 4 * SLICE + 3 + 3


def test_a_fast_round_sends_once():
    clock, ex = Clock(), Exchange()
    relay = Bolt(clock, 2, "relay", out=ex)
    r = core(clock, ex, bolts=[relay], squall_transfer_batch_time_ms=1.0)
    relay.inbox.extend(range(4 * SLICE))
    r.run(active=False)
    assert r.early_sends == 0 and ex.sends == [4 * SLICE]


def test_a_peer_full_at_a_mid_round_send_stops_the_spouts_for_the_round():
    clock, ex = Clock(), Exchange()
    first = Spout(clock, 1, out=ex, cost=0.0004)
    second = Spout(clock, 2, out=ex)
    r = core(clock, ex, spouts=[first, second], squall_transfer_batch_time_ms=1.0)

    def refuse() -> bool:  # nothing waited at the round's start; the peer is full at its first send
        ex.sends.append(ex.batched)
        ex.batched = 0
        return True

    ex.send = refuse  # type: ignore[method-assign]
    r.run(active=True)
    # 0.4 ms a call: the batch time runs out at the third call, whose send is refused
    assert first.calls == 3 and second.calls == 0 and r.blocked
    assert r.spout_cursor == 1  # the next round starts with the spout that did not get a turn


# ---- one send a round: the bolts' output rides in the spouts' frames -----------------------


def test_when_the_spouts_run_the_bolts_output_goes_in_the_same_send_as_theirs():
    # a frame wakes ZeroMQ's I/O threads of both workers: one send per round, not two
    clock, ex = Clock(), Exchange()
    relay = Bolt(clock, 2, "relay", out=ex)
    spout = Spout(clock, 1, out=ex, limit=5)
    r = core(clock, ex, bolts=[relay], spouts=[spout])
    relay.inbox.extend(range(7))
    r.run(active=True)
    assert ex.sends == [7 + 5] and ex.looks == 1 and not r.throttled


@pytest.mark.parametrize("why", ["peer full", "queue past the high mark"])
def test_when_the_gate_stops_the_spouts_the_bolts_output_still_goes_in_that_round(why):
    clock, ex = Clock(), Exchange()
    relay = Bolt(clock, 2, "relay", out=ex)
    held = Bolt(clock, 3, "held")
    spout = Spout(clock, 1, out=ex)
    r = core(clock, ex, bolts=[relay], spouts=[spout], topology_backpressure_water_mark_high=0.5)
    r.queues.append(held)  # a queue the round does not drain: only its length counts
    relay.inbox.extend(range(7))
    if why == "peer full":
        ex.full = True
    else:
        held.inbox.extend(range(600))
    r.run(active=True)
    assert r.throttled and spout.calls == 0
    assert ex.sends == [7] and ex.looks == 1


@pytest.mark.parametrize("active, throttled", [(False, False), (True, True)])
def test_a_round_whose_spouts_do_not_run_sends_right_after_its_bolts(active, throttled):
    clock, ex = Clock(), Exchange()
    relay = Bolt(clock, 2, "relay", out=ex)
    spout = Spout(clock, 1, out=ex)
    r = core(clock, ex, bolts=[relay], spouts=[spout])
    r.throttled = throttled
    ex.full = throttled  # stays throttled
    relay.inbox.extend(range(7))
    r.run(active=active)
    assert ex.sends == [7] and ex.looks == 0 and spout.calls == 0


@pytest.mark.parametrize("active, throttled, wait", [(True, False, 0.0), (False, False, 0.05),
                                                     (True, True, 0.05)])
def test_the_loop_sleeps_until_a_spout_wants_asking(active, throttled, wait):
    clock, ex = Clock(), Exchange()
    spout = Spout(clock, 1, out=ex)
    r = core(clock, ex, spouts=[spout])
    r.throttled = throttled
    assert r.spout_wait(active) == wait


# ---- bolts that hold input beyond their queue (issue 41 item 2) --------------------------


class Holding(Bolt):
    """A bolt that took ``held`` tuples off its queue and has not acked them (a ShellBolt)."""

    def __init__(self, clock: Clock, task_id: int, component: str, held: int) -> None:
        super().__init__(clock, task_id, component)
        self.held = held

    def held_input(self) -> int:
        return self.held


def test_what_a_bolt_holds_beyond_its_queue_throttles_the_spouts():
    clock, ex = Clock(), Exchange()
    shell = Holding(clock, 2, "shell", held=900)  # above the high mark (800), its queue empty
    spout = Spout(clock, 1, out=ex)
    r = core(clock, ex)
    r.place([shell, spout], [], [], {"spout": [], "shell": [("spout", "default")]})
    assert r.holders == [shell]
    r.run(active=True)
    assert r.throttled and spout.emitted == 0
    shell.held = 150  # the subprocess answered: under the low mark (200), the spouts go on
    r.run(active=True)
    assert not r.throttled and spout.emitted > 0
