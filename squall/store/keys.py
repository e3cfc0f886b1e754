"""Store keys and record fields shared by Nimbus and the topology masters it launches.

``topologies/<name>``: the topology record, written by Nimbus (and, for its own
progress, by the topology master): id, secret, status, versions, worker count and
parallelism overrides, the gray upgrade in progress, and the master's launch ``epoch``.

``masters/<name>``: written only by the topology master of the record's current epoch:
its control endpoint, pid, state (STARTING, RUNNING, FAILED, STOPPED), a heartbeat
counter ``beat``, a summary of its figures, and each worker's code version.

``taskbeats/<name>``, ``taskerrors/<name>`` and ``assignments/<name>`` (JStorm's
``/taskbeats``, ``/taskerrors`` and ``/assignments``): each task's start time and latest
heartbeat, the errors the tasks reported, and where each worker runs with its tasks; written
by the topology master with its heartbeat and kept across its relaunches
(``squall.store.taskrecords``).

``statekeys/<name>``: the key that tags topology ``name``'s pickled state values
(``squall.state.codec``), made by its first master and kept across kills and resubmits.

A master whose epoch is no longer the record's (Nimbus relaunched it, or the topology
was killed) stops its workers and exits: that fences a master Nimbus gave up for dead.
"""

from __future__ import annotations

import re
from typing import Any

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
# what Nimbus makes at submit: <name>-<seconds>-<6 hex digits>; never a path
TOPOLOGY_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}-[0-9]{1,12}-[0-9a-f]{6}")
SECRET = re.compile(r"[0-9a-f]{64}")

TOPOLOGIES = "topologies"
MASTERS = "masters"
STATE_KEYS = "statekeys"
TASKBEATS = "taskbeats"
TASKERRORS = "taskerrors"
ASSIGNMENTS = "assignments"

# topology status, as Storm's
ACTIVE = "ACTIVE"
INACTIVE = "INACTIVE"
REBALANCING = "REBALANCING"
UPGRADING = "UPGRADING"
KILLED = "KILLED"

# the topology master's own state
STARTING = "STARTING"
RUNNING = "RUNNING"
FAILED = "FAILED"
STOPPED = "STOPPED"


def topology_key(name: str) -> str:
    """The key of topology ``name``'s record."""
    return f"{TOPOLOGIES}/{name}"


def state_key_key(name: str) -> str:
    """The key of topology ``name``'s state key (kept after a kill: its state outlives it)."""
    return f"{STATE_KEYS}/{name}"


def taskbeats_key(name: str) -> str:
    """The key of topology ``name``'s task heartbeats and start times."""
    return f"{TASKBEATS}/{name}"


def taskbeats_part_key(name: str, part: int) -> str:
    """The key of part ``part`` (from 1) of topology ``name``'s task heartbeats (``taskrecords``)."""
    return f"{TASKBEATS}/{name}/{part}"


def task_errors_key(name: str) -> str:
    """The key of the errors topology ``name``'s tasks reported (the newest kept)."""
    return f"{TASKERRORS}/{name}"


def assignment_key(name: str) -> str:
    """The key of topology ``name``'s assignment: each worker's host and tasks."""
    return f"{ASSIGNMENTS}/{name}"


def task_record_keys(name: str) -> tuple[str, str, str]:
    """The keys of JStorm's records of topology ``name`` (deleted with the topology)."""
    return taskbeats_key(name), task_errors_key(name), assignment_key(name)


def master_key(name: str) -> str:
    """The key of topology ``name``'s master registration."""
    return f"{MASTERS}/{name}"


class RecordError(ValueError):
    """A record read from the store is malformed (forged or corrupted); the message says how."""


def check_topology_id(topology_id: Any) -> str:
    """``topology_id`` if it has the form Nimbus gives ids, else ``ValueError``.

    >>> check_topology_id("wc-1700000000-a1b2c3")
    'wc-1700000000-a1b2c3'
    """
    if not isinstance(topology_id, str) or not TOPOLOGY_ID.fullmatch(topology_id):
        raise ValueError(f"{topology_id!r} is not a topology id")
    return topology_id


def check_record(name: str, rec: Any) -> dict:
    """The topology record of ``name`` if well-formed, else ``RecordError`` naming the field.

    What later becomes a path (``id``, ``name``), a key (``secret``) or a number is checked:
    whoever could write the store must not steer Nimbus to files outside its blob store.
    """
    def bad(field: str, value: Any) -> RecordError:
        return RecordError(f"the store's record of topology {name!r} is malformed: {field} = {value!r}")
    if not isinstance(rec, dict):
        raise bad("record", type(rec).__name__)
    if rec.get("name") != name or not NAME.fullmatch(name):
        raise bad("name", rec.get("name"))
    try:
        check_topology_id(rec.get("id"))
    except ValueError:
        raise bad("id", rec.get("id")) from None
    if not isinstance(rec.get("secret"), str) or not SECRET.fullmatch(rec["secret"]):
        raise bad("secret", "(not 64 hex digits)")
    for key in ("epoch", "version"):
        value = rec.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise bad(key, value)
    versions = rec.get("versions")
    if not isinstance(versions, list) or not versions or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in versions):
        raise bad("versions", versions)
    launcher = rec.get("launcher")
    if launcher is not None:  # its pid's process group is what Nimbus stops
        pid = launcher.get("pid") if isinstance(launcher, dict) else None
        if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 1:
            raise bad("launcher.pid", pid)
    return rec


CONTROL_URL = re.compile(r"http://[A-Za-z0-9.:\[\]-]+:[0-9]{1,5}")


def check_master(name: str, reg: Any) -> dict:
    """Topology ``name``'s master registration if well-formed, else ``RecordError``.

    Nimbus sends the topology's secret to its ``control`` URL: it must be a bare
    ``http://host:port``.
    """
    if not isinstance(reg, dict):
        raise RecordError(f"the store's master registration of {name!r} is not a record")
    control = reg.get("control")
    if control is not None and (not isinstance(control, str) or not CONTROL_URL.fullmatch(control)):
        raise RecordError(f"the store's master registration of {name!r} is malformed: control = {control!r}")
    epoch = reg.get("epoch")
    if isinstance(epoch, bool) or not isinstance(epoch, int):
        raise RecordError(f"the store's master registration of {name!r} is malformed: epoch = {epoch!r}")
    return reg
