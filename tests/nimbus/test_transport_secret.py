"""Workers accept tuples only from workers of their own topology (the per-topology secret).

Each frame carries a keyed BLAKE2b tag of the topology's secret; frames without it, or
with another topology's, are dropped and counted. A worker registers with its master
only with a proof of the secret (tests/security/test_sec5_links.py, against the real master).
"""

from __future__ import annotations

import time

import pytest
import zmq

from squall.spark.transport import ZmqTransport, frame_tag


@pytest.fixture
def ctx():
    c = zmq.Context()
    yield c
    c.destroy(linger=0)


def receive(t: ZmqTransport, n: int, timeout: float = 3.0) -> list[bytes]:
    got: list[bytes] = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        t.wait(0.05)
        got.extend(t.poll(100))
    return got


def send(t: ZmqTransport, peer: int, frame: bytes, timeout: float = 3.0) -> None:
    deadline = time.monotonic() + timeout
    while not t.send(peer, frame):
        assert time.monotonic() < deadline, "the peer never took the frame"
        time.sleep(0.02)


def test_frames_with_the_secret_are_delivered(ctx):
    secret = b"s" * 32
    a, b = ZmqTransport(ctx, secret=secret, index=0), ZmqTransport(ctx, secret=secret, index=1)
    a.set_peers({1: b.address}, {1: b.nonce})
    b.set_peers({0: a.address}, {0: a.nonce})
    send(a, 1, b"frame-1")
    assert receive(b, 1) == [b"frame-1"]
    assert b.rejected_frames == 0
    a.close()
    b.close()


@pytest.mark.parametrize("sender_secret", [None, b"another topology's secret!!!!!!!"])
def test_frames_without_the_secret_are_dropped_and_counted(ctx, sender_secret):
    b = ZmqTransport(ctx, secret=b"s" * 32, index=1)
    intruder = ZmqTransport(ctx, secret=sender_secret, index=0, insecure=sender_secret is None)
    intruder.set_peers({1: b.address}, {1: b.nonce})
    b.set_peers({0: intruder.address}, {0: intruder.nonce})
    for i in range(3):
        send(intruder, 1, f"forged-{i}".encode())
    assert receive(b, 1, timeout=1.0) == []
    assert b.rejected_frames == 3
    # a raw socket sending a tag of the wrong frame is dropped too
    raw = ctx.socket(zmq.PUSH)
    raw.connect(b.address)
    raw.send_multipart([frame_tag(b"s" * 32, b"other"), b"forged"])
    deadline = time.monotonic() + 2
    while b.rejected_frames < 4 and time.monotonic() < deadline:
        b.wait(0.05)
        assert b.poll(10) == []
    assert b.rejected_frames == 4
    raw.close(linger=0)
    intruder.close()
    b.close()
