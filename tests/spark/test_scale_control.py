"""The topology master's control plane at scale (issue 37): confirmations and failure detection.

The master is the real one, against ``benchmarks.scale_sim``'s simulated workers (the real
sealed coordination protocol); only launching them as Spark jobs is replaced.
"""

from __future__ import annotations

import secrets
import threading
from collections import deque

import pytest

from benchmarks.scale import NAME, NoSpark, wait_for
from benchmarks.scale_sim import SimJobs, word_count
from squall.api.errors import InvalidTopologyError
from squall.spark import settings as S
from squall.spark.master import TopologyMaster
from squall.spark.registry import WorkerRegistry

WORKERS = 20

pytestmark = [pytest.mark.timeout(120)]


@pytest.fixture
def running():
    topology, conf, plan = word_count(WORKERS, {S.HEARTBEAT_TIMEOUT: 3.0})
    secret = secrets.token_bytes(32)
    master = TopologyMaster(NAME, topology, conf, plan, sc=NoSpark(), secret=secret)
    jobs = SimJobs(NAME, secret, master.address, plan, 1.0, pools=1)
    master.jobs = jobs
    try:
        master.start(timeout=60)
        yield master, jobs
    finally:
        master.stop()
        jobs.close()


class CountingCalls:
    """Counts the closures handed to the master's loop thread, and its walks of the registry."""

    def __init__(self, master: TopologyMaster) -> None:
        self.calls = 0
        self.walks = 0
        call, current = master.calls.call, master.registry.current

        def counted_call(fn):
            self.calls += 1
            return call(fn)

        def counted_current():
            self.walks += 1
            return current()
        master.calls.call = counted_call  # type: ignore[method-assign]
        master.registry.current = counted_current  # type: ignore[method-assign]


def test_a_deactivate_waits_for_the_confirmations_without_asking_the_loop_again(running):
    master, _ = running
    for active in (False, True):
        counted = CountingCalls(master)
        master.set_active(active, timeout=60)
        # every running worker confirmed it
        behind = master.calls.call(lambda: [i.worker for i in master.registry.current()
                                            if i.applied < master._active_seq])
        assert behind == []
        # one hand-over to the loop (tell everyone), one walk of the workers: no polling,
        # and no walk of every worker per worker (N x N) while the confirmations come in
        assert (counted.calls, counted.walks) == (2, 2)  # the check above is the second of each


def test_a_worker_that_dies_during_a_deactivate_is_not_waited_for(running):
    master, jobs = running
    victim = master.registry.slots[3]
    launch = victim.launch
    jobs.silence(victim.index)  # it will never confirm; the master declares it dead after 3 s
    done = threading.Event()
    waiter = threading.Thread(target=lambda: (master.set_active(False, timeout=100), done.set()))
    waiter.start()
    assert wait_for(lambda: master.calls.call(lambda: victim.launch > launch), 60)
    # its process was retired: the deactivate returns, confirmed by every other worker
    assert done.wait(30)
    waiter.join()


def test_a_silent_worker_is_declared_dead_within_5_s_by_default_and_never_a_beating_one():
    now = [0.0]
    timeout = float(S.setting({}, S.HEARTBEAT_TIMEOUT))
    interval = float(S.setting({}, S.HEARTBEAT))
    registry = WorkerRegistry(2, heartbeat_timeout=timeout, start_timeout=120.0, clock=lambda: now[0])
    for worker in range(2):
        registry.launched(worker)
        registry.register({"worker": worker, "launch": 1, "attempt": 0, "pid": 100 + worker,
                           "host": "h", "address": "a"}, b"w%d" % worker)
    # worker 0 heartbeats at the default rate, each beat up to 2 intervals late (a busy
    # worker, a slow loop pass); worker 1 falls silent at 0
    dead_at = None
    step = 0.05
    while now[0] < 30.0:
        now[0] = round(now[0] + step, 3)
        if now[0] % (3 * interval) < step:  # one beat every third interval: two missed in a row
            registry.seen(b"w0")
        dead = registry.dead()
        assert 0 not in dead, f"a worker beating every {3 * interval:.0f}s taken for dead at {now[0]}s"
        if 1 in dead and dead_at is None:
            dead_at = now[0]
    assert dead_at is not None and dead_at <= 5.0, dead_at


def test_a_heartbeat_timeout_under_three_heartbeats_is_refused():
    S.check_heartbeats({S.HEARTBEAT: 1.0, S.HEARTBEAT_TIMEOUT: 4.0})
    with pytest.raises(InvalidTopologyError, match="squall.spark.worker.heartbeat.timeout.secs"):
        S.check_heartbeats({S.HEARTBEAT: 2.0, S.HEARTBEAT_TIMEOUT: 4.0})


