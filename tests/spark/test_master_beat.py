"""The topology master's store heartbeat (issue 41 item 1): it outlives an unexpected error."""

from __future__ import annotations

import threading

from benchmarks.scale import NAME, wait_for
from squall.nimbus.prometheus import render
from squall.spark import app as app_module
from squall.spark.app import TopologyApp
from squall.store import keys as K
from squall.store import open_store


class FailingOnce:
    """A store whose ``fail_at``-th update raises an error no store raises (a bug, say)."""

    def __init__(self, store, fail_at: int) -> None:
        self.store, self.fail_at, self.updates = store, fail_at, 0

    def update(self, key, fn):
        self.updates += 1
        if self.updates == self.fail_at:
            raise RuntimeError("injected: not a StoreError")
        return self.store.update(key, fn)

    def __getattr__(self, name):
        return getattr(self.store, name)


def test_the_store_heartbeat_logs_counts_and_goes_on_after_an_unexpected_error(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(app_module, "HEARTBEAT_SECS", 0.01)
    store = FailingOnce(open_store(f"sqlite:{tmp_path}/store.db"), fail_at=2)
    store.put(K.topology_key(NAME), {"epoch": 1, "name": NAME})
    app = TopologyApp(store, None, NAME, 1)
    beats = threading.Thread(target=app._heartbeat_until_exit, daemon=True)
    beats.start()
    try:
        # later heartbeats are stored: the thread went on past the failed one
        assert wait_for(lambda: ((store.get(K.master_key(NAME)) or {}).get("beat") or 0) >= 5, 10), \
            store.get(K.master_key(NAME))
        assert beats.is_alive()
        assert app.beat_failures == 1  # counted (shown in info() and /metrics)
        assert "injected: not a StoreError" in caplog.text  # and logged, with its cause
    finally:
        app._exit.set()
        beats.join(5)
        store.close()


def test_the_lost_heartbeats_are_a_metric_of_the_topology():
    page = render([{"name": "wc", "master": {"store_beat_failures": 2}}], {"leader": True})
    assert 'squall_topology_master_store_beat_failures_total{topology="wc"} 2' in page
