"""A frame lost on a live ZeroMQ link is a gap in the link's sequence numbers: the receiving
transport tells its worker (``on_loss``), so exactly-once tasks fail their next PREPARE
(RELIABILITY E23; the LocalCluster side is tests/integration/test_exactly_once.py)."""

from __future__ import annotations

import time

import pytest
import zmq

from squall.spark.transport import ZmqTransport

SECRET = b"s" * 32


@pytest.fixture
def ctx():
    context = zmq.Context()
    yield context
    context.destroy(linger=0)


def send(a: ZmqTransport, frame: bytes) -> None:
    deadline = time.monotonic() + 5
    while not a.send(1, frame):
        assert time.monotonic() < deadline, "the peer never connected"
        time.sleep(0.01)


def take(b: ZmqTransport, n: int) -> list[bytes]:
    got: list[bytes] = []
    deadline = time.monotonic() + 5
    while len(got) < n and time.monotonic() < deadline:
        b.wait(0.05)
        got.extend(b.poll(8))
    return got


@pytest.mark.timeout(30)
def test_a_sequence_gap_on_a_live_link_is_reported_once(ctx):
    a, b = ZmqTransport(ctx, secret=SECRET, index=0), ZmqTransport(ctx, secret=SECRET, index=1)
    a.set_peers({1: b.address}, {1: b.nonce})
    b.set_peers({0: a.address}, {0: a.nonce})
    losses: list[str] = []
    b.on_loss = losses.append
    send(a, b"one")
    assert take(b, 1) == [b"one"] and losses == []
    a._send_seq[1] += 2  # two frames sent after "one" never arrive
    send(a, b"four")
    send(a, b"five")
    assert take(b, 2) == [b"four", b"five"]
    assert losses == ["frames 2 to 3 from worker 0 never arrived"] and b.lost_frames == 2
    a.close()
    b.close()
