"""Nimbus's REST API: JSON over HTTP (stdlib ``ThreadingHTTPServer``), under ``/api/v1``.

Reads (GET) are open; every request that changes anything or uploads code (POST) needs
the token and is refused with 401 (none) or 403 (wrong) otherwise, and logged. A standby
answers reads from the store and refuses changes with 503 naming the leader. Errors are
``{"error": "<one line>", "code": "<kind>"}``. ``GET /api/v1/openapi.json`` describes it all.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import squall
from squall.nimbus.auth import check_token
from squall.nimbus.errors import InvalidRequest, NimbusError, NotFound
from squall.nimbus.observer import Observer
from squall.nimbus.openapi import openapi
from squall.nimbus.ui_api import UiApi
from squall.nimbus.upgrades import Nimbus
from squall.nimbus.webui import Raw, asset, page
from squall.store import StoreError

log = logging.getLogger("squall.nimbus.http")
PREFIX = "/api/v1"
MAX_BODY = 512 << 20
NAME = r"(?P<name>[A-Za-z0-9][A-Za-z0-9_.-]{0,127})"

Route = tuple[str, re.Pattern, bool, Callable[..., Any]]


class NimbusServer:
    """Serves ``nimbus`` on ``host:port`` (see the module docstring)."""

    def __init__(self, host: str, port: int, token: str) -> None:
        # bound before anything else starts, so that a taken port fails fast
        self.httpd = ThreadingHTTPServer((host, port), self._handler_class())
        self.httpd.daemon_threads = True
        self.token = token
        self.routes: list[Route] = []

    def attach(self, nimbus: Nimbus, observer: Observer | None = None) -> None:
        """Serve ``nimbus`` (call before ``serve_forever``), and its UI with ``observer``."""
        self.nimbus = nimbus
        self.observer = observer or Observer(nimbus)
        self.ui = UiApi(nimbus, self.observer)
        self.routes = self._routes()

    def _routes(self) -> list[Route]:
        n = self.nimbus
        table: list[tuple[str, str, bool, Callable[..., Any]]] = [
            ("GET", "/health", False, lambda q, b: self.health()),
            ("GET", "/openapi.json", False, lambda q, b: openapi()),
            ("GET", "/cluster", False, lambda q, b: self.cluster()),
            ("GET", "/topologies", False, lambda q, b: {"topologies": n.list_topologies()}),
            ("POST", "/topologies", True, lambda q, b: n.submit(b)),
            ("GET", f"/topologies/{NAME}", False, lambda q, b, name: n.info(name)),
            ("GET", f"/topologies/{NAME}/errors", False, lambda q, b, name: {"errors": n.errors(name)}),
            ("POST", f"/topologies/{NAME}/activate", True, lambda q, b, name: n.set_active(name, True)),
            ("POST", f"/topologies/{NAME}/deactivate", True, lambda q, b, name: n.set_active(name, False)),
            ("POST", f"/topologies/{NAME}/rebalance", True, lambda q, b, name: n.rebalance(name, b)),
            ("POST", f"/topologies/{NAME}/upgrade", True, lambda q, b, name: n.upgrade(name, b)),
            ("POST", f"/topologies/{NAME}/complete-upgrade", True,
             lambda q, b, name: n.complete_upgrade(name)),
            ("POST", f"/topologies/{NAME}/rollback", True, lambda q, b, name: n.rollback(name)),
            ("POST", f"/topologies/{NAME}/kill", True,
             lambda q, b, name: n.kill(name, _wait(b.get("wait_secs")))),
        ]
        table += self.ui.routes()
        routes = [(m, re.compile(f"^{PREFIX}{p}$"), auth, fn) for m, p, auth, fn in table]
        # outside the API: the web UI and Prometheus's scrape target
        routes += [("GET", re.compile(r"^/(index\.html)?$"), False, lambda q, b: page()),
                   ("GET", re.compile(r"^/ui/(?P<name>[A-Za-z0-9_.-]+)$"), False,
                    lambda q, b, name: asset(name)),
                   ("GET", re.compile(r"^/metrics$"), False, lambda q, b: self.ui.metrics_page())]
        return routes

    def health(self) -> dict:
        """Who this Nimbus is and who leads."""
        leader = self.nimbus.election.leader() or {}
        return {"url": self.nimbus.config.url, "leader": self.nimbus.election.is_leader(),
                "leader_url": leader.get("url"), "version": squall.__version__}

    def cluster(self) -> dict:
        """Nimbus, its store, its Spark master and the topology count."""
        n = self.nimbus
        return {**self.health(), "store": n.config.store, "blob_dir": str(n.config.blob_dir),
                "spark_master": n.config.spark_master, "started": n.started,
                "topologies": len(n.store.children("topologies"))}

    def serve_forever(self) -> None:
        """Serve until ``shutdown``."""
        self.httpd.serve_forever()

    def shutdown(self) -> None:
        """Stop serving (from another thread)."""
        self.httpd.shutdown()
        self.httpd.server_close()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib's name
                log.debug("http: " + format, *args)

            def do_GET(self) -> None:  # noqa: N802 - stdlib's name
                server.handle(self, "GET")

            def do_POST(self) -> None:  # noqa: N802 - stdlib's name
                server.handle(self, "POST")

        return _Handler

    def handle(self, req: BaseHTTPRequestHandler, method: str) -> None:
        """Route one request and answer it."""
        url = urlsplit(req.path)
        peer = req.client_address[0]
        status, body = 200, {}  # type: tuple[int, Any]
        read = False
        try:
            route, params = self._match(method, url.path)
            if route[2]:  # before reading the body: no upload is read without the token
                check_token(self.token, req.headers.get("Authorization"), f"{method} {url.path}", peer)
            data = self._read_body(req)
            read = True
            query = {k: v[-1] for k, v in parse_qs(url.query).items()}
            body = route[3](query, data, **params)
        except NimbusError as e:
            status, body = e.status, e.body()
        except StoreError as e:
            status, body = 503, {"error": f"the store is unavailable: {e}", "code": "store_unavailable"}
        except Exception as e:  # noqa: BLE001 - one bad request must not take the server down
            log.exception("%s %s failed", method, url.path)
            status, body = 500, {"error": f"{type(e).__name__}: {e}", "code": "failed"}
        if method == "POST" or status >= 400:
            log.info("%s %s from %s -> %d%s", method, url.path, peer, status,
                     f" ({body.get('error')})" if status >= 400 and isinstance(body, dict) else "")
        headers: dict[str, str] = {}
        if isinstance(body, Raw):
            payload, kind, headers = body.body, body.content_type, body.headers
        else:
            payload, kind = json.dumps(body, default=str).encode(), "application/json"
        req.send_response(status)
        req.send_header("Content-Type", kind)
        for key, value in headers.items():
            req.send_header(key, value)
        req.send_header("Content-Length", str(len(payload)))
        if not read and int(req.headers.get("Content-Length") or 0):
            req.send_header("Connection", "close")  # the unread body must not pose as a request
            req.close_connection = True
        req.end_headers()
        req.wfile.write(payload)

    def _match(self, method: str, path: str) -> tuple[Route, dict[str, str]]:
        allowed = False
        for route in self.routes:
            m = route[1].match(path)
            if m:
                if route[0] == method:
                    return route, m.groupdict()
                allowed = True
        if allowed:
            raise InvalidRequest(f"{method} is not allowed on {path}")
        raise NotFound(f"no such API path: {path} (see {PREFIX}/openapi.json)")

    @staticmethod
    def _read_body(req: BaseHTTPRequestHandler) -> dict:
        length = int(req.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise InvalidRequest(f"request body of {length} bytes is over the {MAX_BODY} limit")
        if not length:
            return {}
        try:
            body = json.loads(req.rfile.read(length))
        except ValueError:
            raise InvalidRequest("the request body is not JSON") from None
        if not isinstance(body, dict):
            raise InvalidRequest("the request body must be a JSON object")
        return body


def _wait(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidRequest(f"wait_secs must be a number of seconds, got {value!r}")
    return float(value)
