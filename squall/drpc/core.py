"""The DRPC service (Storm's ``DRPC`` daemon core): queues of requests per function.

``execute`` queues a request and blocks until the topology returns its result, fails it,
or ``drpc.request.timeout.secs`` pass on the runtime's clock (so simulated time drives
timeouts in tests). The topology's ``DRPCSpout`` takes requests with ``fetch_request``
and answers with ``return_result`` or ``fail_request``. Thread-safe.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from dataclasses import dataclass, field

from squall.drpc.errors import (
    FAILED_REQUEST,
    SERVER_SHUTDOWN,
    SERVER_TIMEOUT,
    DRPCExecutionError,
)
from squall.runtime import clock

TIMEOUT_KEY = "drpc.request.timeout.secs"
DEFAULT_TIMEOUT_SECS = 600.0
_POLL_SECS = 0.05  # how often a waiting execute looks at the (possibly simulated) clock


@dataclass
class _Request:
    id: str
    function: str
    args: str
    deadline: float
    timeout: float
    done: threading.Event = field(default_factory=threading.Event)
    fetched: bool = False
    result: str | None = None
    error: DRPCExecutionError | None = None


class DRPC:
    """Outstanding requests by function, and their results."""

    def __init__(self, timeout_secs: float = DEFAULT_TIMEOUT_SECS) -> None:
        self.timeout_secs = float(timeout_secs)
        self._timeouts: dict[str, float] = {}
        self._queues: dict[str, deque[_Request]] = {}
        self._requests: dict[str, _Request] = {}
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)  # a request was queued
        self._ids = itertools.count(1)
        self._closed = False
        self._sim: clock.SimulatedClock | None = None

    def set_function_timeout(self, function: str, secs: float) -> None:
        """Time out requests of ``function`` after ``secs`` (a topology's own setting)."""
        with self._lock:
            self._timeouts[function] = float(secs)

    def execute(self, function: str, args: str, timeout: float | None = None) -> str:
        """Run ``function(args)`` through the topology serving it; blocks for the result.

        Raises ``DRPCExecutionError`` when the request fails, times out (the server's
        timeout, or ``timeout`` when shorter), or the service shuts down.
        """
        req = self.submit(function, args, timeout)
        try:
            while not req.done.wait(_POLL_SECS):
                if clock.monotonic() >= req.deadline:
                    self._time_out(req)
            if req.error is not None:
                raise req.error
            assert req.result is not None
            return req.result
        finally:
            self._forget(req)

    def submit(self, function: str, args: str, timeout: float | None = None) -> _Request:
        """Queue a request (``execute`` without the wait)."""
        if not isinstance(function, str) or not function:
            raise ValueError(f"a DRPC function name must be a non-empty string, got {function!r}")
        with self._lock:
            if self._closed:
                raise DRPCExecutionError("the DRPC server is shutting down", SERVER_SHUTDOWN)
            secs = self._timeout_of(function, timeout)
            req = _Request(str(next(self._ids)), function, args, clock.monotonic() + secs, secs)
            sim = clock.simulated()
            if sim is not None and sim is not self._sim:
                # simulated time: the advancing thread times requests out before it returns
                sim.add_listener(self.expire_due)
                self._sim = sim
            self._requests[req.id] = req
            self._queues.setdefault(function, deque()).append(req)
            self._arrived.notify_all()
        return req

    def _timeout_of(self, function: str, timeout: float | None) -> float:
        secs = self._timeouts.get(function, self.timeout_secs)
        return secs if timeout is None else min(secs, float(timeout))

    def fetch_request(self, function: str, wait: float = 0.0) -> tuple[str, str] | None:
        """The oldest queued request of ``function`` as (id, args), or None.

        ``wait`` (real seconds) long-polls: an empty queue is waited on that long.
        """
        deadline = time.monotonic() + wait
        with self._lock:
            while True:
                queue = self._queues.get(function)
                while queue:
                    req = queue.popleft()
                    if not req.done.is_set():
                        req.fetched = True
                        return req.id, req.args
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    return None
                self._arrived.wait(left)

    def return_result(self, request_id: str, result: str) -> None:
        """The topology's answer to ``request_id`` (ignored once the request is gone)."""
        req = self._requests.get(str(request_id))
        if req is not None:
            self._finish(req, result=str(result))

    def fail_request(self, request_id: str, reason: str | None = None) -> None:
        """The topology failed ``request_id``: its caller gets ``DRPCExecutionError``."""
        req = self._requests.get(str(request_id))
        if req is not None:
            why = f": {reason}" if reason else ""
            self._finish(req, error=DRPCExecutionError(
                f"DRPC request {req.function!r}({req.args!r}) failed{why}", FAILED_REQUEST))

    def expire_due(self) -> None:
        """Time out every request whose deadline passed on the runtime's clock."""
        now = clock.monotonic()
        with self._lock:
            due = [r for r in self._requests.values() if now >= r.deadline and not r.done.is_set()]
        for req in due:
            self._time_out(req)

    def _time_out(self, req: _Request) -> None:
        self._finish(req, error=DRPCExecutionError(
            f"DRPC request {req.function!r}({req.args!r}) timed out: no result within "
            f"{req.timeout:g} s", SERVER_TIMEOUT))

    def pending(self, function: str | None = None) -> int:
        """Requests not yet answered (of ``function``, or of all)."""
        with self._lock:
            return sum(1 for r in self._requests.values()
                       if function is None or r.function == function)

    def close(self) -> None:
        """Fail every outstanding request (``SERVER_SHUTDOWN``) and refuse new ones."""
        with self._lock:
            self._closed = True
            self._arrived.notify_all()
            requests = list(self._requests.values())
            if self._sim is not None:
                self._sim.remove_listener(self.expire_due)
        for req in requests:
            self._finish(req, error=DRPCExecutionError("the DRPC server shut down", SERVER_SHUTDOWN))

    def _finish(self, req: _Request, *, result: str | None = None,
                error: DRPCExecutionError | None = None) -> None:
        with self._lock:
            if req.done.is_set():
                return  # the first answer wins (a late result after a timeout is dropped)
            req.result, req.error = result, error
            req.done.set()

    def _forget(self, req: _Request) -> None:
        with self._lock:
            self._requests.pop(req.id, None)
            queue = self._queues.get(req.function)
            if queue is not None and not req.fetched:
                try:
                    queue.remove(req)
                except ValueError:
                    pass
