"""The command line's HTTP client of Nimbus (stdlib ``urllib``, JSON).

Where Nimbus is: ``--nimbus URL``, else ``$SQUALL_NIMBUS``, else http://127.0.0.1:6627;
several comma-separated URLs are tried in turn (for Nimbus HA), and a standby's 503 sends
the request on to the leader it names. The token: ``$SQUALL_TOKEN``, else the file
``--token-file``, ``$SQUALL_TOKEN_FILE`` or ``$SQUALL_HOME/nimbus.token`` (``~/.squall``);
it is sent only with requests that change something or read logs.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from squall.cli.exits import CliError, ExitCode, exit_for_status
from squall.nimbus.config import DEFAULT_PORT, squall_home

DEFAULT_URL = f"http://127.0.0.1:{DEFAULT_PORT}"


def nimbus_urls(option: str | None) -> list[str]:
    """The Nimbus URLs to try, from the option or the environment."""
    raw = option or os.environ.get("SQUALL_NIMBUS") or DEFAULT_URL
    return [u.strip().rstrip("/") for u in raw.split(",") if u.strip()]


def read_token(token_file: str | None) -> str | None:
    """The token from ``$SQUALL_TOKEN`` or the token file; None if there is none."""
    token = os.environ.get("SQUALL_TOKEN")
    if token:
        return token.strip()
    path = Path(token_file or os.environ.get("SQUALL_TOKEN_FILE") or squall_home() / "nimbus.token")
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


class NimbusClient:
    """Requests to Nimbus; every failure is a ``CliError`` with the right exit code."""

    def __init__(self, urls: list[str], token: str | None, timeout: float = 30.0) -> None:
        self.urls = urls
        self.token = token
        self.timeout = timeout

    def get(self, path: str, timeout: float | None = None, *, auth: bool = False) -> Any:
        """GET ``/api/v1`` + ``path`` (with the token if ``auth``: logs need it)."""
        return self._request("GET", path, None, timeout, auth)

    def post(self, path: str, body: dict | None = None, timeout: float | None = None) -> Any:
        """POST ``body`` to ``/api/v1`` + ``path`` with the token."""
        return self._request("POST", path, body or {}, timeout)

    def _request(self, method: str, path: str, body: dict | None, timeout: float | None,
                 auth: bool = False) -> Any:
        reasons = []
        for url in self.urls:
            try:
                return self._once(url, method, path, body, timeout, auth)
            except _Unreachable as e:
                reasons.append(f"{url}: {e}")
            except _Standby as e:
                if e.leader and e.leader.rstrip("/") != url:
                    try:
                        return self._once(e.leader.rstrip("/"), method, path, body, timeout, auth)
                    except _Unreachable as e2:
                        reasons.append(f"leader {e.leader}: {e2}")
                        continue
                    except _Standby:
                        pass
                reasons.append(f"{url}: {e}")
        raise CliError(ExitCode.UNREACHABLE, f"cannot reach a Nimbus leader ({'; '.join(reasons)})")

    def _once(self, url: str, method: str, path: str, body: dict | None, timeout: float | None,
              auth: bool = False) -> Any:
        headers = {"Accept": "application/json"}
        data = None
        if method == "POST":
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if (method == "POST" or auth) and self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        req = urllib.request.Request(f"{url}/api/v1{path}", data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.timeout) as resp:  # noqa: S310
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as e:
            try:
                err = json.loads(e.read() or b"{}")
            except ValueError:
                err = {}
            message = err.get("error") or f"HTTP {e.code} {e.reason}"
            if e.code == 503 and err.get("code") == "not_leader":
                raise _Standby(message, err.get("leader")) from None
            raise CliError(exit_for_status(e.code), message) from None
        except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
            reason = getattr(e, "reason", e)
            raise _Unreachable(str(reason)) from None


class _Unreachable(Exception):
    pass


class _Standby(Exception):
    def __init__(self, message: str, leader: str | None) -> None:
        super().__init__(message)
        self.leader = leader
