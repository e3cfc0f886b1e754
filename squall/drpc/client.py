"""Clients of the DRPC server.

``DRPCClient`` is the callers'; ``DRPCInvocationsClient`` the topology's (fetch requests,
return results, fail them).
"""

from __future__ import annotations

import http.client
import json
import os
from pathlib import Path
from typing import Any

from squall.drpc.errors import (
    CLIENT_TIMEOUT,
    INTERNAL_ERROR,
    UNREACHABLE,
    DRPCAuthorizationError,
    DRPCExecutionError,
)
from squall.drpc.server import DEFAULT_PORT

TOKEN_ENV = "SQUALL_DRPC_TOKEN"
TOKEN_KEY = "squall.drpc.token"
TOKEN_FILE_KEY = "squall.drpc.token.file"


def default_token_file() -> Path:
    """Where ``squall drpc`` keeps its token by default: ``$SQUALL_HOME/drpc.token``."""
    return Path(os.environ.get("SQUALL_HOME") or Path.home() / ".squall") / "drpc.token"


def token_from(conf: dict | None = None) -> str | None:
    """The DRPC token a topology or client uses.

    ``squall.drpc.token``, else the file ``squall.drpc.token.file``, else
    $SQUALL_DRPC_TOKEN, else ``$SQUALL_HOME/drpc.token`` when it exists.
    """
    conf = conf or {}
    if conf.get(TOKEN_KEY):
        return str(conf[TOKEN_KEY])
    path = conf.get(TOKEN_FILE_KEY)
    if path:
        return Path(path).read_text().strip()
    if os.environ.get(TOKEN_ENV):
        return os.environ[TOKEN_ENV]
    default = default_token_file()
    if default.is_file():
        return default.read_text().strip() or None
    return None


class _HttpClient:
    def __init__(self, host: str, port: int, token: str | None) -> None:
        if not token:
            raise ValueError(f"a DRPC client needs the server's token (pass token=, or set "
                             f"${TOKEN_ENV})")
        self.host, self.port = host, int(port)
        self._token = token

    def _post(self, path: str, body: dict, timeout: float | None) -> dict:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request("POST", path, json.dumps(body),
                         {"Authorization": f"Bearer {self._token}",
                          "Content-Type": "application/json"})
            resp = conn.getresponse()
            status = resp.status
            data = resp.read()
        except TimeoutError:
            raise DRPCExecutionError(
                f"no answer from the DRPC server {self.host}:{self.port} within {timeout:g} s",
                CLIENT_TIMEOUT) from None
        except OSError as e:
            raise DRPCExecutionError(
                f"cannot reach the DRPC server {self.host}:{self.port}: {e}", UNREACHABLE) from None
        except http.client.HTTPException as e:  # cut off mid-answer (a server stopping), or not HTTP
            raise DRPCExecutionError(
                f"the DRPC server {self.host}:{self.port} broke off its answer: "
                f"{type(e).__name__}: {e}", UNREACHABLE) from None
        finally:
            conn.close()
        try:
            reply: Any = json.loads(data or b"{}")
        except ValueError:
            reply = {}
        if not isinstance(reply, dict):
            reply = {}
        if status == 401:
            raise DRPCAuthorizationError(
                f"the DRPC server {self.host}:{self.port} refused the token")
        if status != 200:
            raise DRPCExecutionError(reply.get("error") or f"HTTP {status} from {path}",
                                     reply.get("type") or INTERNAL_ERROR)
        return reply


class DRPCClient(_HttpClient):
    """Calls DRPC functions on a ``squall drpc`` server.

    ``token`` defaults to ``$SQUALL_DRPC_TOKEN``, else the server's default token file
    ``$SQUALL_HOME/drpc.token`` (same machine). ``execute`` blocks for the result.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = DEFAULT_PORT, token: str | None = None,
                 timeout: float | None = None) -> None:
        super().__init__(host, port, token or token_from())
        self.timeout = timeout

    def execute(self, function: str, args: str, timeout: float | None = None) -> str:
        """``function(args)``'s result; ``DRPCExecutionError`` with the reason if it failed.

        ``timeout`` (seconds) bounds the wait; the server gives the request up at the same
        time (or at its own ``drpc.request.timeout.secs``, whichever comes first).
        """
        timeout = timeout if timeout is not None else self.timeout
        body: dict[str, Any] = {"function": function, "args": args}
        if timeout is not None:
            body["timeout"] = timeout
        # the socket waits a little longer than the server, so the server's reason wins
        reply = self._post("/drpc/execute", body, None if timeout is None else timeout + 5.0)
        return str(reply["result"])


class DRPCInvocationsClient(_HttpClient):
    """What a topology calls: fetch requests, return results, fail requests."""

    def __init__(self, host: str, port: int, token: str | None, timeout: float = 10.0) -> None:
        super().__init__(host, port, token)
        self.timeout = timeout

    def fetch_request(self, function: str, wait: float = 0.0) -> tuple[str, str] | None:
        """The next request of ``function`` as (id, args), or None; ``wait`` long-polls."""
        reply = self._post("/drpc/fetch", {"function": function, "wait": wait}, self.timeout + wait)
        return (str(reply["id"]), reply["args"]) if reply.get("id") else None

    def return_result(self, request_id: str, result: str) -> None:
        """Answer ``request_id``."""
        self._post("/drpc/result", {"id": request_id, "result": result}, self.timeout)

    def fail_request(self, request_id: str, reason: str | None = None) -> None:
        """Fail ``request_id`` (its caller gets ``DRPCExecutionError``)."""
        self._post("/drpc/fail", {"id": request_id, "reason": reason}, self.timeout)
