"""A topology's uptime in Nimbus's answers, on simulated time (issue 31, item 2).

``squall list`` and ``/api/v1/topology/summary`` answered ``uptimeSeconds: 0`` for a topology
that had run for minutes: they read the figure a master's heartbeat last copied into the
store. As Storm's (``now - launch time`` of the topology), the uptime now comes from the
record and Nimbus's clock. A Nimbus on a real SQLite store, no master launched (no Spark).
"""

from __future__ import annotations

import time

from squall.nimbus.config import NimbusConfig
from squall.nimbus.launcher import Launcher
from squall.nimbus.stormapi import topology_summary_row
from squall.nimbus.upgrades import Nimbus
from squall.store import BlobStore, open_store
from squall.store import keys as K
from squall.testing import simulated_time
from tests.nimbus.harness import free_port


def nimbus(root, lead: bool = False) -> Nimbus:
    """A Nimbus object on a SQLite store under ``root`` (``lead``: elected leader first)."""
    config = NimbusConfig(host="127.0.0.1", port=free_port(), data_dir=root,
                          store=f"sqlite:{root / 'store.sqlite3'}").resolved()
    assert config.blob_dir is not None and config.log_dir is not None
    store = open_store(config.store or "")
    launcher = Launcher(store_uri=config.store or "", blob_dir=config.blob_dir, log_dir=config.log_dir,
                        spark_submit="/bin/false")
    n = Nimbus(config, store, store.election({"url": config.url}), launcher, BlobStore(config.blob_dir))
    if lead:
        n.election.start()
        deadline = time.monotonic() + 10
        while not n.election.is_leader():
            assert time.monotonic() < deadline, "the Nimbus was not elected"
            time.sleep(0.02)
    return n


def test_uptime_counts_from_the_submit_whatever_the_masters_heartbeat_says(tmp_path):
    with simulated_time() as clock:
        n = nimbus(tmp_path)
        n.store.put(K.topology_key("wc"), {
            "name": "wc", "id": "wc-1-abc", "secret": "0" * 64, "status": K.ACTIVE, "version": 1,
            "versions": [1], "epoch": 1, "num_workers": 2, "upgrade": None, "spark_master": "local[2]",
            "submitted": n.now(), "state": K.RUNNING})
        # the master's last heartbeat, written in its first second
        n.store.put(K.master_key("wc"), {"epoch": 1, "state": K.RUNNING, "summary": {
            "status": "ACTIVE", "workers": 2, "tasks": 10, "emitted": 0, "acked": 0, "failed": 0,
            "errors": 0, "uptime_secs": 0.0}})
        clock.advance(330)
        summary = n.list_topologies()[0]
        assert summary["uptime_secs"] == 330
        row = topology_summary_row(summary)
        assert (row["uptimeSeconds"], row["uptime"]) == (330, "5m 30s")
        clock.advance(60)
        assert n.list_topologies()[0]["uptime_secs"] == 390
        n.store.close()
