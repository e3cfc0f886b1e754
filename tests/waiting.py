"""Waiting on real time, for tests of real external processes only (Redis stopped, a
Spark worker killed). Topologies on LocalCluster use tracked topologies and simulated time."""

import time


def wait_for(predicate, timeout=10.0, step=0.01):
    """Poll ``predicate`` until true or ``timeout`` real seconds passed; its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()
