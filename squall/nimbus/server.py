"""Nimbus's REST API: JSON over HTTP (stdlib ``ThreadingHTTPServer``), under ``/api/v1``.

Reads (GET) are open, but without the token they show no secrets, paths or error texts
(``squall.nimbus.redact.public``, on every read; a component's errors need the token);
every request that changes anything or uploads code (POST) needs the token and is refused
with 401 (none) or 403 (wrong) otherwise, and logged. A standby answers reads from the
store and refuses changes with 503 naming the leader. Errors are
``{"error": "<one line>", "code": "<kind>"}``. ``GET /api/v1/openapi.json`` describes it all.

Limits, so that no client can tie the server up: each route has a body limit (uploads
``MAX_UPLOAD``, other requests ``MAX_BODY``) checked against ``Content-Length`` before a
byte of the body is read (a negative or non-numeric length, or a chunked body, is refused);
a request must arrive whole (request line, headers, body) within ``http_timeout_secs``
of its first awaited byte, else its connection is cut; at most ``http_max_connections``
connections are served at once (one more gets 503); a ``wait_secs`` must lie in
0..``max_wait_secs``. A request whose ``Host`` names neither the bound address (nor, for a
loopback bind, ``localhost``), the host of ``nimbus.url``, nor one of
``nimbus.http.allowed.hosts`` gets 421: a page whose name an attacker rebound to this
address (DNS rebinding) reads nothing. With a certificate and key the server speaks only TLS (the
handshake runs on the request's thread, under the same timeout).
"""

from __future__ import annotations

import json
import logging
import math
import re
import ssl
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from squall._version import __version__
from squall.nimbus.auth import check_token, token_matches
from squall.nimbus.core import CALLER
from squall.nimbus.errors import InvalidRequest, NimbusError, NotFound, TooLarge
from squall.nimbus.observer import Observer
from squall.nimbus.openapi import openapi
from squall.nimbus.redact import public
from squall.nimbus.ui_api import UiApi
from squall.nimbus.upgrades import Nimbus
from squall.nimbus.webui import Raw, asset, page
from squall.runtime.httpguard import (
    DEFAULT_MAX_CONNECTIONS,
    DeadlineHandler,
    GuardedHTTPServer,
    host_allowed,
    host_names,
)
from squall.store import StoreError

log = logging.getLogger("squall.nimbus.http")
PREFIX = "/api/v1"
MAX_UPLOAD = 512 << 20  # submit and upgrade: code and topology, base64
MAX_BODY = 64 << 10  # every other request
UPLOADS = re.compile(f"^{PREFIX}/topologies(/[^/]+/upgrade)?$")
NAME = r"(?P<name>[A-Za-z0-9][A-Za-z0-9_.-]{0,127})"

Route = tuple[str, re.Pattern, bool, Callable[..., Any]]


