"""stateful_wordcount: the word count with its counts in checkpointed state (squall only).

Four variants on the same topology and settings: ``plain`` (the dict-counting bolt, no
checkpoints), ``memory`` (``StatefulBolt`` on ``InMemoryStateProvider``), ``local``
(``StatefulBolt`` on ``LocalStateProvider``, SQLite in a temporary directory) and ``redis``
(``RedisStateProvider`` on a ``redis-server`` this workload starts on 127.0.0.1, without
persistence, and stops when the runner exits). A stateful
bolt holds its input acks until the checkpoint that covers them commits (every
``topology.state.checkpoint.interval.ms``: 250 ms here, 1000 by default), so a spout task can
run at most ``max.spout.pending`` sentences ahead of the last commit, and no stateful variant
passes spout tasks x pending / interval (``cap``, printed beside each row by
``benchmarks.report``). ``max.spout.pending`` is sized as docs/state.md says, above what a
spout task emits in an interval and a commit's crossing: 30,000, a cap of 240,000/s with two
spout tasks (at 10,000 the cap, 80,000/s, was what every store measured). The same pending
is set for all the variants; the difference in throughput between them is the cost of the
state and its checkpoints. Latencies are long by construction: an ack waits for a commit,
and every variant's queues hold what the pending lets in.

A fifth, ``redis-exactly-once``, is the ``redis`` variant with ``topology.guarantee:
exactly_once`` and a seekable spout (``exactly_once.py``); ``--quick`` runs it on squall-local
and, with ``redis`` beside it, on squall-spark.
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import subprocess
import time
from typing import Any

from squall import Config

NAME = "stateful_wordcount"
EXACTLY_ONCE = "redis-exactly-once"  # the redis variant in exactly-once mode (exactly_once.py)
SYSTEMS = ("squall-local", "squall-spark")
VARIANTS = ("plain", "memory", "local", "redis", EXACTLY_ONCE)
PROVIDERS = {
    "memory": "squall.state.memory.InMemoryStateProvider",
    "local": "squall.state.local.LocalStateProvider",
    "redis": "squall.state.redis.RedisStateProvider",
    EXACTLY_ONCE: "squall.state.redis.RedisStateProvider",
}
# per spout task, sized as docs/state.md says: above what a spout task emits in one interval
# and in a PREPARE's and a COMMIT's crossing, since its acks wait for the commit. The plain
# count's spout tasks emit about 85k sentences/s each on squall-spark (an idle 2-core machine,
# issue 40), an upper bound of the stateful ones': x (0.25 s + some 0.1 s of crossing) is
# about 30k. At 10,000 the held acks capped every stateful variant at 2 x 10,000 / 0.25 s =
# 80,000/s, which is what the four stores measured (one figure); 30,000 puts the cap
# (``cap``) at 240,000/s. More would only queue: a spout task held at its pending has
# pending / its rate of latency, so the cap over the rate is the latency in intervals
MAX_SPOUT_PENDING = 30000
CHECKPOINT_INTERVAL_MS = 250
# acks arrive in bursts, one per commit: the window must span several commits
MIN_WARMUP_S, MIN_DURATION_S = 3.0, 8.0


def cases(profile: Any, system: str) -> list[dict]:
    from benchmarks.workloads import make_case

    variants = VARIANTS  # every variant on both systems, --quick included (issue 28 target 2)
    cases = [make_case(NAME, v, system, profile, acking=True, max_spout_pending=MAX_SPOUT_PENDING,
                       checkpoint_interval_ms=CHECKPOINT_INTERVAL_MS)
             for v in variants]
    for case in cases:
        case["warmup_s"] = max(case["warmup_s"], MIN_WARMUP_S)
        case["duration_s"] = max(case["duration_s"], MIN_DURATION_S)
        case["params"]["spout_tasks"] = case["workers"]  # topology(): one spout task per worker
    return cases


def cap(row: dict) -> tuple[float, str] | None:
    """The rate held acks allow a stateful row, and how it is made; None for ``plain``.

    A spout task may have ``max.spout.pending`` sentences past its last commit, and a commit
    comes once per interval, so no stateful variant passes spout tasks x pending / interval
    sentences/s (less, by the crossing of the PREPARE and the COMMIT). Under exactly-once the
    pending that applies is ``topology.max.spout.pending`` when set (it is here), else
    ``squall.exactly_once.max.spout.pending``.
    """
    params = row.get("params") or {}
    interval_ms, pending = params.get("checkpoint_interval_ms"), params.get("max_spout_pending")
    tasks = params.get("spout_tasks", row.get("workers"))
    if row.get("variant") == "plain" or not (interval_ms and tasks):
        return None
    key = "topology.max.spout.pending"
    if row.get("variant") == EXACTLY_ONCE and not pending:
        from squall.runtime.exactly_once_checks import MAX_PENDING_KEY
        from squall.runtime.exactly_once_tasks import DEFAULT_MAX_PENDING

        key, pending = MAX_PENDING_KEY, DEFAULT_MAX_PENDING
    if not pending:
        return None
    tps = tasks * pending / (interval_ms / 1000)
    return tps, f"{tasks} spout tasks x {pending:,} pending ({key}) / {interval_ms / 1000:g} s"


def build(case: dict, probe_dir: str) -> tuple[Any, Config]:
    from benchmarks.workloads.components import StatefulWordCount
    from benchmarks.workloads.wordcount import squall_conf, topology

    conf = squall_conf(case, max_spout_pending=MAX_SPOUT_PENDING)
    variant = case["variant"]
    if variant == "plain":
        return topology(probe_dir, case["workers"]), conf
    conf["topology.state.checkpoint.interval.ms"] = case["params"]["checkpoint_interval_ms"]
    conf["topology.state.provider"] = PROVIDERS[variant]
    if variant == "local":
        conf["topology.state.provider.config"] = {"path": os.path.join(probe_dir, "state")}
    if variant in ("redis", EXACTLY_ONCE):
        conf["topology.state.provider.config"] = {"host": "127.0.0.1", "port": start_redis(probe_dir)}
    if variant == EXACTLY_ONCE:
        from benchmarks.workloads.exactly_once import exactly_once

        return exactly_once(conf, probe_dir, case["workers"], StatefulWordCount(probe_dir)), conf
    return topology(probe_dir, case["workers"], count_bolt=StatefulWordCount(probe_dir)), conf


def start_redis(workdir: str) -> int:
    """Start a throwaway redis-server on a free loopback port; returns the port."""
    exe = shutil.which("redis-server")
    if exe is None:
        raise RuntimeError("redis-server is not on PATH (scripts/setup-redis.sh installs it)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", workdir],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    atexit.register(proc.terminate)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
                conn.sendall(b"PING\r\n")
                if conn.recv(16).startswith(b"+PONG"):
                    return port
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"redis-server did not answer on 127.0.0.1:{port}")
