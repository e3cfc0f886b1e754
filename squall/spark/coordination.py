"""The coordination protocol between the topology master and its workers (pure data).

Workers talk to the master over one ZeroMQ DEALER socket each; the master has a ROUTER.
Messages are msgpack maps with a ``t`` (type) key:

worker -> master
    ``register``  {worker, launch, attempt, pid, host, address, proof}: a worker process is
                  up and its receive socket is bound at ``address``; ``proof`` is the tag
                  of its identity under the topology's secret (see ``transport``).
    ``started``   {worker, launch, error}: its tasks are open (error None) or failed to open.
    ``heartbeat`` {worker, launch, metrics, errors, rejected_frames, stuck, samples}: alive;
                  task metrics (with ``user``: the task's user metrics as plain data, when it
                  has some); new errors; frames dropped for lacking the topology's secret;
                  its tasks stuck in one call now; tuples sampled while debugging is on
                  (``squall.runtime.sampling``).
    ``applied``   {seq}: the activate/deactivate ``seq`` took effect (spouts told; no
                  ``next_tuple`` starts after a deactivate).
master -> worker
    ``welcome``   {addresses, active}: registration accepted; the peers' addresses.
    ``addresses`` {addresses}: the address map changed (a worker came back elsewhere).
    ``activate`` / ``deactivate`` {seq}: spouts on or off; answered with ``applied``.
    ``debug``     {rate, components}: sample emitted tuples at ``rate`` (0 turns it off),
                  of ``components`` only when given.
    ``stop``      {graceful}: stop the tasks and end the Spark task.
    ``reject``    {reason}: registration refused (a newer launch of that worker exists).
    ``ack``       : the master is alive (answers each heartbeat).
"""

from __future__ import annotations

from collections import deque
from typing import Any

import msgpack

from squall.runtime.metrics import FIELDS as METRIC_FIELDS
from squall.runtime.metrics import TaskMetrics
from squall.runtime.user_metrics import ReceivedMetrics

REGISTER = "register"
STARTED = "started"
HEARTBEAT = "heartbeat"
WELCOME = "welcome"
ADDRESSES = "addresses"
ACTIVATE = "activate"
DEACTIVATE = "deactivate"
DEBUG = "debug"
STOP = "stop"
REJECT = "reject"
ACK = "ack"
APPLIED = "applied"

# Recent complete latencies shipped per spout task and heartbeat: enough for p50/p99.
LATENCY_SAMPLES = 2000
ADDITIVE = ("emitted", "transferred", "acked", "failed", "executed", "exec_sampled_ms",
            "exec_samples", "process_ms", "process_samples", "complete_ms", "complete_samples")


def encode(t: str, **fields: Any) -> bytes:
    """One message of type ``t``."""
    fields["t"] = t
    return msgpack.packb(fields, use_bin_type=True)


def decode(data: bytes) -> dict:
    """A message as a dict (raises ``ValueError`` if it is not one)."""
    msg = msgpack.unpackb(data, raw=False, strict_map_key=False)
    if not isinstance(msg, dict) or "t" not in msg:
        raise ValueError("not a squall coordination message")
    return msg


def identity(topology: str, worker: int, launch: int, attempt: int, pid: int) -> bytes:
    """The DEALER identity of one worker process: unique per launch, attempt and pid."""
    return f"{topology}/{worker}/{launch}/{attempt}/{pid}".encode()


def metrics_to_dict(m: TaskMetrics) -> dict:
    """A task's metrics as plain data for a heartbeat."""
    out: dict[str, Any] = {}
    for name in METRIC_FIELDS:
        value = getattr(m, name)
        if isinstance(value, deque):
            for _ in range(3):  # the loop thread may append meanwhile
                try:
                    value = list(value)[-LATENCY_SAMPLES:]
                    break
                except RuntimeError:
                    continue
            else:
                value = []
        out[name] = value
    user = m.user_raw()  # gauges are read here, on the heartbeat's thread
    if user:
        out["user"] = user
    return out


def metrics_from_dict(d: dict, carried: dict | None = None) -> TaskMetrics:
    """Rebuild ``TaskMetrics``; ``carried`` adds counters of the task's earlier processes."""
    kwargs = {k: v for k, v in d.items() if k in METRIC_FIELDS}
    m = TaskMetrics(**{k: v for k, v in kwargs.items() if k != "complete_recent"})
    m.complete_recent.extend(kwargs.get("complete_recent", ()))
    if d.get("user"):
        m.user = ReceivedMetrics(d["user"])
    for key, value in (carried or {}).items():
        setattr(m, key, getattr(m, key) + value)
    return m


def add_counters(total: dict, d: dict) -> None:
    """Fold one dead process's counters of a task into ``total`` (kept across restarts)."""
    for key in ADDITIVE:
        if key in d:
            total[key] = total.get(key, 0) + d[key]
