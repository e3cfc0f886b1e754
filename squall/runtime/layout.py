"""Where two task plans differ: the check a gray upgrade makes, and the words of its refusal.

A gray upgrade runs two versions side by side, so the new version runs under the running
topology's layout: its worker count and parallelism (as rebalanced) are applied to the new
version (Nimbus records them, ``load_version`` applies them), and what is left to differ is
the code's: components, tasks, streams, and the keys of ``LAYOUT_KEYS`` that only the new
configuration says. ``layout_difference`` says which part differs and how ("tasks of
'__acker': running 3, new 1").

Apart from the worker count and parallelism, a gray upgrade takes the new submission's
configuration, as JStorm's does: the ``--conf`` overrides given when the running version was
submitted are not inherited. ``UPGRADE_CONF_NOTE`` says so in the refusal, and
``repeat_hint`` names the layout keys whose values the two versions disagree on. A hot
deploy takes the new submission's configuration whole, worker count and parallelism too.
"""

from __future__ import annotations

from typing import Any

from squall.runtime.plan import TaskPlan

UPGRADE_CONF_NOTE = ("a gray upgrade keeps the running worker count and parallelism and takes every "
                     "other key from the new version's configuration (as JStorm's): overrides given "
                     "at submit are not carried over")
# the configuration keys besides the worker count that decide a layout (ackers, tasks)
LAYOUT_KEYS = ("topology.acker.executors", "topology.tasks", "topology.max.task.parallelism")


def part_difference(part: str, running: Any, new: Any) -> str | None:
    """``"workers: running 3, new 2"``, or None when the two are equal.

    >>> part_difference("workers", 3, 2)
    'workers: running 3, new 2'
    """
    return None if running == new else f"{part}: running {running}, new {new}"


def _streams(plan: TaskPlan, cid: str) -> dict[str, Any]:
    return {s: (tuple(d.fields), d.direct) for s, d in sorted((plan.streams.get(cid) or {}).items())}


def layout_difference(running: TaskPlan, new: TaskPlan) -> str | None:
    """None if a gray upgrade may run ``new`` beside ``running``, else every part that differs.

    Which worker holds which executor is the scheduler's choice for the running plan; a new
    version's workers run under that plan, so it is not compared.
    """
    parts = [part_difference("workers", running.num_workers, new.num_workers)]
    a, b = running.component_tasks, new.component_tasks
    added, removed = sorted(set(b) - set(a)), sorted(set(a) - set(b))
    if added or removed:
        parts.append(f"components: added {added or 'none'}, removed {removed or 'none'}")
    execs_a = {c: sum(1 for e in running.executors if e.component == c) for c in a}
    execs_b = {c: sum(1 for e in new.executors if e.component == c) for c in b}
    for cid in sorted(set(a) & set(b)):
        if cid.startswith("__") and parts[0]:
            continue  # squall's own per-worker tasks follow the workers, already named
        parts.append(part_difference(f"tasks of {cid!r}", len(a[cid]), len(b[cid]))
                     or part_difference(f"task ids of {cid!r}", a[cid], b[cid])
                     or part_difference(f"executors of {cid!r}", execs_a[cid], execs_b[cid]))
        if _streams(running, cid) != _streams(new, cid):
            parts.append(f"streams of {cid!r}: running {_streams(running, cid)}, new {_streams(new, cid)}")
    found = [p for p in parts if p]
    return "; ".join(found) if found else None


def repeat_hint(running_conf: dict, new_conf: dict) -> str:
    """The layout keys whose values differ, as the ``--conf`` to repeat (empty if none).

    >>> repeat_hint({"topology.acker.executors": 3}, {"topology.acker.executors": 1})
    'repeat --conf topology.acker.executors=3 to keep the running value'
    """
    keys = [k for k in LAYOUT_KEYS
            if running_conf.get(k) is not None and running_conf.get(k) != new_conf.get(k)]
    if not keys:
        return ""
    flags = " ".join(f"--conf {k}={running_conf[k]}" for k in keys)
    return f"repeat {flags} to keep the running value{'s' if len(keys) > 1 else ''}"


def upgrade_refusal(version: int, difference: str, running_conf: dict, new_conf: dict) -> str:
    """The one-line refusal of a gray upgrade to ``version`` whose layout differs."""
    hint = repeat_hint(running_conf, new_conf)
    return (f"version {version} does not have the running topology's shape ({difference}); "
            f"{UPGRADE_CONF_NOTE}{'; ' + hint if hint else ''}")
