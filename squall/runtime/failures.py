"""Why a spout tuple tree failed, as the acker tells its spout task.

A bolt that fails a tuple (explicitly, or by raising from ``execute``) sends its acker the
failing component, task and error text along with the root; a tree that times out at the
spout has no such detail. A spout with a ``fail_with_reason(msg_id, failure)`` method
(``ReliableSpout``) receives this instead of ``fail(msg_id)`` and decides retries itself.
"""

from __future__ import annotations

import traceback
from typing import NamedTuple

TIMEOUT = "timeout"  # the tree did not complete within topology.message.timeout.secs
FAILED = "failed"    # a bolt called fail (or raised FailedException)
ERROR = "error"      # a bolt raised an exception from execute


class Failure(NamedTuple):
    """A failed tree: the reason, the error (text and traceback) and where it failed."""

    reason: str
    error: str | None = None
    component: str | None = None
    task: int | None = None


def describe(error: BaseException) -> str:
    """An exception's text and traceback, as a dead letter carries it."""
    return "".join(traceback.format_exception(type(error), error, error.__traceback__)).rstrip()


def from_detail(detail: list | tuple | None) -> Failure:
    """The failure a fail verdict's ``[component, task, error]`` detail describes."""
    if not detail:
        return Failure(FAILED)
    component, task, error = (list(detail) + [None, None, None])[:3]
    return Failure(ERROR if error is not None else FAILED, error, component, task)
