"""The gray upgrade's bookkeeping (seed 001, 灰度发布): pure functions of its record.

An open gray upgrade is a JSON object in the topology's record (``rec["upgrade"]``):
``from`` and ``to`` (code versions), ``workers`` (the worker indices on ``to``), ``since``
(worker index -> when it started running ``to``), ``batches`` (each ``workers``, ``asked``,
``finished`` or None, ``error``), ``selector`` (what the next batch picks when the operator
names nothing: the last worker count and component, never a list of workers, which JStorm
clears once those workers are upgraded), ``started``, ``updated`` (the last progress) and
``expire_secs``.

Its state, as JStorm's ``GrayUpgradeConfig`` knows it:

- ``IN_PROGRESS``: a batch is being moved (Nimbus waits for its workers);
- ``BATCH_FINISHED``: the batch runs; the operator watches, then continues, completes or
  rolls back (JStorm's ``continueUpgrading`` is false);
- ``EXPIRED``: nothing happened for ``expire_secs`` (``topology.upgrade.expire.secs``,
  default ``DEFAULT_EXPIRE_SECS``): the upgrade no longer blocks a rebalance or a new
  upgrade, and the workers keep the code they run until one of those (or a rollback or
  complete-upgrade) moves them. The leader's monitor decides it (``is_expired``) on
  time it measures on its monotonic clock once it has seen the upgrade's last progress,
  so a wall-clock jump does not expire every upgrade at once (RELIABILITY C12);
- ``COMPLETED`` and ``ROLLED_BACK``: over; kept as ``rec["last_upgrade"]`` for ``info``.

Times are seconds since the epoch, read from ``squall.runtime.clock`` by the callers.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from squall.nimbus.errors import InvalidRequest

IN_PROGRESS = "IN_PROGRESS"
BATCH_FINISHED = "BATCH_FINISHED"
EXPIRED = "EXPIRED"
COMPLETED = "COMPLETED"
ROLLED_BACK = "ROLLED_BACK"
OPEN = (IN_PROGRESS, BATCH_FINISHED)

WORKER_NUM = "topology.upgrade.worker.num"
COMPONENT = "topology.upgrade.component"
WORKERS = "topology.upgrade.workers"
EXPIRE_SECS = "topology.upgrade.expire.secs"
DEFAULT_EXPIRE_SECS = 1800.0
UPGRADE_KEYS = (WORKER_NUM, COMPONENT, WORKERS, EXPIRE_SECS)


# ---- the selector -----------------------------------------------------------------------

def selector_from_conf(conf: Mapping[str, Any]) -> dict:
    """The gray selector the ``topology.upgrade.*`` keys of a configuration ask for ({} if none).

    ``topology.upgrade.workers`` is a list (or a comma-separated string) of ``host:port`` or
    worker numbers; ``topology.upgrade.component`` a component id;
    ``topology.upgrade.worker.num`` a positive count (0, as in JStorm, means "not set").

    >>> selector_from_conf({"topology.upgrade.worker.num": 2})
    {'worker_num': 2}
    >>> selector_from_conf({"topology.upgrade.workers": "h:1, h:2"})
    {'workers': ['h:1', 'h:2']}
    """
    out: dict[str, Any] = {}
    workers = conf.get(WORKERS)
    if workers not in (None, "", []):
        if isinstance(workers, str):
            workers = [w.strip() for w in workers.split(",") if w.strip()]
        if not isinstance(workers, list) or not all(isinstance(w, (str, int)) and not isinstance(w, bool)
                                                    for w in workers):
            raise InvalidRequest(f"config {WORKERS} must be a list of host:port or worker numbers, "
                                 f"got {conf.get(WORKERS)!r}")
        out["workers"] = [str(w) for w in workers]
    component = conf.get(COMPONENT)
    if component not in (None, ""):
        if not isinstance(component, str):
            raise InvalidRequest(f"config {COMPONENT} must be a component id, got {component!r}")
        out["component"] = component
    num = conf.get(WORKER_NUM)
    if num not in (None, 0):
        if isinstance(num, bool) or not isinstance(num, int) or num < 0:
            raise InvalidRequest(f"config {WORKER_NUM} must be a positive integer, got {num!r}")
        out["worker_num"] = num
    return out


def expire_secs(conf: Mapping[str, Any]) -> float:
    """``topology.upgrade.expire.secs`` of ``conf`` (``DEFAULT_EXPIRE_SECS`` if unset)."""
    value = conf.get(EXPIRE_SECS)
    if value is None:
        return DEFAULT_EXPIRE_SECS
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise InvalidRequest(f"config {EXPIRE_SECS} must be a positive number of seconds, got {value!r}")
    return float(value)


def select_workers(workers: list[dict], component_tasks: dict[str, list[int]], selector: dict,
                   upgraded: set[int], rng: random.Random | None = None) -> list[int]:
    """The workers a gray upgrade's batch picks; ``InvalidRequest`` if none.

    As seed 001 orders them: listed workers win (numbers or ``host:port``); else the
    workers running ``component``, ``worker_num`` of them (the lowest-numbered) or all;
    else ``worker_num`` workers chosen at random. Workers already ``upgraded`` are not
    picked again except by name.

    >>> ws = [{"worker": 0, "address": "tcp://h:1", "tasks": [1, 3]},
    ...       {"worker": 1, "address": "tcp://h:2", "tasks": [2, 4]}]
    >>> select_workers(ws, {"count": [3, 4]}, {"worker_num": 1}, {0})
    [1]
    >>> select_workers(ws, {"count": [3, 4]}, {"workers": ["h:2"]}, set())
    [1]
    """
    by_address = {w["address"].removeprefix("tcp://"): w["worker"] for w in workers if w.get("address")}
    indices = [w["worker"] for w in workers]
    listed = selector.get("workers")
    if listed:
        chosen = []
        for item in listed:
            item = str(item).strip()
            if item.isdigit() and int(item) in indices:
                chosen.append(int(item))
            elif item in by_address:
                chosen.append(by_address[item])
            else:
                known = ", ".join(sorted(by_address)) or "none running"
                raise InvalidRequest(f"gray upgrade: no worker {item!r}; workers are 0..{len(indices) - 1} "
                                     f"or host:port of {known}")
        return sorted(set(chosen))
    candidates = [i for i in indices if i not in upgraded]
    component = selector.get("component")
    num = selector.get("worker_num")
    if num is not None and (isinstance(num, bool) or not isinstance(num, int) or num < 1):
        raise InvalidRequest(f"gray upgrade: the worker count must be a positive integer, got {num!r}")
    if component:
        if component not in component_tasks or component.startswith("__"):
            raise InvalidRequest(f"gray upgrade: no component {component!r}; components: "
                                 f"{', '.join(sorted(c for c in component_tasks if not c.startswith('__')))}")
        tasks = set(component_tasks[component])
        candidates = [w["worker"] for w in workers if w["worker"] in candidates and tasks & set(w["tasks"])]
        if num is not None:
            candidates = candidates[:num]
    elif num is not None:
        if num < len(candidates):
            candidates = (rng or random.Random()).sample(candidates, num)
    else:
        raise InvalidRequest("gray upgrade needs workers, a component or a worker count (--workers, "
                             f"--component, --worker-num or {WORKERS}, {COMPONENT}, {WORKER_NUM})")
    if not candidates:
        left = sorted(set(indices) - upgraded)
        raise InvalidRequest(f"gray upgrade: no worker left to upgrade that matches "
                             f"(not yet upgraded: {left or 'none'})")
    return sorted(candidates)


# ---- the record -------------------------------------------------------------------------

def begin(from_version: int, to_version: int, selector: dict, expire: float, now: float) -> dict:
    """A new upgrade record, no batch yet."""
    return {"from": from_version, "to": to_version, "workers": [], "since": {}, "batches": [],
            "selector": next_selector(selector), "state": IN_PROGRESS, "started": now,
            "updated": now, "expire_secs": expire}


def next_selector(selector: dict) -> dict:
    """What a continuation without a selector reuses: the count and component, not a list."""
    return {k: v for k, v in selector.items() if k in ("worker_num", "component")}


def ask_batch(up: dict, workers: list[int], selector: dict, now: float) -> dict:
    """``up`` with a new batch of ``workers`` being moved."""
    batch = {"workers": workers, "asked": now, "finished": None, "error": None}
    return {**up, "batches": [*up["batches"], batch], "state": IN_PROGRESS, "updated": now,
            "selector": next_selector(selector) or up.get("selector") or {}}


def finish_batch(up: dict, running_new: list[int], now: float, error: str | None = None) -> dict:
    """``up`` once its last batch is over: ``running_new`` are the workers now on ``to``."""
    since = dict(up["since"])
    for w in running_new:
        since.setdefault(str(w), now)
    since = {k: v for k, v in since.items() if int(k) in running_new}
    batches = list(up["batches"])
    if batches:
        batches[-1] = {**batches[-1], "finished": now, "error": error}
    return {**up, "workers": sorted(running_new), "since": since, "batches": batches,
            "state": BATCH_FINISHED, "updated": now}


def state_of(up: Mapping[str, Any] | None) -> str | None:
    """The upgrade's state as recorded (None without an upgrade)."""
    return up.get("state", BATCH_FINISHED) if up else None