class NimbusServer:
    """Serves ``nimbus`` on ``host:port`` (see the module docstring)."""

    def __init__(self, host: str, port: int, token: str, *, timeout: float = 30.0,
                 max_wait_secs: float = 600.0, tls: tuple[str, str] | None = None,
                 max_connections: int = DEFAULT_MAX_CONNECTIONS, allowed_hosts: tuple[str, ...] = ()) -> None:
        self.timeout = timeout
        self.max_wait_secs = max_wait_secs
        # bound before anything else starts, so that a taken port fails fast
        self.httpd = GuardedHTTPServer((host, port), self._handler_class(), max_connections)
        self.bound = str(self.httpd.server_address[0])
        self.allowed_hosts = tuple(allowed_hosts)
        self.hosts = host_names(self.bound, extra=(host, *self.allowed_hosts))
        if tls is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.minimum_version = ssl.TLSVersion.TLSv1_2
            try:
                ctx.load_cert_chain(*tls)
            except (OSError, ssl.SSLError) as e:
                self.httpd.server_close()
                raise OSError(f"cannot use the TLS certificate {tls[0]} and key {tls[1]}: {e}") from None
            # the handshake happens on the request's thread (under its timeout), not in accept
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True,
                                                do_handshake_on_connect=False)
        self.token = token
        self.routes: list[Route] = []
        self.redacted: set[int] = set()

    def attach(self, nimbus: Nimbus, observer: Observer | None = None) -> None:
        """Serve ``nimbus`` (call before ``serve_forever``), and its UI with ``observer``."""
        self.nimbus = nimbus
        self.observer = observer or Observer(nimbus)
        self.ui = UiApi(nimbus, self.observer)
        self.routes = self._routes()
        config = nimbus.config
        listed = tuple(str(getattr(config, "http_allowed_hosts", None) or "").split(","))
        self.hosts = host_names(self.bound, extra=(*self.hosts, config.url or "", *listed))
        cap = getattr(config, "http_max_connections", None)
        if cap:
            self.httpd.set_max_connections(int(cap))

    def _routes(self) -> list[Route]:
        n = self.nimbus
        table: list[tuple[str, str, bool, Callable[..., Any]]] = [
            ("GET", "/health", False, lambda q, b: self.health()),
            ("GET", "/openapi.json", False, lambda q, b: openapi()),
            ("GET", "/cluster", False, lambda q, b: self.cluster()),
            ("GET", "/topologies", False, lambda q, b: {"topologies": n.list_topologies()}),
            ("POST", "/topologies", True, lambda q, b: n.submit(b)),
            ("GET", f"/topologies/{NAME}", False, lambda q, b, name: n.info(name)),
            ("GET", f"/topologies/{NAME}/errors", True, lambda q, b, name: {"errors": n.errors(name)}),
            ("GET", f"/topologies/{NAME}/conf", True, lambda q, b, name: n.effective_conf(name)),
            ("POST", f"/topologies/{NAME}/activate", True, lambda q, b, name: n.set_active(name, True)),
            ("POST", f"/topologies/{NAME}/deactivate", True, lambda q, b, name: n.set_active(name, False)),
            ("POST", f"/topologies/{NAME}/rebalance", True, lambda q, b, name: n.rebalance(name, b)),
            ("POST", f"/topologies/{NAME}/upgrade", True, lambda q, b, name: n.upgrade(name, b)),
            ("POST", f"/topologies/{NAME}/complete-upgrade", True,
             lambda q, b, name: n.complete_upgrade(name)),
            ("POST", f"/topologies/{NAME}/rollback", True, lambda q, b, name: n.rollback(name)),
            ("POST", f"/topologies/{NAME}/kill", True,
             lambda q, b, name: n.kill(name, b.get("wait_secs"))),
        ]
        core = [(m, re.compile(f"^{PREFIX}{p}$"), auth, fn) for m, p, auth, fn in table]
        ui = [(m, re.compile(f"^{PREFIX}{p}$"), auth, fn) for m, p, auth, fn in self.ui.routes()]
        # what ``public`` trims for callers without the token: every read of the API but its
        # own description (Storm's pages carry error texts, the cluster pages paths)
        self.redacted = {id(route) for route in core + ui
                         if route[0] == "GET" and "openapi" not in route[1].pattern}
        routes = core + ui
        # code replication between Nimbus nodes (squall.nimbus.replication): token only
        routes.append(("GET", re.compile(f"^{PREFIX}/blobs/(?P<topology_id>[A-Za-z0-9_.-]{{1,160}})/"
                                         r"(?P<version>[0-9]{1,9})/(?P<file>code\.zip|topology\.pkl|conf\.json)$"),
                       True, lambda q, b, topology_id, version, file:
                       self.blob_file(topology_id, version, file)))
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
                "leader_url": leader.get("url"), "version": __version__}

    def cluster(self) -> dict:
        """Nimbus, its store, its Spark master and the topology count."""
        n = self.nimbus
        return {**self.health(), "store": n.config.store, "blob_dir": str(n.config.blob_dir),
                "spark_master": n.config.spark_master, "started": n.started,
                "topologies": len(n.store.children("topologies"))}

    def blob_file(self, topology_id: str, version: str, name: str) -> Raw:
        """One file of a version this Nimbus holds, for another Nimbus's copy (token only)."""
        try:
            path = self.nimbus.blobs.version(topology_id, int(version)).directory / name
            data = path.read_bytes()
        except (ValueError, OSError):
            raise NotFound(f"this Nimbus holds no {name} of {topology_id} v{version}") from None
        return Raw(data, "application/octet-stream")

    def serve_forever(self) -> None:
        """Serve until ``shutdown``."""
        self.httpd.serve_forever()

    def shutdown(self) -> None:
        """Stop serving (from another thread)."""
        self.httpd.shutdown()
        self.httpd.server_close()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class _Handler(DeadlineHandler):
            protocol_version = "HTTP/1.1"
            timeout = server.timeout  # the whole request's deadline, and every write's timeout

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
            if not host_allowed(req.headers.get("Host"), self.hosts, self.bound):
                raise MisdirectedRequest(f"this Nimbus does not answer for the host "
                                         f"{req.headers.get('Host', '')[:100]!r}; add it to "
                                         f"nimbus.http.allowed.hosts if it is one of its names")
            length = _content_length(req)
            route, params = self._match(method, url.path)
            if route[2]:  # before reading the body: no upload is read without the token
                check_token(self.token, req.headers.get("Authorization"), f"{method} {url.path}", peer)
            limit = MAX_UPLOAD if method == "POST" and UPLOADS.match(url.path) else MAX_BODY
            if length > limit:
                raise TooLarge(f"{method} {url.path}: a body of {length} bytes is over its limit of "
                               f"{limit} bytes")
            data = self._read_body(req, length)
            read = True
            if "wait_secs" in data:
                data["wait_secs"] = _wait(data["wait_secs"], self.max_wait_secs)
            CALLER.set(f"{req.headers.get('X-Squall-User') or '?'}@{peer}"[:200])  # for the notifier
            query = {k: v[-1] for k, v in parse_qs(url.query).items()}
            body = route[3](query, data, **params)
            if id(route) in self.redacted and not token_matches(self.token, req.headers.get("Authorization")):
                body = public(body)
        except NimbusError as e:
            status, body = e.status, e.body()
        except StoreError as e:
            log.warning("%s %s: the store is unavailable: %s", method, url.path, e)
            status, body = 503, {"error": "the store is unavailable" + self._detail(req, e),
                                 "code": "store_unavailable"}
        except Exception as e:  # noqa: BLE001 - one bad request must not take the server down
            log.exception("%s %s failed", method, url.path)
            status, body = 500, {"error": f"{type(e).__name__}" + self._detail(req, e), "code": "failed"}
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
        if not read and req.headers.get("Content-Length", "0").strip() != "0":
            req.send_header("Connection", "close")  # the unread body must not pose as a request
            req.close_connection = True
        req.end_headers()
        req.wfile.write(payload)

    def _detail(self, req: BaseHTTPRequestHandler, e: Exception) -> str:
        """``: <message>`` for the token's holder; others get a pointer to the log."""
        if token_matches(self.token, req.headers.get("Authorization")):
            return f": {e}"
        return " (details in the Nimbus log)"

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

    def _read_body(self, req: BaseHTTPRequestHandler, length: int) -> dict:
        if not length:
            return {}
        try:
            raw = req.rfile.read(length)
        except TimeoutError:
            req.close_connection = True
            raise InvalidRequest(f"the request did not arrive whole within {self.timeout:g}s") from None
        if len(raw) < length:
            raise InvalidRequest(f"the request body ended after {len(raw)} of {length} bytes")
        try:
            body = json.loads(raw)
        except ValueError:
            raise InvalidRequest("the request body is not JSON") from None
        if not isinstance(body, dict):
            raise InvalidRequest("the request body must be a JSON object")
        return body


class MisdirectedRequest(NimbusError):
    """A ``Host`` this Nimbus is not (DNS rebinding, or a name missing from the allow-list)."""

    status = 421
    code = "misdirected"


def _content_length(req: BaseHTTPRequestHandler) -> int:
    """The body's announced length: a non-negative decimal, else ``InvalidRequest``."""
    if req.headers.get("Transfer-Encoding"):
        raise InvalidRequest("chunked request bodies are not accepted: send a Content-Length")
    values = req.headers.get_all("Content-Length") or []
    if not values:
        return 0
    raw = values[0].strip()
    if len(values) > 1 or not raw.isdigit() or not raw.isascii():
        raise InvalidRequest(f"the Content-Length header must be one non-negative integer, got "
                             f"{', '.join(values)!r}")
    return int(raw)


def _wait(value: Any, most: float) -> float | None:
    """A request's ``wait_secs``: None, or seconds in 0..``most``, else ``InvalidRequest``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 <= value <= most:
        raise InvalidRequest(f"wait_secs must be a number of seconds from 0 to {most:g}, got {value!r}")
    return float(value)
