"""Start a real server subprocess for a test, wait until it answers, and stop it.

Shared by the Redis, ZooKeeper, Prometheus and Kafka servers the tests run on 127.0.0.1.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


def start_server(args: list[str], log: Path, ready: Callable[[], bool], *, what: str,
                 timeout: float, interval: float = 0.1, **popen: Any) -> subprocess.Popen:
    """Run ``args`` (output appended to ``log``) and return once ``ready()`` is true.

    If the process exits or is not ready within ``timeout`` it is stopped and the test fails
    with ``what`` and the tail of ``log``.
    """
    with open(log, "ab") as out:  # the child keeps its own copy of the fd
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, **popen)
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_process(proc, 10.0)
            tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
            pytest.fail(f"{what}:\n{tail}", pytrace=False)
        time.sleep(interval)
    return proc


def stop_process(proc: subprocess.Popen, timeout: float) -> None:
    """Terminate ``proc`` and wait; kill it if it has not exited within ``timeout``."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)