def test_heartbeats_are_acknowledged_often_enough_for_the_worker_not_each_one():
    from squall.spark import coordination as co
    from squall.testing import simulated_time

    topology, conf, plan = word_count(2)
    secret = secrets.token_bytes(32)
    with simulated_time() as clock:
        master = TopologyMaster(NAME, topology, conf, plan, sc=NoSpark(), secret=secret)
        try:
            master.registry.launched(0)
            ident = co.identity(NAME, 0, 1, 0, 4242)
            link = co.Link(secret, ident, co.TO_MASTER)
            acks = []
            send = master.links.send
            master.links.send = lambda i, t, **f: (acks.append(clock.monotonic()) if t == co.ACK else None,
                                                   send(i, t, **f))[1]

            def tell(t, **fields):
                master._handle(ident, link.seal(t, worker=0, launch=1, **fields))
            tell(co.REGISTER, attempt=0, pid=4242, host="h", address="tcp://127.0.0.1:1", nonce=b"n" * 8)
            tell(co.STARTED, error=None)
            beats = 60
            for _ in range(beats):  # one a second, as a worker beats by default
                clock.advance(1.0)
                tell(co.HEARTBEAT, metrics=[], errors=[], stuck=[], samples=[])
        finally:
            master.links.close()
    timeout = float(S.setting(conf, S.MASTER_TIMEOUT))
    # the worker hears from its master well within its timeout (it stops itself otherwise) ...
    gaps = [b - a for a, b in zip([0.0, *acks], acks, strict=False)]
    assert acks and max(gaps) <= timeout / 3, gaps
    # ... without an answer to each of 1,000 workers' heartbeats every second
    assert len(acks) <= beats / 4, len(acks)


class Backlog:
    """The master's socket with a backlog: what workers sent, read in arrival order.

    It stands in for ``WorkerLinks.receive`` only (same contract: at most ``limit`` messages
    a call, ``drained`` says whether the queue was emptied); opening, sealing and everything
    after are the master's own.
    """

    def __init__(self, master: TopologyMaster) -> None:
        self.links = master.links
        self.queue: deque[tuple[bytes, list[bytes]]] = deque()
        self.links.receive = self.receive  # type: ignore[method-assign]

    def receive(self, timeout_ms: int, limit: int | None = None):
        count = 0
        self.links.drained = True
        while self.queue and (limit is None or count < limit):
            count += 1
            yield self.queue.popleft()
        self.links.drained = not self.queue


class Launches:
    """Stands in for the Spark jobs: records what the master cancels and launches."""

    def __init__(self) -> None:
        self.cancelled: list[int] = []
        self.started: list[int] = []

    def start(self, spec) -> None:
        self.started.append(spec.index)

    def cancel(self, index: int, launch: int) -> None:
        self.cancelled.append(index)


def one_pass(master: TopologyMaster) -> None:
    """Run one pass of the master's loop on this thread (the loop thread is never started)."""
    master.calls.post(lambda: setattr(master, "_running", False))
    master._running = True
    master._loop()


def simulated_workers(master: TopologyMaster, backlog: Backlog, secret: bytes, workers: int):
    """Register and start ``workers`` processes over the backlog; their send functions."""
    from squall.spark import coordination as co

    senders = []
    for i in range(workers):
        master.registry.launched(i)
        ident = co.identity(NAME, i, 1, 0, 1000 + i)
        link = co.Link(secret, ident, co.TO_MASTER)

        def send(t, _i=i, _ident=ident, _link=link, **fields):
            backlog.queue.append((_ident, _link.seal(t, worker=_i, launch=1, **fields)))
        send(co.REGISTER, attempt=0, pid=1000 + i, host="h", address=f"tcp://127.0.0.1:{2000 + i}",
             nonce=b"n" * 8)
        send(co.STARTED, error=None)
        senders.append(send)
    return senders


def test_a_backlogged_master_still_notices_a_silent_worker_within_the_timeout():
    from squall.spark import coordination as co
    from squall.testing import simulated_time

    workers, silent, cost = 600, 7, 0.01
    topology, conf, plan = word_count(workers)
    timeout = float(S.setting(conf, S.HEARTBEAT_TIMEOUT))
    secret = secrets.token_bytes(32)
    with simulated_time() as clock:
        master = TopologyMaster(NAME, topology, conf, plan, sc=NoSpark(), secret=secret)
        master.registry.clock = clock.monotonic
        master.jobs = launches = Launches()  # type: ignore[assignment]
        observe = master.liveness.observe

        def costly(*args):  # each heartbeat costs 10 ms of the loop: 6 s of work a second
            clock.advance(cost)
            observe(*args)
        master.liveness.observe = costly  # type: ignore[method-assign]
        backlog = Backlog(master)
        try:
            senders = simulated_workers(master, backlog, secret, workers)
            while backlog.queue:
                one_pass(master)
            assert not master._starting
            due = [clock.monotonic()] * workers
            last_beat = noticed = None
            while clock.monotonic() < 30.0 and noticed is None:
                now = clock.monotonic()
                for i, send in enumerate(senders):
                    while due[i] <= now:  # every beat due since the last pass, as workers send them
                        if i != silent or due[i] < 1.0:
                            send(co.HEARTBEAT, metrics=[], errors=[], stuck=[], samples=[])
                            last_beat = due[i] if i == silent else last_beat
                        due[i] += 1.0
                one_pass(master)
                clock.advance(0.02)  # the loop's poll
                dead = set(launches.cancelled)
                assert dead <= {silent}, f"beating workers {sorted(dead - {silent})} taken for dead"
                if silent in dead:
                    noticed = clock.monotonic() - last_beat
        finally:
            master.links.close()
    # noticed within the timeout and one loop pass, however far behind its heartbeats are
    assert noticed is not None and noticed <= timeout + 1.0, noticed


