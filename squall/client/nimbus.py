"""The HTTP client of Nimbus (stdlib ``urllib``, JSON): the command line's and ``submit_topology``'s.

Where Nimbus is: ``--nimbus URL``, else ``$SQUALL_NIMBUS``, else what the cluster
configuration file says (``squall.nimbus.url``, or Storm's ``nimbus.seeds`` and
``nimbus.thrift.port``; the file is ``$SQUALL_CONF`` or ``~/.squall/squall.yaml``), else
http://127.0.0.1:6627;
several comma-separated URLs are tried in turn (for Nimbus HA), and a standby's 503 sends
the request on to the leader it names, but only if that leader is one of those URLs: the
token never goes to a server the user did not name (a forged leader record, or whoever
answers in a standby's place, cannot redirect it). The token: ``$SQUALL_TOKEN``, else the file
``--token-file``, ``$SQUALL_TOKEN_FILE`` or ``$SQUALL_HOME/nimbus.token`` (``~/.squall``);
it is sent with every request (reads without it show no errors or paths), and only to
the configured URLs.
"""

from __future__ import annotations

import getpass
import json
import os
import stat
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from squall.client.exits import CliError, ExitCode, exit_for_status
from squall.nimbus.config import DEFAULT_PORT, squall_home

DEFAULT_URL = f"http://127.0.0.1:{DEFAULT_PORT}"


def nimbus_urls(option: str | None) -> list[str]:
    """The Nimbus URLs to try, from the option, the environment or the cluster file."""
    raw = option or os.environ.get("SQUALL_NIMBUS")
    if not raw:
        from squall.nimbus import clusterconf
        from squall.nimbus.config import CONF_KEYS

        path = clusterconf.default_path(squall_home())
        if path is not None:
            try:
                urls = clusterconf.read(path, set(CONF_KEYS)).urls
            except clusterconf.ClusterConfError as e:
                raise CliError(ExitCode.USAGE, str(e)) from None
            if urls:
                return urls
        raw = DEFAULT_URL
    return [u.strip().rstrip("/") for u in raw.split(",") if u.strip()]


def user_name() -> str:
    """Who runs the command, as Nimbus's action notifier is told."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def read_token(token_file: str | None) -> str | None:
    """The token from ``$SQUALL_TOKEN`` or the token file; None if there is none.

    A token file that others can read (or write) is refused, as ssh refuses such a key:
    ``CliError`` with the ``chmod`` that fixes it.
    """
    token = os.environ.get("SQUALL_TOKEN")
    if token:
        return token.strip()
    path = Path(token_file or os.environ.get("SQUALL_TOKEN_FILE") or squall_home() / "nimbus.token")
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    with os.fdopen(fd) as f:
        mode = os.fstat(fd).st_mode
        if mode & 0o077:
            raise CliError(ExitCode.AUTH, f"the token file {path} can be read by others (mode "
                                          f"{stat.S_IMODE(mode):o}); run: chmod 600 {path}")
        try:
            return f.read().strip() or None
        except (OSError, UnicodeDecodeError):
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
        """POST ``body`` to ``/api/v1`` + ``path``."""
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
                leader = _normal(e.leader) if e.leader else None
                if leader and leader not in {_normal(u) for u in self.urls}:
                    reasons.append(f"{url}: a standby naming leader {e.leader}, which is not one of "
                                   f"the configured Nimbus URLs (add it to --nimbus or $SQUALL_NIMBUS "
                                   f"to follow it)")
                    continue
                if leader and leader != _normal(url):
                    try:
                        return self._once(leader, method, path, body, timeout, auth)
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
        if self.token:  # reads too: errors and details are shown to the token's holder only
            headers["Authorization"] = f"Bearer {self.token}"
        if method == "POST":
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
            headers["X-Squall-User"] = user_name()
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


def _normal(url: str) -> str:
    """``url`` compared as a Nimbus address: scheme and host lower case, no trailing slash."""
    parts = urlsplit(url.strip())
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), "", ""))


class _Unreachable(Exception):
    pass


class _Standby(Exception):
    def __init__(self, message: str, leader: str | None) -> None:
        super().__init__(message)
        self.leader = leader
