"""``FluxError``: a YAML topology that cannot be built, with the file and line to fix."""

from __future__ import annotations

from squall.api.errors import InvalidTopologyError


class FluxError(InvalidTopologyError):
    """A mistake in a YAML topology; the message starts with ``file:line:``."""

    def __init__(self, file: str, line: int | None, message: str) -> None:
        self.file = file
        self.line = line
        where = f"{file}:{line}" if line else file
        super().__init__(f"{where}: {message}")
