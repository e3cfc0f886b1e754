"""The topology master's end of the coordination channel: one ZeroMQ ROUTER socket.

``WorkerLinks`` binds the socket, opens what workers send (each process has its own sealed
``coordination.Link``; nothing unauthentic or replayed gets through) and seals what the
master sends them. Threads: used only by the master's loop thread, which owns the socket
(``close`` runs once that thread has ended).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import Any

import zmq

from squall.spark import coordination as co
from squall.spark import settings as S
from squall.spark.ports import bind_zmq
from squall.spark.registry import WorkerRegistry
from squall.spark.settings import setting
from squall.spark.transport import bind_address

log = logging.getLogger("squall.spark.master")
# messages queued unread per worker process: a worker sends about one a second (its heartbeat)
# and a reply per command, and the master reads its whole queue every pass (``master.INTAKE``)
RECEIVE_HWM = 64


class WorkerLinks:
    """The ROUTER socket and the sealed link to each worker process that proved the secret."""

    def __init__(self, name: str, secret: bytes, conf: dict, registry: WorkerRegistry) -> None:
        self.name = name
        self.secret = secret
        self.registry = registry  # whose current workers ``broadcast`` reaches
        self._ctx = zmq.Context()
        self._router = self._ctx.socket(zmq.ROUTER)
        self._router.setsockopt(zmq.LINGER, 0)
        self._router.setsockopt(zmq.MAXMSGSIZE, co.MAX_MESSAGE_BYTES)
        # per worker process: past it ZeroMQ stops reading that connection (the worker's own
        # queue holds the rest), so what waits unread here is bounded by the number of workers
        self._router.setsockopt(zmq.RCVHWM, RECEIVE_HWM)
        self._links: dict[bytes, co.Link] = {}  # worker process identity -> its sealed link
        self.drained = True  # whether the last ``receive`` emptied the queue
        bind, host = bind_address(str(setting(conf, S.MASTER_BIND_HOST)))
        port = bind_zmq(self._router, bind, setting(conf, S.MASTER_PORT), S.MASTER_PORT)
        self.address = f"tcp://{host}:{port}"

    def receive(self, timeout_ms: int, limit: int | None = None) -> Iterator[tuple[bytes, list[bytes]]]:
        """Wait up to ``timeout_ms`` for messages; yield each queued one as (identity, frames).

        At most ``limit`` of them; ``drained`` says afterwards whether the queue was emptied.
        """
        self.drained = True
        if not self._router.poll(timeout_ms):
            return
        count = 0
        while limit is None or count < limit:
            try:
                parts = self._router.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            count += 1
            yield parts[0], parts[1:]
        self.drained = False

    def open(self, ident: bytes, parts: list[bytes]) -> dict | None:
        """The message ``parts`` from ``ident``, or None (logged) if not authentic or replayed."""
        link = self._links.get(ident) or co.Link(self.secret, ident, co.TO_WORKER)
        msg = link.open(parts)
        if msg is None:
            # without the topology's secret, a replay, or malformed: never answered
            log.warning("topology master %r dropped a message from %r that is not authentic or "
                        "was replayed", self.name, ident[:80])
            return None
        self._links[ident] = link
        return msg

    def is_heartbeat(self, ident: bytes, parts: list[bytes]) -> bool:
        """Whether ``parts`` looks like a heartbeat on a known link (its tail; nothing checked yet)."""
        return len(parts) == 2 and parts[1].endswith(co.HEARTBEAT_TAIL) and ident in self._links

    def scan_heartbeat(self, ident: bytes, parts: list[bytes]) -> tuple[list, list] | None:
        """Its errors and samples if an authentic new heartbeat (``Link.scan_heartbeat``).

        None (logged) if it is not one.
        """
        got = self._links[ident].scan_heartbeat(parts)
        if got is None:
            log.warning("topology master %r dropped a heartbeat from %r that is not authentic or "
                        "was replayed", self.name, ident[:80])
        return got

    def send(self, ident: bytes, t: str, **fields: Any) -> None:
        """Seal and send message ``t`` to one worker process; never blocks (a full queue is logged)."""
        link = self._links.get(ident)
        if link is None:
            return  # a process that never sent an authentic message is never answered
        try:
            self._router.send_multipart([ident, *link.seal(t, **fields)], zmq.NOBLOCK)
        except zmq.Again:
            log.warning("topology master %r could not send %s to %r", self.name, t, ident)

    def broadcast(self, t: str, **fields: Any) -> None:
        """Send message ``t`` to every current worker."""
        for inc in self.registry.current():
            self.send(inc.identity, t, **fields)

    def broadcast_addresses(self, workers: Iterable[int] | None = None) -> None:
        """Tell every current worker the addresses and nonces of ``workers`` (None: all) but its own.

        Workers merge a map into theirs (``ZmqTransport.set_peers``): naming only the workers
        that changed keeps a change to N small messages (the whole map to every worker is N x N).
        """
        addresses, nonces = self.registry.addresses(), self.registry.nonces()
        if workers is not None:
            wanted = set(workers)
            addresses = {i: a for i, a in addresses.items() if i in wanted}
            nonces = {i: n for i, n in nonces.items() if i in wanted}
        for inc in self.registry.current():
            if inc.worker in addresses:  # its own entry: it knows it (its welcome has the rest)
                mine = {i: a for i, a in addresses.items() if i != inc.worker}
                if not mine:
                    continue
                self.send(inc.identity, co.ADDRESSES, addresses=mine,
                          nonces={i: n for i, n in nonces.items() if i != inc.worker})
            else:
                self.send(inc.identity, co.ADDRESSES, addresses=addresses, nonces=nonces)

    def close(self) -> None:
        """Close the socket (idempotent)."""
        if self._router.closed:
            return
        self._router.close(linger=0)
        self._ctx.term()
