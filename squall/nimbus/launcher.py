"""Starting and stopping topology masters: ``spark-submit``, detached, one per topology.

Each launch runs ``spark-submit --master <master> <entry>.py --store ... --name N --epoch E``
in a session of its own (``start_new_session``), so it outlives Nimbus and a signal to
Nimbus never reaches it; its output goes to ``<log dir>/<name>-<epoch>.log``. The process
group id (the launch's pid) lets any later Nimbus on this host stop what a launch
started (the JVM, the Python driver and its Spark workers) if the master cannot be asked.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("squall.nimbus.launcher")
WILDCARDS = ("0.0.0.0", "::", "*", "")
STORE_AUTH_ENV = "SQUALL_ZK_AUTH"  # the master's store credential (argv is visible to all users)

ENTRY = '''\
"""Written by squall Nimbus: the driver program spark-submit runs for a topology master."""
import sys

from squall.spark.app import main

sys.exit(main())
'''


@dataclass
class Launch:
    """One started launch: its process (when started by this Nimbus) and where it logs."""

    name: str
    epoch: int
    pid: int
    log_path: Path
    process: subprocess.Popen | None = None

    def exited(self) -> int | None:
        """The exit status if the launch has ended, else None."""
        if self.process is not None:
            return self.process.poll()
        return None if pid_alive(self.pid) else -1

    def log_tail(self, lines: int = 3) -> str:
        """The last meaningful lines of its log (Spark's chatter left out)."""
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        keep = [t for t in text if "squall" in t or "Error" in t or "Traceback" in t]
        return " | ".join((keep or text)[-lines:])[-800:]


def pid_alive(pid: int) -> bool:
    """True if ``pid`` runs on this host and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def advertised_host(bind_host: str) -> str:
    """The address of this host that others reach, for a server bound to ``bind_host``.

    A specific address is itself; a wildcard (``0.0.0.0``) stands for this host's address:
    ``SQUALL_ADVERTISE_HOST``, else the address of the host name.
    """
    if bind_host not in WILDCARDS:
        return bind_host
    if os.environ.get("SQUALL_ADVERTISE_HOST"):
        return os.environ["SQUALL_ADVERTISE_HOST"]
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def default_spark_submit() -> str:
    """The pyspark package's ``bin/spark-submit``.

    Found, not imported: Nimbus only runs the script, and pyspark is imported only in
    ``squall.spark`` (``make lint`` holds that).
    """
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("Nimbus needs pyspark to launch topologies (pip install 'squall[spark]')")
    return str(Path(next(iter(spec.submodule_search_locations))) / "bin" / "spark-submit")


class Launcher:
    """Runs ``spark-submit`` for topology masters (see the module docstring)."""

    def __init__(self, *, store_uri: str, blob_dir: Path, log_dir: Path, spark_submit: str | None,
                 bind_host: str = "127.0.0.1", store_auth: str | None = None) -> None:
        self.store_uri = store_uri
        self.store_auth = store_auth  # handed over in the environment, never on the command line
        self.blob_dir = blob_dir
        self.log_dir = log_dir
        self.spark_submit = spark_submit or default_spark_submit()
        self.bind_host = bind_host
        self.entry = log_dir / "squall_topology_master.py"

    def launch(self, name: str, epoch: int, spark_master: str) -> Launch:
        """Start the master of ``name`` for ``epoch`` on ``spark_master``; returns at once."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        if not self.entry.exists() or self.entry.read_text() != ENTRY:
            self.entry.write_text(ENTRY)
        log_path = self.log_dir / f"{name}-{epoch}.log"
        spark_logs = self.log_dir / "spark"
        spark_logs.mkdir(exist_ok=True)
        cmd = [self.spark_submit, "--master", spark_master, "--name", f"squall-{name}",
               "--conf", "spark.ui.enabled=false",
               str(self.entry), "--store", self.store_uri, "--blobs", str(self.blob_dir),
               "--name", name, "--epoch", str(epoch), "--log-dir", str(spark_logs)]
        env = dict(os.environ)
        # executors and the driver run this interpreter, which has squall installed
        env.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
        # the driver binds and advertises this host's address (squall.spark.context.driver_address)
        env.setdefault("SPARK_LOCAL_IP", advertised_host(self.bind_host))
        env.pop(STORE_AUTH_ENV, None)
        if self.store_auth:
            env[STORE_AUTH_ENV] = self.store_auth
        with open(log_path, "ab") as out:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    env=env, cwd=self.log_dir, start_new_session=True)
        log.info("launched topology %r epoch %d: pid %d on %s (log %s)", name, epoch, proc.pid,
                 spark_master, log_path)
        return Launch(name, epoch, proc.pid, log_path, proc)


def stop_group(pid: int, grace: float = 10.0) -> None:
    """SIGTERM the process group ``pid`` leads, then SIGKILL what is left after ``grace``."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not _group_alive(pid):
                return
            time.sleep(0.1)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # zombies still count for killpg: look for a live member
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                return True
        except (OSError, IndexError, ValueError):
            continue
    return False
