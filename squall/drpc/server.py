"""The DRPC server (``squall drpc``): the DRPC service over HTTP, behind a token.

One port (``drpc.port``, 3772) serves both sides: clients ``execute`` (the call blocks
until the result), topologies ``fetch`` requests and send ``result`` or ``fail``. Every
call needs ``Authorization: Bearer <token>`` (at least ``MIN_TOKEN_CHARS`` characters); the
token is compared in constant time, before a byte of the body is read, and never logged or
sent back. The server binds 127.0.0.1 unless told otherwise.

Limits (``squall.runtime.httpguard``), so that no client, with or without the token, ties
it up: a request must arrive whole within ``http_timeout_secs`` of its first awaited byte;
at most ``max_connections`` connections are served at once (one more gets 503); the
``Content-Length`` must be one non-negative decimal number up to ``MAX_BODY_BYTES`` (else
400 or 413); a ``Host`` naming neither the bound address (``localhost`` too on loopback) nor
one of ``allowed_hosts`` gets 421 (DNS rebinding).

Endpoints (POST, JSON bodies): ``/drpc/execute`` ``{"function", "args", "timeout"?}`` ->
``{"result"}``; ``/drpc/fetch`` ``{"function", "wait"?}`` -> ``{"id", "args"}`` (``id``
empty when nothing came within ``wait`` seconds, at most 5, as Storm's); ``/drpc/result``
``{"id", "result"}``; ``/drpc/fail`` ``{"id", "reason"?}``. Errors: ``{"error", "type"}``
with 401 (token), 400 (bad request), 504 (``SERVER_TIMEOUT``), 500 (other
``DRPCExecutionError`` types).
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import secrets
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

from squall.drpc.core import DEFAULT_TIMEOUT_SECS, DRPC
from squall.drpc.errors import SERVER_TIMEOUT, DRPCExecutionError
from squall.runtime.httpguard import (
    DeadlineHandler,
    GuardedHTTPServer,
    host_allowed,
    host_names,
)

log = logging.getLogger("squall.drpc")
DEFAULT_PORT = 3772
PORT_KEY = "drpc.port"
MAX_BODY_BYTES = 16 * 1024 * 1024
MAX_FETCH_WAIT_SECS = 5.0  # how long a fetch may long-poll for a request
MIN_TOKEN_CHARS = 16  # as Nimbus's: a short token is guessed
# connections served at once: each blocked execute and each spout's long-poll fetch holds one
# (Storm: drpc.worker.threads 64 plus drpc.queue.size 128)
MAX_CONNECTIONS = 256


def load_or_create_token(path: str | os.PathLike[str]) -> str:
    """The token in ``path``; a new random one written there (mode 0600) if missing."""
    p = Path(path)
    if p.exists():
        if p.stat().st_mode & 0o077:
            log.warning("DRPC token file %s is readable by others (chmod 600 it)", p)
        token = p.read_text().strip()
        if len(token) < MIN_TOKEN_CHARS:
            raise ValueError(f"DRPC token file {str(p)!r} holds {len(token)} characters, under "
                             f"{MIN_TOKEN_CHARS}: delete it to have a new one made")
        return token
    p.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    return token


class DRPCServer:
    """Serves a ``DRPC`` service over HTTP until ``stop``; a context manager."""

    def __init__(self, token: str, host: str = "127.0.0.1", port: int = DEFAULT_PORT,
                 timeout_secs: float = DEFAULT_TIMEOUT_SECS, *, http_timeout_secs: float = 30.0,
                 max_connections: int = MAX_CONNECTIONS, allowed_hosts: tuple[str, ...] = ()) -> None:
        if len(token or "") < MIN_TOKEN_CHARS:
            raise ValueError(f"the DRPC token must be at least {MIN_TOKEN_CHARS} characters, got "
                             f"{len(token or '')}")
        self.drpc = DRPC(timeout_secs)
        self._token = token.encode()
        # the whole request's deadline (a fetch's long poll comes after it, while answering)
        handler = type("Handler", (_Handler,), {"server_ref": self, "timeout": http_timeout_secs})
        self._httpd = GuardedHTTPServer((host, port), handler, max_connections)
        address = self._httpd.server_address
        self.host, self.port = str(address[0]), int(address[1])
        self.hosts = host_names(self.host, extra=(host, *allowed_hosts))
        self._thread: threading.Thread | None = None

    def authorized(self, header: str | None) -> bool:
        """True when ``header`` is ``Bearer <the token>``."""
        if not header or not header.startswith("Bearer "):
            return False
        return hmac.compare_digest(header[7:].strip().encode(), self._token)

    def start(self) -> DRPCServer:
        """Serve on a thread of its own."""
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="squall-drpc",
                                        daemon=True)
        self._thread.start()
        log.info("DRPC server listening on %s:%d", self.host, self.port)
        return self

    def serve_forever(self) -> None:
        """Serve on this thread until ``stop``."""
        log.info("DRPC server listening on %s:%d", self.host, self.port)
        self._httpd.serve_forever()

    def stop(self) -> None:
        """Fail outstanding requests, stop serving and close the port."""
        self.drpc.close()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> DRPCServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


class _Handler(DeadlineHandler):
    server_ref: DRPCServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        log.debug("%s %s", self.address_string(), format % args)  # no headers: no token

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        srv = self.server_ref
        if not host_allowed(self.headers.get("Host"), srv.hosts, srv.host):
            self.close_connection = True
            self._reply(421, {"error": f"this DRPC server does not answer for the host "
                                       f"{self.headers.get('Host', '')[:100]!r}", "type": "BAD_REQUEST"})
            return
        if not srv.authorized(self.headers.get("Authorization")):
            self.close_connection = True  # its body is left unread
            self._reply(401, {"error": "missing or wrong DRPC token", "type": "UNAUTHORIZED"})
            return
        try:
            length = self._length()
        except ValueError as e:
            self.close_connection = True  # its body is left unread
            self._reply(413 if "over" in str(e) else 400, {"error": str(e), "type": "BAD_REQUEST"})
            return
        try:
            body = self._body(length)
            reply = self._dispatch(srv.drpc, self.path, body)
        except DRPCExecutionError as e:
            self._reply(504 if e.type == SERVER_TIMEOUT else 500, {"error": str(e), "type": e.type})
            return
        except (ValueError, KeyError, TypeError) as e:
            self._reply(400, {"error": f"bad request to {self.path}: {e}", "type": "BAD_REQUEST"})
            return
        if reply is None:
            self._reply(404, {"error": f"no such endpoint {self.path}", "type": "BAD_REQUEST"})
        else:
            self._reply(200, reply)

    def do_GET(self) -> None:  # noqa: N802
        self._reply(405, {"error": "use POST", "type": "BAD_REQUEST"})

    def _length(self) -> int:
        """The announced body length: one non-negative decimal up to ``MAX_BODY_BYTES``."""
        if self.headers.get("Transfer-Encoding"):
            raise ValueError("chunked request bodies are not accepted: send a Content-Length")
        values = self.headers.get_all("Content-Length") or []
        if not values:
            return 0
        raw = values[0].strip()
        if len(values) > 1 or not raw.isdigit() or not raw.isascii():
            raise ValueError(f"the Content-Length header must be one non-negative integer, got "
                             f"{', '.join(values)[:100]!r}")
        length = int(raw)
        if length > MAX_BODY_BYTES:
            raise ValueError(f"a body of {length} bytes is over the limit of {MAX_BODY_BYTES}")
        return length

    def _body(self, length: int) -> dict:
        try:
            raw = self.rfile.read(length) if length else b""
        except TimeoutError:
            self.close_connection = True
            raise ValueError("the request body did not arrive whole within its deadline") from None
        if len(raw) < length:
            self.close_connection = True
            raise ValueError(f"the request body ended after {len(raw)} of {length} bytes")
        data = json.loads(raw or b"{}")
        if not isinstance(data, dict):
            raise ValueError("the body must be a JSON object")
        return data

    @staticmethod
    def _dispatch(drpc: DRPC, path: str, body: dict) -> dict | None:
        if path == "/drpc/execute":
            timeout = body.get("timeout")
            result = drpc.execute(str(body["function"]), body["args"],
                                  float(timeout) if timeout is not None else None)
            return {"result": result}
        if path == "/drpc/fetch":
            wait = min(max(float(body.get("wait") or 0.0), 0.0), MAX_FETCH_WAIT_SECS)
            got = drpc.fetch_request(str(body["function"]), wait)
            return {"id": got[0], "args": got[1]} if got else {"id": "", "args": ""}
        if path == "/drpc/result":
            drpc.return_result(str(body["id"]), str(body["result"]))
            return {}
        if path == "/drpc/fail":
            drpc.fail_request(str(body["id"]), body.get("reason"))
            return {}
        return None

    def _reply(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass  # the caller went away (its own timeout)
