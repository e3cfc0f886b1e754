"""ZmqTransport over real loopback sockets: delivery, wake-ups, full peers, re-resolution."""

from __future__ import annotations

import socket
import threading
import time

import pytest
import zmq

from squall.spark.transport import ZmqTransport

pytestmark = pytest.mark.spark


@pytest.fixture
def ctx():
    context = zmq.Context()
    yield context
    context.destroy(linger=0)


def _poll_until(t: ZmqTransport, n: int, timeout: float = 5.0) -> list[bytes]:
    got: list[bytes] = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        t.wait(0.05)
        got.extend(t.poll(64))
    return got


def _send_all(t: ZmqTransport, peer: int, frames: list[bytes], timeout: float = 5.0) -> None:
    """Send ``frames`` in order, retrying a frame the peer cannot take yet (not connected)."""
    sent = 0
    deadline = time.monotonic() + timeout
    while sent < len(frames) and time.monotonic() < deadline:
        if t.send(peer, frames[sent]):
            sent += 1
        else:
            time.sleep(0.01)  # not connected yet: the worker would keep the frame


@pytest.mark.timeout(30)
def test_frames_reach_the_peer_in_order(ctx):
    a, b = ZmqTransport(ctx, insecure=True), ZmqTransport(ctx, insecure=True)
    assert a.address.startswith("tcp://127.0.0.1:")
    a.set_peers({0: a.address, 1: b.address})
    frames = [f"frame-{i}".encode() for i in range(100)]
    _send_all(a, 1, frames)
    assert _poll_until(b, 100) == frames
    a.close()
    b.close()


@pytest.mark.timeout(30)
def test_send_to_unknown_or_absent_peer_returns_false_at_once(ctx):
    a = ZmqTransport(ctx, hwm=4, insecure=True)
    started = time.monotonic()
    assert a.send(5, b"x") is False  # no address yet
    # a port held bound but not listening: connections are refused, and no other socket
    # can take the port meanwhile (a closed transport's port could be reused by one)
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        a.set_peers({1: f"tcp://127.0.0.1:{held.getsockname()[1]}"})
        assert not any(a.send(1, b"x") for _ in range(50))  # nobody listens: never blocks
    assert time.monotonic() - started < 1.0
    a.close()


@pytest.mark.timeout(30)
def test_full_peer_makes_send_return_false_not_block(ctx):
    a, b = ZmqTransport(ctx, hwm=2, insecure=True), ZmqTransport(ctx, hwm=2, insecure=True)
    a.set_peers({1: b.address})
    payload = b"y" * 1_000_000
    results = []
    started = time.monotonic()
    for _ in range(200):
        results.append(a.send(1, payload))
        time.sleep(0.001)
    assert time.monotonic() - started < 5
    assert True in results and False in results  # b never polls: bounded by the HWMs
    a.close()
    b.close()


@pytest.mark.timeout(30)
def test_wake_interrupts_wait(ctx):
    a = ZmqTransport(ctx, insecure=True)
    threading.Timer(0.1, a.wake).start()
    started = time.monotonic()
    a.wait(5.0)
    assert time.monotonic() - started < 2.0
    a.close()


@pytest.mark.timeout(30)
def test_peer_coming_back_elsewhere_is_re_resolved(ctx):
    a, b1 = ZmqTransport(ctx, insecure=True), ZmqTransport(ctx, insecure=True)
    a.set_peers({1: b1.address})
    deadline = time.monotonic() + 5
    while not a.send(1, b"first") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _poll_until(b1, 1) == [b"first"]
    b1.close()
    b2 = ZmqTransport(ctx, insecure=True)
    assert b2.address != b1.address
    a.set_peers({1: b2.address})
    deadline = time.monotonic() + 5
    while not a.send(1, b"second") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _poll_until(b2, 1) == [b"second"]
    assert a.reconnects == 1
    a.close()
    b2.close()


@pytest.mark.timeout(30)
def test_a_new_process_of_a_peer_is_told_to_the_worker_so_its_old_pressure_is_void(ctx):
    a = ZmqTransport(ctx, insecure=True)
    reset: list[int] = []
    a.on_peer_reset = reset.append  # set by the worker's Transfer (its send buffer's pressure)
    a.set_peers({1: "tcp://127.0.0.1:9"}, {1: b"first"})
    a.poll(1)
    assert reset == []  # a first process: nothing to forget
    a.set_peers({}, {1: b"second"})
    a.poll(1)
    assert reset == [1]
    a.close()


@pytest.mark.timeout(30)
def test_a_poll_that_finds_nothing_raises_no_again_and_one_that_finds_frames_takes_them(ctx, monkeypatch):
    """Most rounds find nothing: pyzmq's Again (its constructor imports) is not raised for that."""
    raised = []
    original = zmq.Again.__init__

    def counting(self, *args, **kwargs):
        raised.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(zmq.Again, "__init__", counting)
    a, b = ZmqTransport(ctx, insecure=True), ZmqTransport(ctx, insecure=True)
    a.set_peers({1: b.address})
    for _ in range(10):
        assert b.poll(4) == []
    assert raised == []
    frames = [b"one", b"two", b"three"]
    _send_all(a, 1, frames)
    assert _poll_until(b, 3) == frames
    a.close()
    b.close()
