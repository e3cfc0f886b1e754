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
from squall.drpc.fetcher import Fetcher
from squall.drpc.local import LocalDRPC, lookup
from squall.drpc.server import DEFAULT_PORT, PORT_KEY

log = logging.getLogger("squall.drpc")
SERVERS_KEY = "drpc.servers"
INVOCATIONS_PORT_KEY = "drpc.invocations.port"


def return_info(request_id: str, host: str, port: int) -> str:
    """Where ``ReturnResults`` sends the answer, as the JSON text Storm uses."""
    return json.dumps({"id": request_id, "host": host, "port": port})


class DRPCSpout(Spout):
    """Emits each request of ``function`` with msg id (request id, server index).

    With a ``LocalDRPC`` it reads that service (same process); otherwise it polls every
    server of ``drpc.servers`` on ``drpc.invocations.port`` (else ``drpc.port``, 3772)
    with the token of ``squall.drpc.token``/``squall.drpc.token.file``/$SQUALL_DRPC_TOKEN.
    A thread of its own (``squall.drpc.fetcher``) long-polls the servers and sends
    failures, so ``next_tuple`` and ``fail`` never wait on the network; a server that
    cannot be reached is retried after 1, 2, 4 ... 30 s. A failed tuple tree fails the
    request.
    """

    def __init__(self, function: str, drpc: LocalDRPC | None = None) -> None:
        if not isinstance(function, str) or not function:
            raise ValueError(f"a DRPC function name must be a non-empty string, got {function!r}")
        self.function = function
        self.local_id = drpc.service_id if drpc is not None else None

    def open(self, conf: dict, context: TopologyContext, collector: Any) -> None:
        """Find the local service, or start fetching from the configured servers."""
        self._collector = collector
        self._context = context
        self._topology = context.topology_name
        self._fetcher: Fetcher | None = None
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
        clients = [DRPCInvocationsClient(str(h), port, token, timeout=5.0) for h in servers]
        self._fetcher = Fetcher(self.function, clients, f"squall-drpc-{context.task_id}",
                                report=self._report_soon, wake=self._wake)
        self._fetcher.start()

    def close(self) -> None:
        """Stop fetching."""
        if getattr(self, "_fetcher", None) is not None:
            self._fetcher.stop()  # type: ignore[union-attr]

    def activate(self) -> None:
        """Fetch requests (remote) from now on."""
        if self._fetcher is not None:
            self._fetcher.active.set()

    def deactivate(self) -> None:
        """Fetch no more requests until activated (one already fetched stays ready)."""
        if self._fetcher is not None:
            self._fetcher.active.clear()

    def next_tuple(self) -> None:
        """Emit one request, if one waits."""
        if self.local_id is not None:
            service = lookup(self.local_id)
            got = service.fetch_request(self.function) if service is not None else None
            if got is not None:
                rid, args = got
                self._collector.emit([args, return_info(rid, self.local_id, 0)], msg_id=(rid, 0))
            return
        fetcher = self._fetcher
        assert fetcher is not None
        if fetcher.ready:
            rid, args, i = fetcher.ready.popleft()
            client = fetcher.clients[i]
            self._collector.emit([args, return_info(rid, client.host, client.port)], msg_id=(rid, i))

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
        assert self._fetcher is not None
        self._fetcher.fail(rid, i, reason)

    # ---- from the fetcher's thread -----------------------------------------------------

    def _report_soon(self, error: BaseException) -> None:
        self._context.call_soon(lambda: self._collector.report_error(error))

    def _wake(self) -> None:
        # a request is ready: have the task emit it now rather than at its next poll
        self._context.call_soon(self._emit_ready)

    def _emit_ready(self) -> None:
        fetcher = self._fetcher
        if fetcher is not None and fetcher.active.is_set():
            self.next_tuple()

    def declare_output_fields(self, declarer: Any) -> None:
        """``args``, ``return-info``."""
        declarer.declare(Fields("args", "return-info"))
