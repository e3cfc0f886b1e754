"""The bolts a linear DRPC topology is built from, besides the user's (Storm's)."""

from __future__ import annotations

import functools
import json
import logging
import queue
import threading
from random import getrandbits
from typing import Any

from squall.api.components import BasicBolt, Bolt
from squall.api.context import TopologyContext
from squall.api.fields import Fields
from squall.api.tuple import DEFAULT_STREAM, Tuple
from squall.drpc.client import DRPCInvocationsClient, token_from
from squall.drpc.errors import DRPCExecutionError
from squall.drpc.local import lookup
from squall.runtime import clock

log = logging.getLogger("squall.drpc")
ARGS_STREAM = DEFAULT_STREAM
RETURN_STREAM = "ret"
ID_STREAM = "id"
RESULT_RETRIES = 3


class PrepareRequest(BasicBolt):
    """Gives each request a random id: ``[id, args]``, ``[id, return-info]`` and ``[id]``."""

    def execute(self, tup: Tuple, collector: Any) -> None:
        """Emit the request on the three streams."""
        args, info = tup.values[0], tup.values[1]
        request = getrandbits(63)
        collector.emit([request, args], stream=ARGS_STREAM)
        collector.emit([request, info], stream=RETURN_STREAM)
        collector.emit([request], stream=ID_STREAM)

    def declare_output_fields(self, declarer: Any) -> None:
        """The args, return and id streams."""
        declarer.declare(Fields("request", "args"), stream=ARGS_STREAM)
        declarer.declare(Fields("request", "return"), stream=RETURN_STREAM)
        declarer.declare(Fields("request"), stream=ID_STREAM)


class JoinResult(Bolt):
    """Pairs each result with its request's return info: ``[result, return-info]``.

    A half that waits longer than twice ``topology.message.timeout.secs`` belongs to a
    request whose tree has failed or timed out already: it is failed and forgotten.
    """

    def __init__(self, return_component: str) -> None:
        self.return_component = return_component

    def prepare(self, conf: dict, context: TopologyContext, collector: Any) -> None:
        """Start with nothing waiting."""
        self._collector = collector
        self._returns: dict[Any, Tuple] = {}
        self._results: dict[Any, Tuple] = {}
        self._since: dict[Any, float] = {}  # request id -> when its first half arrived
        self._max_wait = 2.0 * float(conf.get("topology.message.timeout.secs") or 30)

    def execute(self, tup: Tuple) -> None:
        """Keep ``tup`` until its partner arrives; then emit both as one, anchored to both."""
        self._expire()
        rid = tup.values[0]
        if tup.component == self.return_component:
            self._returns[rid] = tup
        else:
            self._results[rid] = tup
        self._since.setdefault(rid, clock.monotonic())
        if rid in self._returns and rid in self._results:
            result, returner = self._results.pop(rid), self._returns.pop(rid)
            del self._since[rid]
            self._collector.emit([str(result.values[1]), returner.values[1]],
                                 anchors=[result, returner])
            self._collector.ack(result)
            self._collector.ack(returner)

    def _expire(self) -> None:
        cutoff = clock.monotonic() - self._max_wait
        while self._since:
            rid, since = next(iter(self._since.items()))
            if since > cutoff:
                return
            del self._since[rid]
            for waiting in (self._returns, self._results):
                tup = waiting.pop(rid, None)
                if tup is not None:
                    self._collector.fail(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        """``result``, ``return-info``."""
        declarer.declare(Fields("result", "return-info"))


class ReturnResults(Bolt):
    """Sends each ``[result, return-info]`` back to the DRPC service that asked.

    A ``LocalDRPC`` of this process is answered at once. A remote server is answered from a
    thread of the task's own (three tries, as Storm's), so a slow or unreachable server
    never holds up the worker; the tuple is acked, or failed, on the task's thread after.
    """

    def prepare(self, conf: dict, context: TopologyContext, collector: Any) -> None:
        """Start the sender thread."""
        self._collector = collector
        self._context = context
        self._conf = conf
        self._clients: dict[tuple[str, int], DRPCInvocationsClient] = {}
        self._outbox: queue.SimpleQueue[tuple[Tuple, str, str, int, str] | None] = queue.SimpleQueue()
        self._sender = threading.Thread(target=self._send_loop, daemon=True,
                                        name=f"squall-drpc-return-{context.task_id}")
        self._sender.start()

    def execute(self, tup: Tuple) -> None:
        """Return the result (or queue it for the sender thread)."""
        result, info = tup.values[0], tup.values[1]
        if info is None:
            self._collector.ack(tup)
            return
        try:
            where = json.loads(info)
            rid, host, port = str(where["id"]), str(where["host"]), int(where["port"])
        except (ValueError, KeyError, TypeError):
            log.warning("ReturnResults: bad return info %r", info)
            self._collector.fail(tup)
            return
        if port == 0:  # a LocalDRPC of this process
            service = lookup(host)
            if service is not None:
                service.return_result(rid, str(result))
            self._collector.ack(tup)
            return
        self._outbox.put((tup, rid, host, port, str(result)))

    def cleanup(self) -> None:
        """Stop the sender thread."""
        self._outbox.put(None)

    # ---- the sender thread -------------------------------------------------------------

    def _send_loop(self) -> None:
        while True:
            item = self._outbox.get()
            if item is None:
                return
            tup, rid, host, port, result = item
            error = self._send(rid, host, port, result)
            self._context.call_soon(functools.partial(self._settle, tup, error))

    def _send(self, rid: str, host: str, port: int, result: str) -> BaseException | None:
        client = self._clients.get((host, port))
        if client is None:
            client = self._clients[(host, port)] = DRPCInvocationsClient(
                host, port, token_from(self._conf), timeout=10.0)
        error: BaseException | None = None
        for _ in range(RESULT_RETRIES):
            try:
                client.return_result(rid, result)
                return None
            except PermissionError as e:
                return e
            except DRPCExecutionError as e:
                error = e
        return error

    def _settle(self, tup: Tuple, error: BaseException | None) -> None:
        """On the task's thread: ack the returned result, or report and fail it."""
        if error is None:
            self._collector.ack(tup)
        else:
            self._collector.report_error(error)
            self._collector.fail(tup)
