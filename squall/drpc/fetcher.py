"""The remote ``DRPCSpout``'s network side: a thread that talks to the DRPC servers.

It long-polls the servers for requests (keeping at most one fetched request waiting for
the spout, and none while the spout is inactive) and sends the spout's request failures,
so that ``next_tuple`` and ``fail`` never wait on the network. A server that cannot be
reached is retried after 1, 2, 4 ... 30 s; the outage is reported once, through
``report`` (which hands it to the task's thread).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from squall.drpc.client import DRPCInvocationsClient
from squall.drpc.errors import DRPCExecutionError

log = logging.getLogger("squall.drpc")
MAX_BACKOFF_SECS = 30.0
FAIL_RETRIES = 3
LONG_POLL_SECS = 0.5


class Fetcher:
    """Fetches requests of ``function`` from ``clients`` on a thread of its own."""

    def __init__(self, function: str, clients: list[DRPCInvocationsClient], name: str,
                 report: Callable[[BaseException], None], wake: Callable[[], None]) -> None:
        self.function = function
        self.clients = clients
        self.ready: deque[tuple[str, Any, int]] = deque()  # (request id, args, server index)
        self.active = threading.Event()
        self._fails: queue.SimpleQueue[tuple[str, int, str]] = queue.SimpleQueue()
        self._report = report
        self._wake = wake
        self._stop = threading.Event()
        self._retry_at = [0.0] * len(clients)
        self._backoff = [0.0] * len(clients)
        self._next = 0
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        """Start the thread."""
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread (a long poll in progress ends within ``LONG_POLL_SECS``)."""
        self._stop.set()

    def fail(self, request_id: str, server: int, reason: str) -> None:
        """Fail ``request_id`` on server ``server`` (sent by the thread)."""
        self._fails.put((request_id, server, reason))

    # ---- the thread --------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            self._send_fails()
            if not self.active.is_set() or self.ready:
                self._stop.wait(0.005)
                continue
            if not self._fetch_once():
                self._stop.wait(0.05)  # every server is backing off

    def _fetch_once(self) -> bool:
        """Poll the next server not backing off; False when none may be polled now."""
        now = time.monotonic()
        n = len(self.clients)
        for k in range(n):
            i = (self._next + k) % n
            if now < self._retry_at[i]:
                continue
            self._next = i + 1
            try:
                got = self.clients[i].fetch_request(self.function, wait=LONG_POLL_SECS / n)
            except (DRPCExecutionError, PermissionError) as e:
                self._unreachable(i, e)
                return True
            self._backoff[i] = 0.0
            if got is not None:
                self.ready.append((got[0], got[1], i))
                self._wake()
            return True
        return False

    def _unreachable(self, i: int, error: BaseException) -> None:
        if self._backoff[i] == 0.0:  # report an outage once, not every poll
            self._report(error)
        self._backoff[i] = min(MAX_BACKOFF_SECS, max(1.0, self._backoff[i] * 2))
        self._retry_at[i] = time.monotonic() + self._backoff[i]

    def _send_fails(self) -> None:
        while True:
            try:
                rid, i, reason = self._fails.get_nowait()
            except queue.Empty:
                return
            for attempt in range(FAIL_RETRIES):
                try:
                    self.clients[i].fail_request(rid, reason)
                    break
                except (DRPCExecutionError, PermissionError) as e:
                    if attempt == FAIL_RETRIES - 1:
                        self._report(e)
