"""Shared by the multilang tests: where the resources are, and waiting."""

from __future__ import annotations

import sys
import time
from pathlib import Path

RESOURCES = str(Path(__file__).parent / "resources")
PYTHON = sys.executable  # the test's interpreter, which has pystorm installed


def wait_for(predicate, timeout=15.0, step=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()
