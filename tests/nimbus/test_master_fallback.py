"""A Nimbus and an older topology master: routes the master lacks fall back to ``/info`` (issue 37).

Nimbus asks a master for ``/info/components`` (the topology page, the observer) and
``/info/brief`` (counts): routes a master of an older squall does not serve. Such a master
answers 404; Nimbus then asks for its whole ``/info`` and takes what it needs from it. A
Nimbus on a real SQLite store, and the older master a real control endpoint with the one
route it had.
"""

from __future__ import annotations

import secrets

import pytest

from squall.nimbus.observer import Observer
from squall.spark.control import ControlServer
from squall.store import keys as K
from tests.nimbus.test_uptime import nimbus

INFO = {"components": {"spout": {"emitted": 42, "acked": 40, "failed": 0, "parallelism": 2}},
        "workers": [{"worker": 0, "pid": 1}], "errors": [{"task": 1, "error": "boom", "message": "m",
                                                          "traceback": "tb", "time": 1.0}],
        "uptime_secs": 12.0, "tasks": [{"task": 1}], "store_beat_failures": 0}


@pytest.fixture
def older_master(tmp_path):
    """A Nimbus whose topology 'wc' has a running master serving only ``GET /info``."""
    secret = secrets.token_hex(32)
    asked: list[str] = []

    def info(body):
        asked.append("/info")
        return INFO
    srv = ControlServer("127.0.0.1", secret, {("GET", "/info"): info})
    srv.start()
    n = nimbus(tmp_path)
    n.store.put(K.topology_key("wc"), {
        "name": "wc", "id": "wc-1-abc123", "secret": secret, "status": K.ACTIVE, "version": 1,
        "versions": [1], "epoch": 1, "num_workers": 1, "upgrade": None, "spark_master": "local[2]",
        "submitted": n.now(), "state": K.RUNNING})
    n.store.put(K.master_key("wc"), {"epoch": 1, "state": K.RUNNING, "control": srv.url})
    try:
        yield n, asked
    finally:
        srv.stop()
        n.store.close()


@pytest.mark.parametrize(("texts", "per_task"), [(True, False), (False, True)])
def test_a_route_the_older_master_lacks_falls_back_to_its_whole_info(older_master, texts, per_task):
    n, asked = older_master
    got = n.info("wc", texts=texts, per_task=per_task)
    assert "error" not in got["master"], got["master"].get("error")
    assert got["components"] == INFO["components"] and [w["worker"] for w in got["workers"]] == [0]
    assert asked == ["/info"]
    if not texts:  # a reader that only counts errors gets them without their texts, as from /info/brief
        assert [set(e) & {"message", "traceback"} for e in got["errors"]] == [set()]


def test_the_observer_samples_an_older_master_from_its_whole_info(older_master):
    n, asked = older_master
    observer = Observer(n)
    observer.sample_all()
    assert "wc" in observer.histories and asked == ["/info"]
