"""Store keys and record fields shared by Nimbus and the topology masters it launches.

``topologies/<name>``: the topology record, written by Nimbus (and, for its own
progress, by the topology master): id, secret, status, versions, worker count and
parallelism overrides, the gray upgrade in progress, and the master's launch ``epoch``.

``masters/<name>``: written only by the topology master of the record's current epoch:
its control endpoint, pid, state (STARTING, RUNNING, FAILED, STOPPED), a heartbeat
counter ``beat``, a summary of its figures, and each worker's code version.

A master whose epoch is no longer the record's (Nimbus relaunched it, or the topology
was killed) stops its workers and exits: that fences a master Nimbus gave up for dead.
"""

from __future__ import annotations

TOPOLOGIES = "topologies"
MASTERS = "masters"

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


def master_key(name: str) -> str:
    """The key of topology ``name``'s master registration."""
    return f"{MASTERS}/{name}"
