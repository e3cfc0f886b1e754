"""``ZmqTransport``: the worker-to-worker ``Transport`` over ZeroMQ.

Each worker binds one PULL socket on a random port of the bind host and keeps one PUSH
socket per peer. Frames are the worker's already-batched frames, sent with NOBLOCK:
``send`` returns False when the peer's queue (SNDHWM frames) is full or the peer is not
connected, and the worker keeps the frame and throttles its spouts. Frames queued to a
peer that dies are dropped when its new address arrives; the ackers' timeouts replay
their tuples.

Authentication: with a ``secret`` (the topology's, handed out by its master), every frame
travels as two parts, a keyed BLAKE2b tag of the frame and the frame. A receiver drops
a frame whose tag is missing or wrong and counts it in ``rejected_frames``: workers of
another topology, or anything else that connects to the port, cannot inject tuples.
The tag authenticates; it does not encrypt (bind to trusted networks).

Threading: ``send``, ``poll``, ``wait`` and ``close`` belong to the worker's loop thread
(ZeroMQ sockets are not thread-safe). ``wake`` and ``set_peers`` may be called from any
thread: the new address map is applied by the loop thread on its next call.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import logging
import os
import socket
import threading

import zmq

_wake_ids = itertools.count()
log = logging.getLogger("squall.spark.transport")
TAG_BYTES = 16


def frame_tag(secret: bytes, frame: bytes) -> bytes:
    """The authentication tag of ``frame`` under ``secret`` (keyed BLAKE2b, 16 bytes)."""
    return hashlib.blake2b(frame, key=secret[:64], digest_size=TAG_BYTES).digest()


WILDCARDS = ("0.0.0.0", "*")


def this_host() -> str:
    """The address other hosts reach this process at: Spark's own idea of it, else the hostname's.

    ``SQUALL_ADVERTISE_HOST``, else ``SPARK_LOCAL_IP`` (standalone Workers pass theirs on to
    executors), else ``SPARK_EXECUTOR_POD_IP`` (Kubernetes), else the host name's address.
    """
    for key in ("SQUALL_ADVERTISE_HOST", "SPARK_LOCAL_IP", "SPARK_EXECUTOR_POD_IP"):
        if os.environ.get(key):
            return os.environ[key]
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def bind_address(bind_host: str) -> tuple[str, str]:
    """(address to bind, address to give peers) for a ``*.bind.host`` setting.

    ``auto`` binds and advertises ``this_host()``; ``0.0.0.0`` binds every interface and
    advertises ``this_host()``; any other value is bound and advertised as it is.
    """
    if bind_host == "auto":
        host = this_host()
        return host, host
    if bind_host in WILDCARDS:
        return "*", this_host()
    return bind_host, bind_host


class ZmqTransport:
    """One worker's ZeroMQ link to its peers; implements ``squall.runtime.transport.Transport``."""

    def __init__(self, context: zmq.Context, bind_host: str = "127.0.0.1", hwm: int = 64,
                 secret: bytes | None = None) -> None:
        self._ctx = context
        self._secret = secret or None
        self.rejected_frames = 0
        self._hwm = max(1, hwm)
        self._pull = context.socket(zmq.PULL)
        self._pull.setsockopt(zmq.RCVHWM, self._hwm)
        self._pull.setsockopt(zmq.LINGER, 0)
        bind, advertised = bind_address(bind_host)
        port = self._pull.bind_to_random_port(f"tcp://{bind}")
        self.address = f"tcp://{advertised}:{port}"
        # wait() sleeps in a Poller; wake() pokes it through an inproc pair so it returns
        # at once rather than after its timeout
        name = f"inproc://squall-wake-{os.getpid()}-{next(_wake_ids)}"
        self._wake_rx = context.socket(zmq.PAIR)
        self._wake_rx.bind(name)
        self._wake_tx = context.socket(zmq.PAIR)
        self._wake_tx.setsockopt(zmq.LINGER, 0)
        self._wake_tx.connect(name)
        self._wake_lock = threading.Lock()
        self._poller = zmq.Poller()
        self._poller.register(self._pull, zmq.POLLIN)
        self._poller.register(self._wake_rx, zmq.POLLIN)
        self._peers: dict[int, tuple[str, zmq.Socket]] = {}
        self._pending: dict[int, str] | None = None
        self._lock = threading.Lock()
        self._closed = False
        self.reconnects = 0

    # ---- any thread ------------------------------------------------------------------

    def set_peers(self, addresses: dict[int, str]) -> None:
        """Hand over the peers' addresses (worker index -> ``tcp://host:port``)."""
        with self._lock:
            self._pending = dict(addresses)
        self.wake()

    def wake(self) -> None:
        """Make a ``wait`` in progress return now."""
        with self._wake_lock:
            if self._closed:
                return
            try:
                self._wake_tx.send(b"", zmq.NOBLOCK)
            except zmq.Again:
                pass  # wake-ups already queued: wait() returns anyway

    # ---- the loop thread -------------------------------------------------------------

    def _apply_peers(self) -> None:
        with self._lock:
            addresses, self._pending = self._pending, None
        if addresses is None:
            return
        for peer, address in addresses.items():
            if address == self.address:
                continue
            old = self._peers.get(peer)
            if old is not None and old[0] == address:
                continue
            if old is not None:
                old[1].close(linger=0)  # frames for the dead process go; acker timeouts replay
                self.reconnects += 1
            sock = self._ctx.socket(zmq.PUSH)
            sock.setsockopt(zmq.SNDHWM, self._hwm)
            sock.setsockopt(zmq.LINGER, 0)
            # queue nothing for a peer that is not connected: the frame stays with the
            # worker, which delivers it to the peer's next process if it comes back
            sock.setsockopt(zmq.IMMEDIATE, 1)
            sock.connect(address)
            self._peers[peer] = (address, sock)

    def send(self, peer: int, frame: bytes) -> bool:
        """Queue ``frame`` for ``peer`` without blocking; False when it cannot take it now."""
        if self._pending is not None:
            self._apply_peers()
        entry = self._peers.get(peer)
        if entry is None:
            return False
        copy = len(frame) < 65536
        try:
            if self._secret is None:
                entry[1].send(frame, zmq.NOBLOCK, copy=copy)
            else:  # both parts go or neither: a multipart message is atomic in ZeroMQ
                entry[1].send_multipart([frame_tag(self._secret, frame), frame], zmq.NOBLOCK, copy=copy)
        except zmq.Again:
            return False
        return True

    def poll(self, max_frames: int) -> list[bytes]:
        """Take up to ``max_frames`` received frames."""
        if self._pending is not None:
            self._apply_peers()
        out: list[bytes] = []
        pull = self._pull
        secret = self._secret
        while len(out) < max_frames:
            try:
                parts = pull.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                break
            if secret is None:
                out.append(parts[-1])
            elif len(parts) == 2 and hmac.compare_digest(parts[0], frame_tag(secret, parts[1])):
                out.append(parts[1])
            else:
                self.rejected_frames += 1
                if self.rejected_frames in (1, 10, 100) or self.rejected_frames % 1000 == 0:
                    log.warning("dropped %d frame(s) without this topology's secret (last had %d "
                                "part(s))", self.rejected_frames, len(parts))
        return out

    def wait(self, timeout: float) -> None:
        """Block until a frame or a wake-up arrives, at most ``timeout`` seconds."""
        events = dict(self._poller.poll(max(0, int(timeout * 1000))))
        if self._wake_rx in events:
            try:
                while True:
                    self._wake_rx.recv(zmq.NOBLOCK)
            except zmq.Again:
                pass

    def close(self) -> None:
        """Close every socket (without lingering: unsent frames are replayed by timeouts)."""
        with self._wake_lock:
            self._closed = True
            self._wake_tx.close(linger=0)
        for _, sock in self._peers.values():
            sock.close(linger=0)
        self._peers.clear()
        self._pull.close(linger=0)
        self._wake_rx.close(linger=0)
