"""The systems the workloads run on, and running a batch of cases on one of them.

Every system runs in a subprocess of its own Python (``python -m <runner> SPEC``), which
prints one result row per case (``benchmarks.peers._common``). squall's two systems run in
squall's virtualenv, each peer in its own (``benchmarks.envs``). Systems that start a JVM
get one subprocess per workload, so that Spark or Flink starts once for all its cases;
the others get a fresh process per case, so that no case inherits another's memory.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.envs import LOGS, ROOT
from benchmarks.peers._common import ROW_PREFIX


@dataclass(frozen=True)
class System:
    """A system: its env (None: squall's own), runner module, and whether it starts a JVM."""

    name: str
    env: str | None
    runner: str
    jvm: bool
    what: str
    optional: bool = False  # run only when named (--systems) or asked for (--shipped-env)


SYSTEMS: dict[str, System] = {s.name: s for s in (
    System("squall-local", None, "benchmarks.squall_runner", False,
           "squall on LocalCluster: every worker a thread of one Python process"),
    System("squall-spark", None, "benchmarks.squall_runner", True,
           "squall on SparkCluster(local[*]): each worker a Spark task's Python process"),
    System("squall-standalone", None, "benchmarks.squall_runner", True,
           "squall on a Spark standalone cluster (Workers on 127.0.0.2/.3), executors on squall's "
           "virtualenv (squall.spark.env=none)", optional=True),
    System("squall-shipped", None, "benchmarks.squall_runner", True,
           "squall on the same standalone cluster, executors on a bare Python: squall and its "
           "dependencies shipped with spark.archives (squall.spark.env=auto)", optional=True),
    System("floor", None, "benchmarks.floor", False,
           "no engine: Storm's API calls alone, driven by hand on one core, times the workers "
           "(benchmarks.floor): the ceiling of any engine calling these components"),
    System("raw", "raw", "benchmarks.peers.raw", False,
           "no engine: Python loops, msgpack over ZeroMQ between 2 processes"),
    System("bytewax", "bytewax", "benchmarks.peers.bytewax", False,
           "bytewax dataflow under run_main (cluster_main processes to scale)"),
    System("spark-ss", "spark-ss", "benchmarks.peers.spark_ss", True,
           "PySpark Structured Streaming micro-batches, built-in SQL steps"),
    System("pyflink", "pyflink", "benchmarks.peers.pyflink", True,
           "PyFlink DataStream on a local mini-cluster, Python UDFs"),
)}
STARTUP_ALLOWANCE_S = {True: 150.0, False: 30.0}  # per subprocess, on top of the cases
PER_CASE_ALLOWANCE_S = {True: 60.0, False: 20.0}


def timeout_for(system: System, cases: list[dict]) -> float:
    """How long a batch may run before it is killed."""
    measured = sum(c["warmup_s"] + c["duration_s"] for c in cases)
    return measured + STARTUP_ALLOWANCE_S[system.jvm] + PER_CASE_ALLOWANCE_S[system.jvm] * len(cases)


def missing_row(case: dict, reason: str) -> dict[str, Any]:
    """The row of a case that produced no result."""
    return {"id": case["id"], "workload": case["workload"], "variant": case["variant"],
            "system": case["system"], "acking": case["acking"], "workers": case["workers"],
            "rate_tps": case.get("rate_tps"), "params": case.get("params") or {}, "error": reason}


def run_batch(system: System, python: Path, cases: list[dict], label: str,
              on_row: Any = None) -> list[dict[str, Any]]:
    """Run ``cases`` in one subprocess of ``python``; a row per case, errors included.

    The runner's stderr goes to ``.bench/logs/<label>.log``. A runner that exits early or
    outlives its time limit is killed with its process group; its missing cases get
    error rows that say so.
    """
    LOGS.mkdir(parents=True, exist_ok=True)
    log_path = LOGS / f"{label}.log"
    spec = json.dumps({"system": system.name, "cases": cases})
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    rows: list[dict[str, Any]] = []
    limit = timeout_for(system, cases)
    with log_path.open("w") as log:
        proc = subprocess.Popen([str(python), "-m", system.runner, spec], cwd=ROOT, env=env,
                                stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True)
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            _kill_group(proc)

        timer = threading.Timer(limit, kill)
        timer.start()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                if line.startswith(ROW_PREFIX):
                    row = json.loads(line[len(ROW_PREFIX):])
                    rows.append(row)
                    if on_row is not None:
                        on_row(row)
            code = proc.wait()
        finally:
            timer.cancel()
            _kill_group(proc)  # whatever the runner left behind (a JVM, workers)
    timed_out = killed.is_set()
    done = {r["id"] for r in rows}
    for case in cases:
        if case["id"] not in done:
            why = f"timed out after {limit:.0f}s" if timed_out else f"runner exited {code}"
            rows.append(missing_row(case, f"no result: {why}; see {log_path.relative_to(ROOT)}"))
    return rows


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def python_for(system: System, envs: dict[str, Any]) -> tuple[Path | None, str]:
    """The interpreter that runs ``system``, or None and why not."""
    if system.env is None:
        return Path(sys.executable), ""
    env = envs.get(system.env)
    if env is None or env.python is None:
        return None, f"not installed: {env.reason if env else 'env not prepared'}"
    return env.python, ""
