"""Where a newly taken partition is first read from (Storm's ``doSeek``), pure."""

from __future__ import annotations

from squall.connectors.kafka.config import FirstPollOffsetStrategy as S


def start_offset(strategy: S, committed: int | None, committed_by_this_topology: bool,
                 earliest: int, latest: int) -> int:
    """The first offset to read.

    A commit by this topology (another task, or this task before a restart) is resumed from
    whatever the strategy; a commit by anyone else is resumed only by the UNCOMMITTED_*
    strategies; without a commit, EARLIEST-like strategies start at ``earliest``, LATEST-like
    at ``latest``.
    """
    if committed is not None:
        if committed_by_this_topology:
            return committed
        if strategy is S.EARLIEST:
            return earliest
        if strategy is S.LATEST:
            return latest
        return committed
    if strategy in (S.EARLIEST, S.UNCOMMITTED_EARLIEST):
        return earliest
    return latest
