"""``DRPCSpout``: turns DRPC requests into tuples ``[args, return-info]`` (Storm's)."""

from __future__ import annotations

import json
import logging
from typing import Any

from squall.api.components import Spout
from squall.api.context import TopologyContext
from squall.api.fields import Fields
from squall.drpc.client import DRPCInvocationsClient, token_from
from squall.drpc.core import TIMEOUT_KEY
from squall.drpc.errors import DRPCExecutionError
from squall.drpc.local import LocalDRPC, lookup
from squall.drpc.server import DEFAULT_PORT, PORT_KEY
from squall.runtime import clock

log = logging.getLogger("squall.drpc")
SERVERS_KEY = "drpc.servers"
INVOCATIONS_PORT_KEY = "drpc.invocations.port"
MAX_BACKOFF_SECS = 30.0
FAIL_RETRIES = 3


def return_info(request_id: str, host: str, port: int) -> str:
    """Where ``ReturnResults`` sends the answer, as the JSON text Storm uses."""
    return json.dumps({"id": request_id, "host": host, "port": port})


class DRPCSpout(Spout):
    """Emits each request of ``function`` with msg id (request id, server index).

    With a ``LocalDRPC`` it reads that service (same process); otherwise it polls every
    server of ``drpc.servers`` on ``drpc.invocations.port`` (else ``drpc.port``, 3772)
    with the token of ``squall.drpc.token``/``squall.drpc.token.file``/$SQUALL_DRPC_TOKEN.
    A server that cannot be reached is retried after 1, 2, 4 ... 30 s; ``next_tuple``
    never waits longer than one short HTTP call. A failed tuple tree fails the request.
    """

    def __init__(self, function: str, drpc: LocalDRPC | None = None) -> None:
        if not isinstance(function, str) or not function:
            raise ValueError(f"a DRPC function name must be a non-empty string, got {function!r}")
        self.function = function
        self.local_id = drpc.service_id if drpc is not None else None

    def open(self, conf: dict, context: TopologyContext, collector: Any) -> None:
        """Find the local service, or make a client per configured server."""
        self._collector = collector
        self._topology = context.topology_name
        self._clients: list[DRPCInvocationsClient] = []
        if self.local_id is not None:
            service = lookup(self.local_id)
            if service is None:
                raise RuntimeError(f"DRPC spout of {self.function!r}: its LocalDRPC is not running in "
                                   f"this process (a LocalDRPC serves LocalCluster topologies only)")
            if conf.get(TIMEOUT_KEY) is not None:
                service.set_function_timeout(self.function, float(conf[TIMEOUT_KEY]))
            return
        servers = conf.get(SERVERS_KEY)
        if isinstance(servers, str):
            servers = [servers]
        if not servers:
            raise ValueError(f"DRPC spout of {self.function!r}: {SERVERS_KEY} lists no DRPC server; "
                             f"set it to the hosts running `squall drpc`")
        port = int(conf.get(INVOCATIONS_PORT_KEY) or conf.get(PORT_KEY) or DEFAULT_PORT)
        token = token_from(conf)
        self._clients = [DRPCInvocationsClient(str(h), port, token, timeout=2.0) for h in servers]
        self._retry_at = [0.0] * len(self._clients)
        self._backoff = [0.0] * len(self._clients)
        self._next = 0

    def next_tuple(self) -> None:
        """Take one request, if one waits."""
        if self.local_id is not None:
            service = lookup(self.local_id)
            got = service.fetch_request(self.function) if service is not None else None
            if got is not None:
                rid, args = got
                self._collector.emit([args, return_info(rid, self.local_id, 0)], msg_id=(rid, 0))
            return
        now = clock.monotonic()
        n = len(self._clients)
        for k in range(n):
            i = (self._next + k) % n
            if now < self._retry_at[i]:
                continue
            client = self._clients[i]
            try:
                got = client.fetch_request(self.function)
            except (DRPCExecutionError, PermissionError) as e:
                self._unreachable(i, now, e)
                continue
            self._backoff[i] = 0.0
            if got is not None:
                rid, args = got
                self._collector.emit([args, return_info(rid, client.host, client.port)],
                                     msg_id=(rid, i))
                self._next = i + 1
                return

    def _unreachable(self, i: int, now: float, error: BaseException) -> None:
        if self._backoff[i] == 0.0:  # report an outage once, not every poll
            self._collector.report_error(error)
        self._backoff[i] = min(MAX_BACKOFF_SECS, max(1.0, self._backoff[i] * 2))
        self._retry_at[i] = now + self._backoff[i]

    def fail(self, msg_id: Any) -> None:
        """The request's tuple tree failed or timed out: fail the request."""
        rid, i = msg_id
        reason = (f"its tuple tree failed or timed out in topology {self._topology!r} "
                  f"(see the topology's errors)")
        if self.local_id is not None:
            service = lookup(self.local_id)
            if service is not None:
                service.fail_request(rid, reason)
            return
        for attempt in range(FAIL_RETRIES):
            try:
                self._clients[i].fail_request(rid, reason)
                return
            except (DRPCExecutionError, PermissionError) as e:
                if attempt == FAIL_RETRIES - 1:
                    self._collector.report_error(e)

    def declare_output_fields(self, declarer: Any) -> None:
        """``args``, ``return-info``."""
        declarer.declare(Fields("args", "return-info"))
