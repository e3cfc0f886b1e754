"""Submit-time checks of windowed bolts (Storm's ``WindowedBoltExecutor.validate``).

Windowed bolts keep their shape in their component configuration under Storm's keys, so
the check needs nothing but the topology's plain data: a tuple must be able to stay in its
windows without timing out, and a count window must fit under max spout pending.
"""

from __future__ import annotations

from typing import Any

from squall.api.errors import InvalidTopologyError

LENGTH_COUNT = "topology.bolts.window.length.count"
LENGTH_MS = "topology.bolts.window.length.duration.ms"
SLIDING_COUNT = "topology.bolts.window.sliding.interval.count"
SLIDING_MS = "topology.bolts.window.sliding.interval.duration.ms"
SESSION_GAP_MS = "squall.bolts.window.session.gap.ms"


def check_windows(conf: dict, topology: Any) -> None:
    """Raise ``InvalidTopologyError`` for a window that cannot keep its tuples acked in time."""
    timeouts = conf.get("topology.enable.message.timeouts", True)
    timeout_secs = float(conf.get("topology.message.timeout.secs") or 30)
    pending = conf.get("topology.max.spout.pending")
    for comp in topology.components.values():
        c = comp.conf
        if LENGTH_MS in c or SLIDING_MS in c or SESSION_GAP_MS in c:
            if timeouts is not False:
                _check_duration(comp.id, c, timeout_secs)
        if pending and (LENGTH_COUNT in c or SLIDING_COUNT in c):
            count = int(c.get(LENGTH_COUNT) or 0) + int(c.get(SLIDING_COUNT) or 0)
            if count > int(pending):
                raise InvalidTopologyError(
                    f"bolt {comp.id!r}: window count (length + sliding interval) {count} is "
                    f"more than topology.max.spout.pending {pending}: the spouts would stop "
                    f"before the window fills; raise max spout pending or shorten the window"
                )


def _check_duration(cid: str, c: dict, timeout_secs: float) -> None:
    if SESSION_GAP_MS in c:
        total = int(c[SESSION_GAP_MS])
        what = "session gap"
    else:
        total = int(c.get(LENGTH_MS) or 0) + int(c.get(SLIDING_MS) or 0)
        what = "window duration (length + sliding interval)"
    if total > timeout_secs * 1000:
        raise InvalidTopologyError(
            f"bolt {cid!r}: {what} {total} ms is more than topology.message.timeout.secs "
            f"{timeout_secs:g} s ({timeout_secs * 1000:g} ms): its tuples would time out "
            f"while still in the window; raise the timeout or shorten the window"
        )
