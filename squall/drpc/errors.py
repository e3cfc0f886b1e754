"""Errors of distributed RPC."""

from __future__ import annotations

# Storm's DRPCExceptionType values, plus the client's own timeout
SERVER_TIMEOUT = "SERVER_TIMEOUT"
SERVER_SHUTDOWN = "SERVER_SHUTDOWN"
FAILED_REQUEST = "FAILED_REQUEST"
INTERNAL_ERROR = "INTERNAL_ERROR"
CLIENT_TIMEOUT = "CLIENT_TIMEOUT"
UNREACHABLE = "UNREACHABLE"


class DRPCExecutionError(RuntimeError):
    """A DRPC request failed, timed out, or could not be delivered; ``type`` says which.

    ``type`` is one of ``SERVER_TIMEOUT`` (no result within ``drpc.request.timeout.secs``),
    ``FAILED_REQUEST`` (the request's tuple tree failed or timed out in the topology),
    ``SERVER_SHUTDOWN``, ``INTERNAL_ERROR``, ``CLIENT_TIMEOUT`` (the client's own
    ``timeout`` passed) or ``UNREACHABLE`` (no DRPC server answered).
    """

    def __init__(self, message: str, type: str = FAILED_REQUEST) -> None:  # noqa: A002 - Storm's name
        super().__init__(message)
        self.type = type


class DRPCAuthorizationError(PermissionError):
    """The DRPC server refused the token (missing or wrong)."""