def test_calls_to_the_loop_wait_for_one_slice_of_heartbeats_not_for_the_backlog():
    from squall.spark import coordination as co
    from squall.spark import master as master_module
    from squall.testing import simulated_time

    workers, cost = 600, 0.001
    topology, conf, plan = word_count(workers)
    secret = secrets.token_bytes(32)
    with simulated_time() as clock:
        master = TopologyMaster(NAME, topology, conf, plan, sc=NoSpark(), secret=secret)
        master.registry.clock = clock.monotonic
        master.jobs = Launches()  # type: ignore[assignment]
        observed = []

        def costly(worker, pid, metrics):  # 1 ms of the loop per heartbeat
            clock.advance(cost)
            observed.append(worker)
        master.liveness.observe = costly  # type: ignore[method-assign]
        backlog = Backlog(master)
        try:
            senders = simulated_workers(master, backlog, secret, workers)
            while backlog.queue:
                one_pass(master)
            for send in senders:  # a backlog of one heartbeat per worker: 0.6 s of handling
                send(co.HEARTBEAT, metrics=[], errors=[], stuck=[], samples=[])
            start = clock.monotonic()
            ran = master.calls.post(lambda: (len(observed), clock.monotonic() - start))
            one_pass(master)
            assert ran.done()
            handled, waited = ran.result()
            assert handled < workers, handled
            # the call waited for one slice of heartbeats, not for all of them
            assert waited <= getattr(master_module, "BEATS_SLICE", 0.2) + cost, (handled, waited)
            while getattr(master, "_beats", None) or backlog.queue:
                one_pass(master)
            assert sorted(observed) == list(range(workers))  # and every heartbeat was handled
        finally:
            master.links.close()


def test_a_superseded_heartbeat_keeps_its_errors_and_no_control_reply_is_dropped():
    from squall.spark import coordination as co
    from squall.testing import simulated_time

    workers, beats = 20, 5
    topology, conf, plan = word_count(workers)
    secret = secrets.token_bytes(32)
    with simulated_time() as clock:
        master = TopologyMaster(NAME, topology, conf, plan, sc=NoSpark(), secret=secret)
        master.registry.clock = clock.monotonic
        master.jobs = Launches()  # type: ignore[assignment]
        observed: dict[int, list] = {}
        master.liveness.observe = lambda w, pid, m: observed.setdefault(w, []).append(m)  # type: ignore[method-assign]
        backlog = Backlog(master)
        try:
            senders = simulated_workers(master, backlog, secret, workers)
            while backlog.queue:
                one_pass(master)
            for beat in range(beats):  # the loop was away: five heartbeats of each worker wait
                for i, send in enumerate(senders):
                    error = {"task": i, "time": beat, "error": f"error {beat} of worker {i}"}
                    send(co.HEARTBEAT, metrics=[{"task": i, "emitted": beat}], errors=[error],
                         stuck=[], samples=[])
                    if beat == 2:
                        send(co.APPLIED, seq=1)
            while backlog.queue or getattr(master, "_beats", None):
                one_pass(master)
            # one heartbeat handled per worker: its latest; the older ones are superseded ...
            assert {w: [m[0]["emitted"] for m in ms] for w, ms in observed.items()} == {
                i: [beats - 1] for i in range(workers)}
            # ... but none of their errors is lost, and every control reply was taken
            assert len(master.errors) == workers * beats
            assert [inc.applied for inc in master.registry.current()] == [1] * workers
        finally:
            master.links.close()


class CountingSlots(list):
    """A registry's slot list that counts the slots its iterations hand out."""

    handed = 0

    def __iter__(self):
        for slot in super().__iter__():
            CountingSlots.handed += 1
            yield slot


def test_a_start_of_n_workers_checks_the_slots_a_linear_number_of_times():
    """Each ``started`` message used to check every slot for the end of the start: N x N slot
    reads at a start (0.6 s of the master's CPU at 1,000 workers); the check now waits for N
    reports. A worker relaunched during the start still holds it open."""
    workers = 300
    topology, conf, plan = word_count(workers)
    secret = secrets.token_bytes(32)
    master = TopologyMaster(NAME, topology, conf, plan, sc=NoSpark(), secret=secret)
    master.jobs = Launches()  # type: ignore[assignment]
    backlog = Backlog(master)
    master.registry.slots = CountingSlots(master.registry.slots)
    try:
        CountingSlots.handed = 0
        simulated_workers(master, backlog, secret, workers)
        while backlog.queue:
            one_pass(master)
        assert not master._starting
        # each welcome carries the addresses and nonces of every worker registered so far (the
        # data a worker needs: 2 reads per registered slot); beyond them, a linear number
        welcomes = 2 * workers * (workers + 1)
        assert CountingSlots.handed <= welcomes + 20 * workers, CountingSlots.handed - welcomes
    finally:
        master.links.close()
