"""Checks and settings made before a SparkContext starts: Java, environment, logging.

Everything here runs on the driver, before pyspark launches its JVM, so that a missing
Java or an unreachable master is reported in one clear line instead of a JVM stack trace
or a registration loop that retries for minutes.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

from squall.spark.errors import SparkSetupError

MIN_JAVA = 17
JAVA_CHECK_TIMEOUT = 30.0

LOG4J2 = """\
# Written by squall: Spark logs WARN and above to a file so squall's own lines show.
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = {path}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p %c{{1}}: %m%n
rootLogger.level = warn
rootLogger.appenderRef.file.ref = file
"""


def java_executable() -> str | None:
    """The ``java`` Spark would run: ``$JAVA_HOME/bin/java`` if JAVA_HOME is set, else PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        return str(candidate) if candidate.is_file() and os.access(candidate, os.X_OK) else None
    return shutil.which("java")


def parse_java_version(text: str) -> int | None:
    """Major version from ``java -version`` output (``1.8.0_x`` is 8, ``17.0.1`` is 17)."""
    m = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if not m:
        return None
    major = int(m.group(1))
    if major == 1 and m.group(2):
        major = int(m.group(2))
    return major


def check_java() -> int:
    """Raise ``SparkSetupError`` unless Java >= 17 can be run; returns the major version."""
    java = java_executable()
    where = f"JAVA_HOME={os.environ['JAVA_HOME']}" if os.environ.get("JAVA_HOME") else "PATH"
    if java is None:
        raise SparkSetupError(
            f"squall on Spark needs Java {MIN_JAVA}+ but no java executable was found on "
            f"{where}; install a JDK {MIN_JAVA}+ and set JAVA_HOME or PATH"
        )
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True,
                             timeout=JAVA_CHECK_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SparkSetupError(f"squall on Spark needs Java {MIN_JAVA}+ but {java} -version "
                              f"failed: {e}") from None
    version = parse_java_version(out.stderr + out.stdout)
    if version is None or version < MIN_JAVA:
        found = version if version is not None else "an unknown version"
        raise SparkSetupError(f"squall on Spark needs Java {MIN_JAVA}+ but {java} is Java {found}; "
                              f"install a JDK {MIN_JAVA}+ and set JAVA_HOME")
    return version


def prepare_environment(local_ip: str = "127.0.0.1", executor_python: str | None = None) -> None:
    """Point Spark's Python workers at ``executor_python`` and keep Spark on ``local_ip``.

    pyspark hands the executors the driver's ``PYSPARK_PYTHON`` (by default ``python3``
    on PATH, which lacks this virtualenv's packages), so it is set to ``executor_python``
    (``spark.pyspark.python``: for a shipped environment, a path inside its archive), or
    else to ``sys.executable``, for executors that share this interpreter. The driver
    runs ``sys.executable``.
    """
    os.environ["PYSPARK_PYTHON"] = executor_python or sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", local_ip)


def write_log4j_config(log_dir: str | os.PathLike) -> tuple[Path, Path]:
    """Write a log4j2 config sending Spark's WARN+ lines to ``log_dir/spark-<pid>.log``.

    Returns (config path, log file path).
    """
    directory = Path(log_dir).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    log_file = directory / f"spark-{os.getpid()}.log"
    config = directory / f"log4j2-squall-{os.getpid()}.properties"
    config.write_text(LOG4J2.format(path=log_file))
    return config, log_file


def master_endpoint(master: str) -> tuple[str, int] | None:
    """(host, port) of a ``spark://`` master (the first of an HA list); None for others."""
    if not master.startswith("spark://"):
        return None
    first = master[len("spark://"):].split(",")[0]
    parts = urlsplit(f"//{first}")
    return parts.hostname or "127.0.0.1", parts.port or 7077


def check_master_reachable(master: str, timeout: float = 5.0) -> None:
    """Raise ``SparkSetupError`` within ``timeout`` if a ``spark://`` master does not answer.

    Spark's own client retries registration for minutes before giving up, so a plain TCP
    connect is tried first. Other masters (local, yarn, k8s) are not checked here.
    """
    endpoint = master_endpoint(master)
    if endpoint is None:
        return
    try:
        with socket.create_connection(endpoint, timeout=timeout):
            pass
    except OSError as e:
        reason = e.strerror or type(e).__name__
        raise SparkSetupError(
            f"cannot reach Spark master {master} ({endpoint[0]}:{endpoint[1]}): {reason}; "
            f"is the master running, and is squall.spark.master right?"
        ) from None
