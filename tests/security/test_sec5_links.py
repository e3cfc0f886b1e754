"""Security item 5: worker links and the master's coordination link cannot be forged,
replayed or redirected.

Real ZeroMQ sockets on loopback, a real ``TopologyMaster`` loop (no Spark needed for the
coordination protocol: its ROUTER socket and registration code run as on the driver).
"""

from __future__ import annotations

import os
import socket
import time

import msgpack
import pytest
import zmq

from squall import Fields, Spout, TopologyBuilder
from squall.runtime.plan import make_plan
from squall.runtime.serialization import MAX_FRAME_BYTES
from squall.runtime.submission import prepare_conf, prepare_topology
from squall.spark import coordination as co
from squall.spark.master import TopologyMaster
from squall.spark.transport import LINK_BYTES, ZmqTransport
from squall.spark.worker_main import WorkerSpec, _MasterLink

SECRET = b"t" * 32


@pytest.fixture
def ctx():
    c = zmq.Context()
    yield c
    c.destroy(linger=0)


def pump(t: ZmqTransport, timeout: float = 1.0, want: int | None = None) -> list[bytes]:
    got: list[bytes] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and (want is None or len(got) < want):
        t.wait(0.02)
        got.extend(t.poll(100))
    return got


def link(*transports: ZmqTransport) -> None:
    addresses = {t.index: t.address for t in transports}
    nonces = {t.index: t.nonce for t in transports}
    for t in transports:
        t.set_peers(addresses, nonces)


def capture(ctx, sender: ZmqTransport, receiver: ZmqTransport, frame: bytes) -> list[bytes]:
    """What ``sender`` puts on the wire for ``receiver``: a tap listens at a fake address."""
    tap = ctx.socket(zmq.PULL)
    port = tap.bind_to_random_port("tcp://127.0.0.1")
    sender.set_peers({receiver.index: f"tcp://127.0.0.1:{port}"}, {receiver.index: receiver.nonce})
    deadline = time.monotonic() + 5
    while not sender.send(receiver.index, frame):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert tap.poll(5000)
    parts = tap.recv_multipart()
    tap.close(linger=0)
    return parts


def inject(ctx, target: ZmqTransport, parts: list[bytes], times: int = 1) -> None:
    push = ctx.socket(zmq.PUSH)
    push.connect(target.address)
    for _ in range(times):
        push.send_multipart(parts)
    push.close(linger=2000)


def test_sec5_transport_without_a_secret_is_refused(ctx):
    with pytest.raises(ValueError, match="secret"):
        ZmqTransport(ctx)
    with pytest.raises(ValueError, match="index"):
        ZmqTransport(ctx, secret=SECRET)


def test_sec5_receive_socket_caps_message_size(ctx):
    t = ZmqTransport(ctx, secret=SECRET, index=0)
    limit = t._pull.getsockopt(zmq.MAXMSGSIZE)
    assert MAX_FRAME_BYTES < limit <= MAX_FRAME_BYTES + 64 + LINK_BYTES
    t.close()


def test_sec5_captured_frame_cannot_be_replayed(ctx):
    a, b = ZmqTransport(ctx, secret=SECRET, index=0), ZmqTransport(ctx, secret=SECRET, index=1)
    link(a, b)
    parts = capture(ctx, a, b, b"tuple batch")
    inject(ctx, b, parts, times=3)  # delivered once, then replayed twice
    assert pump(b, 1.5) == [b"tuple batch"]
    assert b.rejected_frames == 2
    # the link goes on: the next real frame is taken
    link(a, b)
    deadline = time.monotonic() + 5
    while not a.send(1, b"next"):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert pump(b, 3, want=1) == [b"next"]


def test_sec5_captured_frame_cannot_be_redirected(ctx):
    a, b, c = (ZmqTransport(ctx, secret=SECRET, index=i) for i in range(3))
    link(a, b, c)
    parts = capture(ctx, a, b, b"for b only")
    inject(ctx, c, parts)  # another worker of the same topology
    assert pump(c, 1.0) == []
    assert c.rejected_frames == 1
    b2 = ZmqTransport(ctx, secret=SECRET, index=1)  # b's next process
    link(a, b2, c)
    inject(ctx, b2, parts)
    assert pump(b2, 1.0) == []
    assert b2.rejected_frames == 1


def test_sec5_frames_of_an_earlier_sender_process_are_refused(ctx):
    a, b = ZmqTransport(ctx, secret=SECRET, index=0), ZmqTransport(ctx, secret=SECRET, index=1)
    link(a, b)
    pump(b, 0.1)  # b runs meanwhile: it knows a's process
    old = capture(ctx, a, b, b"from the old a")
    a2 = ZmqTransport(ctx, secret=SECRET, index=0)
    link(a2, b)
    inject(ctx, b, old)
    assert pump(b, 1.0) == []
    assert b.rejected_frames == 1


