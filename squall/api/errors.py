"""Exceptions users see."""


class InvalidTopologyError(ValueError):
    """The topology cannot run as built; the message names the part and the fix."""


class FailedException(Exception):
    """Raised from ``BasicBolt.execute`` to fail the input tuple (it will be replayed)."""


class ReportedFailedException(FailedException):
    """Like ``FailedException``, and also reported as an error of the component."""


class TopologyStartError(RuntimeError):
    """A task could not be opened or prepared, so the topology did not start."""


class NotAliveError(KeyError):
    """No topology of that name is running."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "topology not alive"


class AlreadyAliveError(ValueError):
    """A topology of that name is already running."""
