"""Exit codes of the ``squall`` command, which scripts can rely on.

=====  =================================================================
code   meaning
=====  =================================================================
0      success
1      error: Nimbus refused or failed the operation (an invalid topology,
       a topology that did not start), or the topology file failed
2      usage: bad arguments, a missing file, a file with no topology in it
3      Nimbus unreachable
4      not found: no topology of that name
5      conflict: the name is taken, an upgrade is in progress, busy
6      authentication: the token is missing or wrong
=====  =================================================================
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """See the module docstring."""

    OK = 0
    ERROR = 1
    USAGE = 2
    UNREACHABLE = 3
    NOT_FOUND = 4
    CONFLICT = 5
    AUTH = 6


class CliError(Exception):
    """Ends the command with ``code`` after printing the message as one line on stderr."""

    def __init__(self, code: ExitCode, message: str) -> None:
        super().__init__(message)
        self.code = code


HTTP_EXIT = {400: ExitCode.ERROR, 401: ExitCode.AUTH, 403: ExitCode.AUTH, 404: ExitCode.NOT_FOUND,
             409: ExitCode.CONFLICT}


def exit_for_status(status: int) -> ExitCode:
    """The exit code for an HTTP error status from Nimbus.

    >>> exit_for_status(409).name
    'CONFLICT'
    >>> exit_for_status(502).name
    'ERROR'
    """
    return HTTP_EXIT.get(status, ExitCode.ERROR)
