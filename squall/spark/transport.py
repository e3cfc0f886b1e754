"""``ZmqTransport``: the worker-to-worker ``Transport`` over ZeroMQ.

Each worker binds one PULL socket on a random port of the bind host and keeps one PUSH
socket per peer. Frames are the worker's already-batched frames, sent with NOBLOCK:
``send`` returns False when the peer's queue (SNDHWM frames) is full or the peer is not
connected, and the worker keeps the frame and throttles its spouts. Frames queued to a
peer that dies are dropped when its new address arrives; the ackers' timeouts replay
their tuples.

Authentication (every worker of a topology has its ``secret``, handed out by its master):
frames carry pickles, so a frame accepted from anyone could run code in the worker. Each
frame travels as two parts, a link header with a keyed BLAKE2b tag, and the frame::

    sender index, receiver index, sender nonce, receiver nonce, sequence number | tag

The nonces are random per transport (per worker process) and reach the peers through the
master's address map (``set_peers``). A receiver takes a frame only if the tag is right,
it is the receiver named (index and nonce: a frame captured on one link cannot be
redirected to another worker, nor to a later process of the same one), the sender's
nonce is the current one of that worker, and the sequence number is above the last one
taken on that link (a captured frame cannot be replayed). A sequence number more than one
above the last is a gap: frames of a live link were lost, and the worker is told
(``on_loss``: in exactly-once mode its tasks fail their next PREPARE, since no acker
timeout replays untracked data). A frame from a sender whose
nonce this worker has not learnt yet (it just restarted and the map is on its way) is
held, a bounded number of them, until the map arrives. Everything else is dropped and
counted in ``rejected_frames``. The tag authenticates; it does not encrypt (bind to
trusted networks). ``zmq.MAXMSGSIZE`` caps what the receive socket accepts at the
largest frame plus the header: a peer sending more is disconnected by ZeroMQ.

Without a secret (``insecure=True``, for tests of the transport itself) frames travel
bare; a transport without a secret is refused otherwise.

Threading: ``send``, ``poll``, ``wait`` and ``close`` belong to the worker's loop thread
(ZeroMQ sockets are not thread-safe). ``wake`` and ``set_peers`` may be called from any
thread: the new address map is applied by the loop thread on its next call.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import logging
import math
import os
import secrets as random
import socket
import struct
import threading
from collections import deque
from typing import Any

import zmq

from squall.runtime.serialization import HEADER as FRAME_HEADER
from squall.runtime.serialization import MAX_FRAME_BYTES
from squall.spark.ports import bind_zmq
from squall.spark.settings import WORKER_PORT as WORKER_PORT_KEY

_wake_ids = itertools.count()
log = logging.getLogger("squall.spark.transport")
TAG_BYTES = 16
NONCE_BYTES = 8
LINK = struct.Struct("<II8s8sQ")  # sender, receiver, sender nonce, receiver nonce, sequence
LINK_BYTES = LINK.size + TAG_BYTES
MAX_MESSAGE_BYTES = MAX_FRAME_BYTES + FRAME_HEADER.size + LINK_BYTES  # zmq.MAXMSGSIZE
HELD_FRAMES = 256  # frames of not-yet-known senders kept until the address map arrives


def frame_tag(secret: bytes, *parts: bytes) -> bytes:
    """The authentication tag of ``parts`` under ``secret`` (keyed BLAKE2b, 16 bytes)."""
    h = hashlib.blake2b(key=secret[:64], digest_size=TAG_BYTES)
    for part in parts:
        h.update(part)
    return h.digest()


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
                 secret: bytes | None = None, *, index: int | None = None, insecure: bool = False,
                 port: Any = 0) -> None:
        if not secret and not insecure:
            raise ValueError("ZmqTransport needs the topology's secret: frames carry pickles, and "
                             "without it anyone who reaches the port could run code in the worker "
                             "(insecure=True is for tests of the transport only)")
        if secret and index is None:
            raise ValueError("ZmqTransport with a secret needs its worker index (frames are bound to it)")
        self._ctx = context
        self._secret = secret or None
        self.index = index if index is not None else -1
        self.nonce = random.token_bytes(NONCE_BYTES)  # this process's end of every link
        self.rejected_frames = 0
        self.lost_frames = 0  # frames missing on a live link (a gap in its sequence numbers)
        # called with a reason when frames sent to this worker were lost (set by its Transfer)
        self.on_loss: Any = None
        # called with a peer's index when a new process of it replaces the old one (set by
        # its Transfer: what the old one said of its send buffer's pressure no longer holds)
        self.on_peer_reset: Any = None
        self._hwm = max(1, hwm)
        self._pull = context.socket(zmq.PULL)
        self._pull.setsockopt(zmq.RCVHWM, self._hwm)
        self._pull.setsockopt(zmq.LINGER, 0)
        self._pull.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
        bind, advertised = bind_address(bind_host)
        bound = bind_zmq(self._pull, bind, port, WORKER_PORT_KEY)  # squall.spark.ports
        self.address = f"tcp://{advertised}:{bound}"
        self._nonces: dict[int, bytes] = {}  # peer -> its current nonce (from the master's map)
        self._retired: set[bytes] = set()  # nonces of peers' earlier processes
        self._send_seq: dict[int, int] = {}  # peer -> last sequence number sent to it
        self._recv_seq: dict[int, int] = {}  # peer -> last sequence number taken from it
        self._held: deque[tuple[bytes, bytes]] = deque()  # (header, frame) of unknown senders
        self._ready: deque[bytes] = deque()  # held frames released by a new map
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
        self._pending: tuple[dict[int, str], dict[int, bytes]] | None = None
        self._lock = threading.Lock()
        self._closed = False
        self.reconnects = 0

    # ---- any thread ------------------------------------------------------------------

    def set_peers(self, addresses: dict[int, str], nonces: dict[int, bytes] | None = None) -> None:
        """Hand over peers' addresses (worker index -> ``tcp://host:port``) and nonces.

        Merged into what this transport has: a map may name only the peers that changed
        (the master tells every worker of each new process, not the whole map again).
        """
        with self._lock:
            if self._pending is None:
                self._pending = (dict(addresses), dict(nonces or {}))
            else:  # maps not applied yet: the later one wins, peer by peer
                self._pending[0].update(addresses)
                self._pending[1].update(nonces or {})
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
            pending, self._pending = self._pending, None
        if pending is None:
            return
        addresses, nonces = pending
        for peer, nonce in nonces.items():
            peer = int(peer)
            old_nonce = self._nonces.get(peer)
            if old_nonce != nonce:
                if old_nonce is not None:
                    self._retired.add(old_nonce)
                    if self.on_peer_reset is not None:
                        self.on_peer_reset(peer)
                self._nonces[peer] = nonce
                self._send_seq[peer] = 0  # a new link: both ends start over
                self._recv_seq[peer] = 0
        if self._held:
            held, self._held = self._held, deque()
            for header, frame in held:
                self._accept(header, frame)
        for peer, address in addresses.items():
            peer = int(peer)
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
                return True
            nonce = self._nonces.get(peer)
            if nonce is None:
                return False  # its nonce comes with the address map: the worker keeps the frame
            seq = self._send_seq.get(peer, 0) + 1
            header = LINK.pack(self.index, peer, self.nonce, nonce, seq)
            # both parts go or neither: a multipart message is atomic in ZeroMQ
            entry[1].send_multipart([header + frame_tag(self._secret, header, frame), frame],
                                    zmq.NOBLOCK, copy=copy)
            self._send_seq[peer] = seq
        except zmq.Again:
            return False
        return True

    def poll(self, max_frames: int) -> list[bytes]:
        """Take up to ``max_frames`` received frames."""
        if self._pending is not None:
            self._apply_peers()
        out: list[bytes] = []
        ready = self._ready
        while ready and len(out) < max_frames:
            out.append(ready.popleft())
        pull = self._pull
        while len(out) < max_frames:
            # asked first: most rounds find nothing, and a receive that finds nothing raises
            # pyzmq's Again, whose constructor imports (3.6 us a round against 1.6)
            if not pull.get(zmq.EVENTS) & zmq.POLLIN:
                break
            try:
                parts = pull.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                break
            if self._secret is None:
                out.append(parts[-1])
            elif len(parts) != 2 or len(parts[0]) != LINK_BYTES:
                self._reject(f"a message of {len(parts)} part(s) without a link header")
            else:
                header, tag = parts[0][:LINK.size], parts[0][LINK.size:]
                if not hmac.compare_digest(tag, frame_tag(self._secret, header, parts[1])):
                    self._reject("a frame without this topology's secret")
                else:
                    self._accept(header, parts[1])
                    while ready and len(out) < max_frames:
                        out.append(ready.popleft())
        return out

    def _accept(self, header: bytes, frame: bytes) -> None:
        """An authentic frame: ready if it is for this process and new on its link."""
        sender, receiver, sender_nonce, receiver_nonce, seq = LINK.unpack(header)
        if receiver != self.index or receiver_nonce != self.nonce:
            self._reject(f"a frame for worker {receiver} of another process (redirected or stale)")
            return
        current = self._nonces.get(sender)
        if current != sender_nonce:
            if sender_nonce in self._retired:
                self._reject(f"a frame from an earlier process of worker {sender}")
            elif len(self._held) >= HELD_FRAMES:
                self._reject(f"a frame from worker {sender}, whose process is not in the map")
            else:
                self._held.append((header, frame))  # its process is new: the map is coming
            return
        last = self._recv_seq.get(sender, 0)
        if seq <= last:
            self._reject(f"a replayed frame from worker {sender} (sequence {seq})")
            return
        self._recv_seq[sender] = seq
        if seq > last + 1:
            # frames of a live link went missing (ZeroMQ does not promise delivery across its
            # reconnects): in exactly-once mode the tasks here must fail their next PREPARE
            self.lost_frames += seq - last - 1
            if self.on_loss is not None:
                self.on_loss(f"frames {last + 1} to {seq - 1} from worker {sender} never arrived")
        self._ready.append(frame)

    def _reject(self, what: str) -> None:
        self.rejected_frames += 1
        if self.rejected_frames in (1, 10, 100) or self.rejected_frames % 1000 == 0:
            log.warning("dropped %d frame(s); the last: %s", self.rejected_frames, what)

    def wait(self, timeout: float) -> None:
        """Block until a frame or a wake-up arrives, at most ``timeout`` seconds.

        ZeroMQ polls in whole milliseconds: a wait that is not a whole number of them is
        rounded up, not down, or every wait under a millisecond (a spout's progressive
        wait, a timer about to fire) would return at once and the loop would spin.
        """
        events = dict(self._poller.poll(max(0, math.ceil(timeout * 1000))))
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
