"""The topology master's control plane at scale (issue 37): confirmations and failure detection.

The master is the real one, against ``benchmarks.scale_sim``'s simulated workers (the real
sealed coordination protocol); only launching them as Spark jobs is replaced.
"""

from __future__ import annotations

import secrets
import threading

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


def test_calls_to_the_loop_run_between_batches_of_messages_not_after_the_whole_backlog():
    import time

    import zmq

    topology, conf, plan = word_count(2)
    master = TopologyMaster(NAME, topology, conf, plan, sc=NoSpark())
    handled = []
    release = threading.Event()

    def handle(ident, parts):  # stands for the real handling; the first one waits
        handled.append(ident)
        if len(handled) == 1:
            release.wait(30)
    master._handle = handle
    ctx = zmq.Context()
    dealer = ctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.SNDHWM, 0)
    dealer.connect(master.address)
    master._thread.start()
    try:
        dealer.send_multipart([b"x", b"first"])
        assert wait_for(lambda: len(handled) == 1, 10)
        backlog = 5000
        for _ in range(backlog):  # a backlog builds up while the loop is busy
            dealer.send_multipart([b"x", b"beat"])
        time.sleep(1.0)  # queued on the master's socket
        ran_after = master.calls.post(lambda: len(handled))
        release.set()
        # the call ran after a bounded batch, not after the whole backlog (its wait grows with N)
        assert ran_after.result(30) <= 1 + 1000, ran_after.result()
        assert wait_for(lambda: len(handled) == 1 + backlog, 30)  # and every message was handled
    finally:
        release.set()
        master._running = False
        master._thread.join(5)
        master.links.close()
        dealer.close(0)
        ctx.term()
