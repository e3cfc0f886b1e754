"""The topology master's control endpoint: JSON over HTTP, for Nimbus.

A ``GuardedHTTPServer`` (``squall.runtime.httpguard``, as Nimbus and DRPC) on the master's
bind host (127.0.0.1 by default) and a random port, or the first free one of
``squall.spark.master.control.port`` (``squall.spark.ports``): a request must arrive whole
within ``REQUEST_DEADLINE`` seconds, at most ``MAX_CONNECTIONS`` are served at once (one
more gets 503), and a ``Host`` other than the endpoint's own names gets 421 (DNS
rebinding). Every request must carry ``Authorization: Bearer <topology secret>``; others
get 401 and are logged. Routes are ``(method, path) -> handler(body) -> dict``; a handler raises
``ControlError`` for a refusal with an HTTP status, anything else is a 500. Each request
runs on its own thread, so handlers must be thread-safe (the app serialises the ones that
change the topology).
"""

from __future__ import annotations

import hmac
import json
import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from squall.runtime.httpguard import DeadlineHandler, GuardedHTTPServer, host_allowed, host_names
from squall.spark.ports import bind_first_free, os_in_use
from squall.spark.settings import MASTER_CONTROL_PORT

log = logging.getLogger("squall.spark.control")
MAX_BODY = 1 << 20
# a request (line, headers, body) must arrive whole within this; the handler's work (a kill
# that waits) is not counted, and Nimbus's own timeouts bound that
REQUEST_DEADLINE = 30.0
MAX_CONNECTIONS = 32  # Nimbus's calls and its observer's: a few at once

Handler = Callable[[dict], dict]


class ControlError(Exception):
    """A refused control request: ``status`` is the HTTP status, the message says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class ControlServer:
    """Serves ``routes`` to holders of ``secret`` (see the module docstring)."""

    def __init__(self, host: str, secret: str, routes: dict[tuple[str, str], Handler], *,
                 port: Any = 0, advertised: str | None = None,
                 max_connections: int = MAX_CONNECTIONS) -> None:
        self.secret = secret
        self.routes = routes
        self.host = host
        self.hosts = host_names(host, extra=(advertised,) if advertised else ())
        handler = self._handler_class()
        self._server = bind_first_free(lambda p: GuardedHTTPServer((host, p), handler, max_connections), port,
                                       MASTER_CONTROL_PORT, host, os_in_use)
        self.url = f"http://{advertised or host}:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="squall-control",
                                        daemon=True)

    def start(self) -> str:
        """Start serving; returns the endpoint's URL."""
        self._thread.start()
        return self.url

    def stop(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class _Handler(DeadlineHandler):
            timeout = REQUEST_DEADLINE

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib's name
                log.debug("control: " + format, *args)

            def do_GET(self) -> None:  # noqa: N802 - stdlib's name
                server._serve(self, "GET")

            def do_POST(self) -> None:  # noqa: N802 - stdlib's name
                server._serve(self, "POST")

        return _Handler

    def _serve(self, req: BaseHTTPRequestHandler, method: str) -> None:
        if not host_allowed(req.headers.get("Host"), self.hosts, self.host):
            req.close_connection = True
            _reply(req, 421, {"error": "this control endpoint does not answer for the host "
                                       f"{req.headers.get('Host')!r}"})
            return
        auth = req.headers.get("Authorization", "")
        if not hmac.compare_digest(auth.encode(), f"Bearer {self.secret}".encode()):
            log.warning("control endpoint refused %s %s from %s: no valid secret", method, req.path,
                        req.client_address[0])
            _reply(req, 401, {"error": "this control endpoint needs the topology's secret"})
            return
        handler = self.routes.get((method, req.path.split("?")[0]))
        if handler is None:
            _reply(req, 404, {"error": f"no control route {method} {req.path}"})
            return
        try:
            raw = (req.headers.get("Content-Length") or "0").strip()
            if not raw.isascii() or not raw.isdigit() or req.headers.get("Transfer-Encoding"):
                req.close_connection = True
                raise ControlError(400, "the Content-Length header must be a non-negative integer")
            length = int(raw)
            if length > MAX_BODY:
                req.close_connection = True
                raise ControlError(413, "control request too large")
            body = json.loads(req.rfile.read(length) or b"{}") if length else {}
            if not isinstance(body, dict):
                raise ControlError(400, "the request body must be a JSON object")
            _reply(req, 200, handler(body))
        except ControlError as e:
            _reply(req, e.status, {"error": str(e)})
        except Exception as e:  # noqa: BLE001 - reported to Nimbus, which reports to the user
            log.exception("control %s %s failed", method, req.path)
            _reply(req, 500, {"error": f"{type(e).__name__}: {e}"})


def _reply(req: BaseHTTPRequestHandler, status: int, body: dict) -> None:
    data = json.dumps(body, default=str).encode()
    req.send_response(status)
    req.send_header("Content-Type", "application/json")
    req.send_header("Content-Length", str(len(data)))
    req.end_headers()
    req.wfile.write(data)
