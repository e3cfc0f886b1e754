"""JStorm's task records in the store: task heartbeats and start times, errors, the assignment.

JStorm keeps each task's heartbeat, the errors its tasks reported and the topology's
assignment in ZooKeeper, so that they outlive any daemon. squall's topology master writes
the same records with its own heartbeat (once a second), each tagged with its epoch:

- ``taskbeats/<name>``: per task, its component, worker, process id, start time (when its
  current process started it), latest heartbeat, latest progress and counters. About 280
  bytes per task: past ``BEATS_PART_BYTES`` the tasks are split into parts, the first at
  ``taskbeats/<name>`` (with ``parts``, their number) and the others at
  ``taskbeats/<name>/<i>`` (``beats_records``, ``read_beats``), so that 10,000 tasks fit
  ZooKeeper's nodes;
- ``taskerrors/<name>``: the newest ``ERRORS_KEPT`` errors, messages cut to their first
  ``MESSAGE_CHARS`` characters and tracebacks to their last ``TRACEBACK_CHARS``, and only
  as many as fit in ``RECORD_BYTES`` of JSON (a ZooKeeper node holds at most 1 MiB, and a
  message may echo a large input);
- ``assignments/<name>``: per worker, the host it runs on (or was assigned) and its tasks.

A relaunched master reads them back: its errors and task heartbeats carry on from them, and
the stored assignment is the previous one for ``squall.use.old.assignment``. Nimbus shows the
stored tasks and errors while no master of the topology answers. Times are epoch seconds.

>>> rec = beats_record(2, [{"task": 1, "component": "split", "last_heartbeat": 100.0,
...                         "last_progress": 90.0, "heartbeat_age_secs": 0.5, "idle_secs": 10.5}], 100.0)
>>> [(t["task"], t["heartbeat_age_secs"], t["idle_secs"]) for t in tasks_from(rec, 130.0)]
[(1, 30.0, 40.0)]
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from squall.store.keys import taskbeats_key, taskbeats_part_key

ERRORS_KEPT = 100
MESSAGE_CHARS = 1200  # the reporting worker cuts at 1000, plus its note of errors not reported
TRACEBACK_CHARS = 4000
RECORD_BYTES = 512 * 1024  # half of ZooKeeper's default node limit (jute.maxbuffer, 1 MiB)
# a part of the task heartbeats: half the 512 KB target per record, so that task entries that
# grow (longer names, more counters) stay under it; 10,000 tasks take about 14 parts
BEATS_PART_BYTES = 250_000
BEATS_GROUP = 64  # task entries sized with one JSON dump (``beats_records``)
AGES = ("heartbeat_age_secs", "idle_secs")  # counted afresh by whoever reads the record


def beats_record(epoch: int, tasks: Iterable[dict], now: float) -> dict:
    """``taskbeats/<name>``'s value for the master's task report ``tasks``."""
    return {"epoch": epoch, "time": now,
            "tasks": {str(t["task"]): {k: v for k, v in t.items() if k not in AGES} for t in tasks}}


def beats_records(epoch: int, tasks: Iterable[dict], now: float) -> list[dict]:
    """``beats_record`` in parts of at most ``BEATS_PART_BYTES`` of JSON each; the first says how many.

    >>> parts = beats_records(1, [{"task": t, "component": "c" * 1000} for t in range(1200)], 0.0)
    >>> len(parts), parts[0]["parts"], sum(len(p["tasks"]) for p in parts)
    (5, 5, 1200)
    """
    whole = beats_record(epoch, tasks, now)["tasks"]
    parts: list[dict] = [{}]
    size = 0
    limit = BEATS_PART_BYTES - 200  # 200: the record's other fields
    items = list(whole.items())
    # sized a group of entries at a time (one dump per group, not per entry: 10,000 tasks every
    # 5 s); a group's JSON is exactly the sum of its entries' (``"key": value, `` each)
    for start in range(0, len(items), BEATS_GROUP):
        group = items[start:start + BEATS_GROUP]
        group_bytes = len(json.dumps(dict(group)))
        if size + group_bytes <= limit:
            parts[-1].update(group)
            size += group_bytes
            continue
        for key, entry in group:  # the group straddles a part's end: entry by entry
            entry_bytes = len(json.dumps(entry)) + len(key) + 6
            if size + entry_bytes > limit and parts[-1]:
                parts.append({})
                size = 0
            parts[-1][key] = entry
            size += entry_bytes
    out = [{"epoch": epoch, "time": now, "tasks": p} for p in parts]
    out[0]["parts"] = len(out)
    return out


def read_beats(store: Any, name: str) -> dict | None:
    """``taskbeats/<name>`` with the tasks of all its parts (of the same epoch), or None."""
    head = store.get(taskbeats_key(name))
    if not isinstance(head, dict) or not isinstance(head.get("tasks"), dict):
        return head
    tasks = dict(head["tasks"])
    parts = head.get("parts")
    for i in range(1, parts if isinstance(parts, int) else 1):
        part = store.get(taskbeats_part_key(name, i))
        same = isinstance(part, dict) and part.get("epoch") == head.get("epoch")
        if same and isinstance(part.get("tasks"), dict):
            tasks.update(part["tasks"])
    return {**head, "tasks": tasks}


def delete_beat_parts(store: Any, name: str) -> None:
    """Delete the parts ``taskbeats/<name>/<i>`` (with the topology's other records)."""
    for last in store.children(taskbeats_key(name)):
        store.delete(f"{taskbeats_key(name)}/{last}")


def tasks_from(record: Any, now: float) -> list[dict]:
    """The stored tasks as the master reports them, by task id, their ages counted to ``now``."""
    tasks = record.get("tasks") if isinstance(record, dict) else None
    if not isinstance(tasks, dict):
        return []
    out = []
    for key in sorted(tasks, key=lambda k: int(k) if str(k).isdigit() else -1):
        t = dict(tasks[key]) if isinstance(tasks[key], dict) else {}
        t["task"] = int(key) if str(key).isdigit() else key
        for age, stamp in (("heartbeat_age_secs", "last_heartbeat"), ("idle_secs", "last_progress")):
            when = t.get(stamp)
            t[age] = round(max(0.0, now - float(when)), 3) if isinstance(when, int | float) else None
        out.append(t)
    return out


def errors_record(epoch: int, errors: Iterable[dict]) -> dict:
    """``taskerrors/<name>``'s value: the newest ``ERRORS_KEPT`` of ``errors`` (oldest first), cut.

    Newest first until ``RECORD_BYTES`` of JSON (as the stores write it, non-ASCII escaped):
    the record stays well inside a ZooKeeper node whatever the errors hold.
    """
    kept: list[dict] = []
    size = 0
    for e in reversed(list(errors)[-ERRORS_KEPT:]):
        message = str(e.get("message") or "")
        if len(message) > MESSAGE_CHARS:
            message = f"{message[:MESSAGE_CHARS]}... ({len(message) - MESSAGE_CHARS} more characters)"
        entry = {**e, "message": message, "traceback": str(e.get("traceback") or "")[-TRACEBACK_CHARS:]}
        size += len(json.dumps(entry)) + 2
        if size > RECORD_BYTES:
            break
        kept.append(entry)
    return {"epoch": epoch, "errors": kept[::-1]}


def errors_from(record: Any) -> list[dict]:
    """The stored errors, oldest first (none if the record is not one)."""
    errors = record.get("errors") if isinstance(record, dict) else None
    return [e for e in errors if isinstance(e, dict)] if isinstance(errors, list) else []


def assignment_record(epoch: int, workers: list[dict], now: float) -> dict:
    """``assignments/<name>``'s value; ``workers``: per worker ``{"host", "tasks": {id: component}}``."""
    return {"epoch": epoch, "time": now,
            "workers": [{"worker": i, **w} for i, w in enumerate(workers)]}
