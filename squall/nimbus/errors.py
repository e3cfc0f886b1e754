"""Nimbus's refusals: each carries the HTTP status and a machine-readable code.

The command line maps them to its exit codes (``squall.client.nimbus``): 400 and 500 -> 1,
401/403 -> 6, 404 -> 4, 409 -> 5; 503 from a standby sends the client to the leader.
"""

from __future__ import annotations


class NimbusError(Exception):
    """A request Nimbus refused or failed; the message is one line for the user."""

    status = 500
    code = "failed"

    def __init__(self, message: str, **extra: object) -> None:
        super().__init__(message)
        self.extra = extra

    def body(self) -> dict:
        """The JSON error body."""
        return {"error": str(self), "code": self.code, **self.extra}


class InvalidRequest(NimbusError):
    """Bad input: an invalid topology, configuration or argument."""

    status = 400
    code = "invalid"


class Unauthorized(NimbusError):
    """No token was given."""

    status = 401
    code = "unauthorized"


class Forbidden(NimbusError):
    """A wrong token was given."""

    status = 403
    code = "forbidden"


class NotFound(NimbusError):
    """No such topology (or route)."""

    status = 404
    code = "not_found"


class Conflict(NimbusError):
    """The request clashes with the topology's state: a taken name, an upgrade in progress."""

    status = 409
    code = "conflict"


class NotLeader(NimbusError):
    """The Nimbus asked is a standby; ``leader`` names the one to ask."""

    status = 503
    code = "not_leader"


class TooLarge(NimbusError):
    """The request's body is over the route's size limit (refused before it is read)."""

    status = 413
    code = "too_large"
