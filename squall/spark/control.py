"""The topology master's control endpoint: JSON over HTTP, for Nimbus.

A ``ThreadingHTTPServer`` on the master's bind host (127.0.0.1 by default) and a random
port, or the first free one of ``squall.spark.master.control.port`` (``squall.spark.ports``).
Every request must carry ``Authorization: Bearer <topology secret>``; others get 401 and
are logged. Routes are ``(method, path) -> handler(body) -> dict``; a handler raises
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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from squall.spark.ports import bind_first_free, os_in_use
from squall.spark.settings import MASTER_CONTROL_PORT

log = logging.getLogger("squall.spark.control")
MAX_BODY = 1 << 20
SOCKET_TIMEOUT = 60.0  # an idle or slow connection is cut after this (kills wait longer: see Nimbus)

Handler = Callable[[dict], dict]


class ControlError(Exception):
    """A refused control request: ``status`` is the HTTP status, the message says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class ControlServer:
    """Serves ``routes`` to holders of ``secret`` (see the module docstring)."""

    def __init__(self, host: str, secret: str, routes: dict[tuple[str, str], Handler], *,
                 port: Any = 0, advertised: str | None = None) -> None:
        self.secret = secret
        self.routes = routes
        handler = self._handler_class()
        self._server = bind_first_free(lambda p: ThreadingHTTPServer((host, p), handler), port,
                                       MASTER_CONTROL_PORT, host, os_in_use)
        self._server.daemon_threads = True
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

        class _Handler(BaseHTTPRequestHandler):
            timeout = SOCKET_TIMEOUT

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib's name
                log.debug("control: " + format, *args)

            def do_GET(self) -> None:  # noqa: N802 - stdlib's name
                server._serve(self, "GET")

            def do_POST(self) -> None:  # noqa: N802 - stdlib's name
                server._serve(self, "POST")

        return _Handler

    def _serve(self, req: BaseHTTPRequestHandler, method: str) -> None:
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
