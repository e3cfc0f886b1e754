"""``LocalDRPC``: a DRPC service inside this process, for topologies on ``LocalCluster``."""

from __future__ import annotations

import threading
import uuid
from types import TracebackType

from squall.drpc.core import DEFAULT_TIMEOUT_SECS, DRPC

_services: dict[str, DRPC] = {}
_lock = threading.Lock()


def lookup(service_id: str) -> DRPC | None:
    """The ``LocalDRPC`` service registered as ``service_id`` in this process, if running."""
    with _lock:
        return _services.get(service_id)


class LocalDRPC:
    """A DRPC service that a topology built with ``create_local_topology(drpc)`` serves.

    It lives in this process (as Storm's ``LocalDRPC``), so it serves topologies running
    on a ``LocalCluster`` in the same process. Requests time out after the serving
    topology's ``drpc.request.timeout.secs`` (default 600).

    >>> with LocalDRPC() as drpc:
    ...     drpc.service_id in _services
    True
    """

    def __init__(self, timeout_secs: float = DEFAULT_TIMEOUT_SECS) -> None:
        self.service_id = f"local-drpc-{uuid.uuid4().hex}"
        self._drpc = DRPC(timeout_secs)
        with _lock:
            _services[self.service_id] = self._drpc

    def execute(self, function: str, args: str) -> str:
        """Call ``function`` with ``args``; the result, or ``DRPCExecutionError`` with the reason."""
        return self._drpc.execute(function, args)

    def shutdown(self) -> None:
        """Fail outstanding requests and unregister the service."""
        with _lock:
            _services.pop(self.service_id, None)
        self._drpc.close()

    close = shutdown

    def __enter__(self) -> LocalDRPC:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.shutdown()
