"""Nimbus's client of a topology master's control endpoint (``squall.spark.control``)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from squall.nimbus.errors import Conflict, InvalidRequest, NimbusError


class MasterUnreachable(NimbusError):
    """The topology master did not answer (it may be dead or still starting)."""

    status = 502
    code = "master_unreachable"


class NoControlRoute(NimbusError):
    """The topology master has no such control route: it runs an older squall."""


def call_master(control: str, secret: str, method: str, path: str, body: dict | None = None,
                timeout: float = 30.0) -> dict:
    """One control request; the master's refusals become ``NimbusError``s with its message."""
    data = json.dumps(body or {}).encode() if method == "POST" else None
    req = urllib.request.Request(f"{control}{path}", data=data, method=method,
                                 headers={"Authorization": f"Bearer {secret}",
                                          "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - our own master
            return json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as e:
        try:
            message = json.loads(e.read() or b"{}").get("error") or str(e)
        except ValueError:
            message = str(e)
        if e.code == 409:
            raise Conflict(message) from None
        if e.code == 400:
            raise InvalidRequest(message) from None
        if e.code == 404:
            raise NoControlRoute(f"topology master: {message}") from None
        raise NimbusError(f"topology master: {message}") from None
    except (OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        raise MasterUnreachable(f"the topology master at {control} did not answer: {reason}") from None
