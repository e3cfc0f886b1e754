"""The store's contract, on both backends: SQLite (embedded) and ZooKeeper (real server)."""

from __future__ import annotations

import threading
import time

import pytest

from squall.store import StoreError, open_store


@pytest.fixture(params=["sqlite", "zookeeper"])
def store(request, tmp_path):
    if request.param == "sqlite":
        s = open_store(f"sqlite:{tmp_path / 'store.sqlite3'}")
        s.uri = f"sqlite:{tmp_path / 'store.sqlite3'}"
    else:
        zk = request.getfixturevalue("zookeeper")
        uri = zk.uri(f"/contract-{time.monotonic_ns()}")
        s = open_store(uri, session_timeout=4.0)
        s.uri = uri
    yield s
    s.close()


def test_get_put_create_delete_children(store):
    assert store.get("topologies/wc") is None
    store.put("topologies/wc", {"status": "ACTIVE", "n": [1, 2]})
    assert store.get("topologies/wc") == {"status": "ACTIVE", "n": [1, 2]}
    assert store.create("topologies/wc", {"other": True}) is False
    assert store.create("topologies/wd", {"x": 1}) is True
    store.put("topologies/wd/deeper", {"y": 2})
    assert store.children("topologies") == {"wc": {"status": "ACTIVE", "n": [1, 2]}, "wd": {"x": 1}}
    store.delete("topologies/wc")
    store.delete("topologies/missing")
    assert store.get("topologies/wc") is None
    assert store.children("nothing") == {}


def test_update_is_atomic_across_clients(store):
    other = open_store(store.uri, **({"session_timeout": 4.0} if store.uri.startswith("zk") else {}))
    store.put("counter/c", {"n": 0})

    def bump(s):
        for _ in range(25):
            s.update("counter/c", lambda old: {"n": old["n"] + 1})
    threads = [threading.Thread(target=bump, args=(s,)) for s in (store, other, store, other)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.get("counter/c") == {"n": 100}
    assert store.update("counter/c", lambda old: None) is None
    assert store.get("counter/c") is None
    other.close()


def test_invalid_keys_are_refused(store):
    for key in ("", "/abs", "a//b", "a/../b", "sp ace"):
        with pytest.raises(ValueError):
            store.get(key)


def test_election_one_leader_then_takeover(store):
    other = open_store(store.uri, **({"session_timeout": 4.0} if store.uri.startswith("zk") else {}))
    a = store.election({"url": "http://a"})
    b = other.election({"url": "http://b"})
    a.start()
    deadline = time.monotonic() + 10
    while not a.is_leader():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    b.start()
    time.sleep(1.0)
    assert not b.is_leader()
    assert b.leader()["url"] == "http://a"
    a.stop()  # the leader steps down (or dies): the other takes over
    deadline = time.monotonic() + 10
    while not b.is_leader():
        assert time.monotonic() < deadline, "the standby did not take over"
        time.sleep(0.05)
    assert b.leader()["url"] == "http://b"
    b.stop()
    other.close()


def test_unknown_store_uri():
    with pytest.raises(StoreError, match="unknown store"):
        open_store("redis://127.0.0.1")
