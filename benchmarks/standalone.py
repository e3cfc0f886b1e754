"""A Spark standalone cluster on loopback hosts, for ``squall-standalone`` and ``squall-shipped``.

A Master on 127.0.0.1 and one Worker on each of 127.0.0.2 and 127.0.0.3, as on machines of
their own. The Workers' executors run either this interpreter (``shared``: squall's
virtualenv, what ``squall-spark`` has) or a fresh virtualenv with no packages at all
(``bare``: a machine that never saw squall), in which case squall packs its environment
and ships it with ``spark.archives`` (``squall.spark.env=auto``). Both run the same
cluster shape, so their figures compare the shipped environment with the shared one.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from benchmarks.envs import LOGS, VENVS

HOSTS = ("127.0.0.2", "127.0.0.3")
BARE = VENVS / "bare"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def bare_python() -> str:
    """A virtualenv without packages (not even pip) from the base interpreter, made once."""
    python = BARE / "bin" / "python"
    if not python.exists():
        base = getattr(sys, "_base_executable", sys.executable)
        subprocess.run([base, "-m", "venv", "--without-pip", str(BARE)], check=True, timeout=120)
    done = subprocess.run([str(python), "-c", "import msgpack"], capture_output=True, timeout=60,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    if done.returncode == 0:
        raise RuntimeError(f"{BARE} imports msgpack: it is not a bare Python")
    return str(python)


class StandaloneSpark:
    """The cluster of the module docstring; ``start()`` returns (master URL, master UI URL)."""

    def __init__(self, executors_python: str, cores_per_worker: int, work_dir: Path) -> None:
        self.python = executors_python
        self.cores = cores_per_worker
        self.work = work_dir
        self.procs: list[subprocess.Popen] = []

    def start(self, timeout: float = 120.0) -> tuple[str, str]:
        import pyspark

        spark_class = str(Path(pyspark.__file__).parent / "bin" / "spark-class")
        port, ui_port = free_port(), free_port()
        url, ui = f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}"
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "SQUALL_PURE_PYTHON", "SQUALL_PYTHON", "VIRTUAL_ENV")}
        env.update(SPARK_HOME=str(Path(pyspark.__file__).parent), SPARK_NO_DAEMONIZE="1",
                   PYSPARK_PYTHON=self.python)
        LOGS.mkdir(parents=True, exist_ok=True)
        roles = [("master", "127.0.0.1", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                          "--port", str(port), "--webui-port", str(ui_port)])]
        roles += [(f"worker-{h}", h, ["org.apache.spark.deploy.worker.Worker", url, "--host", h,
                                      "--cores", str(self.cores), "--memory", "2g", "--webui-port",
                                      str(free_port()), "--work-dir", str(self.work / h)]) for h in HOSTS]
        for name, host, args in roles:
            with open(LOGS / f"standalone-{name}.log", "w") as log:
                self.procs.append(subprocess.Popen([spark_class, *args], env={**env, "SPARK_LOCAL_IP": host},
                                                   stdout=log, stderr=subprocess.STDOUT,
                                                   start_new_session=True))
        deadline = time.monotonic() + timeout
        while _alive_workers(ui) != set(HOSTS):
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the standalone Workers did not register within {timeout:.0f}s "
                                   f"(see .bench/logs/standalone-*.log)")
            time.sleep(0.5)
        return url, ui

    def stop(self) -> None:
        for proc in reversed(self.procs):
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(15)
            except ProcessLookupError:
                continue
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        self.procs = []


def _alive_workers(ui: str) -> set[str]:
    try:
        with urllib.request.urlopen(f"{ui}/json", timeout=2) as resp:
            state = json.load(resp)
    except OSError:
        return set()
    return {w["host"] for w in state.get("workers", []) if w.get("state") == "ALIVE"}