def is_open(up: Mapping[str, Any] | None) -> bool:
    """True while an upgrade blocks rebalances and other upgrades (open, not expired)."""
    return state_of(up) in OPEN


def is_expired(up: Mapping[str, Any] | None, idle_secs: float) -> bool:
    """Whether an open upgrade that made no progress for ``idle_secs`` has expired."""
    if not up or not is_open(up):
        return False
    return idle_secs > float(up.get("expire_secs", DEFAULT_EXPIRE_SECS))


def expire(up: dict, now: float) -> dict:
    """``up`` marked ``EXPIRED``."""
    return {**up, "state": EXPIRED, "expired": now}


def ended(up: dict, state: str, now: float) -> dict:
    """The record of an upgrade that is over (``COMPLETED`` or ``ROLLED_BACK``)."""
    return {**up, "state": state, "updated": now, "ended": now}


def versions_text(up: Mapping[str, Any], num_workers: int) -> str:
    """Which workers run which code, in one phrase.

    >>> versions_text({"from": 1, "to": 2, "workers": [0, 2]}, 4)
    'workers [0, 2] on version 2, [1, 3] on version 1'
    """
    old = [i for i in range(num_workers) if i not in up["workers"]]
    return f"workers {up['workers']} on version {up['to']}, {old} on version {up['from']}"


def describe(up: Mapping[str, Any] | None, num_workers: int, now: float) -> dict | None:
    """What ``info`` shows of an upgrade: state, versions per worker and since when."""
    if not up:
        return None
    state = state_of(up)
    upgraded = list(up["workers"])
    out = {
        "state": state, "from": up["from"], "to": up["to"], "workers": upgraded,
        "old_workers": [i for i in range(num_workers) if i not in upgraded],
        "since": {int(k): v for k, v in up.get("since", {}).items()},
        "batches": up.get("batches", []), "started": up.get("started"), "updated": up.get("updated"),
        "expire_secs": up.get("expire_secs"), "ended": up.get("ended"),
    }
    if state in OPEN:
        out["expires_at"] = float(up["updated"]) + float(up.get("expire_secs", DEFAULT_EXPIRE_SECS))
    return out