def test_sec5_a_new_sender_is_held_until_the_map_arrives(ctx):
    """No loss on recovery: frames of a restarted peer wait for its nonce in the map."""
    a, b = ZmqTransport(ctx, secret=SECRET, index=0), ZmqTransport(ctx, secret=SECRET, index=1)
    link(a, b)
    a2 = ZmqTransport(ctx, secret=SECRET, index=0)
    a2.set_peers({1: b.address}, {1: b.nonce})  # a2 has its welcome; b not yet the new map
    deadline = time.monotonic() + 5
    sent = 0
    while sent < 3:
        if a2.send(1, f"f{sent}".encode()):
            sent += 1
        assert time.monotonic() < deadline
    assert pump(b, 1.0) == []
    link(a2, b)
    assert pump(b, 3, want=3) == [b"f0", b"f1", b"f2"]
    assert b.rejected_frames == 0


# ---- the coordination link ------------------------------------------------------------


class _Spout(Spout):
    def next_tuple(self):
        pass

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("x"))


@pytest.fixture
def master():
    b = TopologyBuilder()
    b.set_spout("s", _Spout(), parallelism=2)
    topology = b.create_topology()
    conf = prepare_conf({"topology.workers": 2}, topology)
    plan = make_plan(prepare_topology(topology), conf)
    m = TopologyMaster("wc", topology, conf, plan, sc=None, secret=SECRET)
    m._thread.start()  # the loop only: no workers are launched
    yield m
    m._running = False
    m._thread.join(5)
    m._close()


def dealer(ctx, master, ident: bytes) -> zmq.Socket:
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.IDENTITY, ident)
    s.setsockopt(zmq.LINGER, 0)
    s.connect(master.address)
    return s


def answer(sock, timeout: float = 1.5) -> list[bytes] | None:
    return sock.recv_multipart() if sock.poll(int(timeout * 1000)) else None


def registration(worker: int, launch: int, ident: bytes, secret: bytes = SECRET,
                 address: str = "tcp://127.0.0.1:5999") -> tuple[co.Link, list[bytes]]:
    lk = co.Link(secret, ident, co.TO_MASTER)
    return lk, lk.seal(co.REGISTER, worker=worker, launch=launch, attempt=0, pid=os.getpid(),
                       host=socket.gethostname(), address=address, nonce=b"n" * 8)


def test_sec5_registration_needs_the_secret_and_is_bound_to_its_fields(ctx, master):
    master.calls.call(lambda: master.registry.launched(0))  # launch 1 of worker 0 is expected
    ident = co.identity("wc", 0, 1, 0, os.getpid())
    # without the secret: never answered, never registered
    sock = dealer(ctx, master, ident)
    _, parts = registration(0, 1, ident, secret=b"x" * 32)
    sock.send_multipart(parts)
    assert answer(sock) is None
    # the proof of another worker index: refused
    other = co.identity("wc", 1, 1, 0, os.getpid())
    _, parts = registration(0, 1, other)
    s2 = dealer(ctx, master, other)
    s2.send_multipart(parts)
    reply = answer(s2)
    assert reply is not None and co.Link(SECRET, other, co.TO_WORKER).open(reply) is None
    assert msgpack.unpackb(reply[1], strict_map_key=False)["t"] == co.REJECT
    # a captured proof with another address: the tag no longer matches
    lk, parts = registration(0, 1, ident)
    forged = msgpack.unpackb(parts[1], raw=False, strict_map_key=False)
    forged["address"] = "tcp://10.6.6.6:1"
    sock.send_multipart([parts[0], msgpack.packb(forged, use_bin_type=True)])
    assert answer(sock) is None
    # the real registration is welcomed, with the peers' nonces
    sock.send_multipart(parts)
    reply = answer(sock)
    mine = co.Link(SECRET, ident, co.TO_MASTER)
    welcome = mine.open(reply)
    assert welcome["t"] == co.WELCOME and welcome["nonces"] == {0: b"n" * 8}
    assert master.calls.call(lambda: master.registry.slots[0].current is not None)
    # and replaying it gets nothing
    sock.send_multipart(parts)
    assert answer(sock) is None
    sock.close(linger=0)
    s2.close(linger=0)


def test_sec5_worker_obeys_only_its_master(ctx):
    router = ctx.socket(zmq.ROUTER)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    spec = WorkerSpec(topology_name="wc", topology=None, conf={}, plan=None, index=0, launch=1,
                      master_address=f"tcp://127.0.0.1:{port}", secret=SECRET)
    worker = _MasterLink(ctx, spec, 0, "tcp://127.0.0.1:1", b"n" * 8)
    worker.send(co.HEARTBEAT)
    assert router.poll(5000)
    ident = router.recv_multipart()[0]
    master = co.Link(SECRET, ident, co.TO_WORKER)
    router.send_multipart([ident, co.encode(co.STOP, graceful=False)])  # unsealed
    router.send_multipart([ident, *co.Link(b"x" * 32, ident, co.TO_WORKER).seal(co.STOP)])
    assert worker.recv(1.0) is None
    stop = master.seal(co.DEACTIVATE, seq=1)
    router.send_multipart([ident, *stop])
    assert worker.recv(2.0)["t"] == co.DEACTIVATE
    router.send_multipart([ident, *stop])  # replayed
    assert worker.recv(1.0) is None
    coordination_limit = worker.sock.getsockopt(zmq.MAXMSGSIZE)
    assert 0 < coordination_limit <= co.MAX_MESSAGE_BYTES
    worker.close()
    router.close(linger=0)
