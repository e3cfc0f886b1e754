"""Code replication between Nimbus nodes, without Spark (Storm's blob store sync).

Two real Nimbus HTTP servers, on 127.0.0.2 and 127.0.0.3, each with its own data
directory, share a real store (SQLite here; ZooKeeper in ``test_replication_ha``). The
leader stores a version as a submit does; the standby's ``CodeSync`` copies it over the
authenticated API, checks it against its digest, and registers itself as a holder. No
topology master is launched (the monitor is not started), so no Spark is needed.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import cloudpickle
import pytest

from squall.nimbus.config import NimbusConfig
from squall.nimbus.errors import NimbusError
from squall.nimbus.launcher import Launcher
from squall.nimbus.replication import (
    CodeSync,
    ReplicationError,
    blob_key,
    forget,
    holders,
    http_fetcher,
    publish,
    register_holder,
    unregister_holder,
    wait_for_replication,
)
from squall.nimbus.server import NimbusServer
from squall.nimbus.upgrades import Nimbus
from squall.store import BlobStore, open_store
from squall.store import keys as K
from squall.store.blobs import CODE, FILES, CorruptBlob, digest_of
from squall.testing import simulated_time
from tests.nimbus.harness import free_port

TOKEN = "t0ken-for-the-replication-tests-0123456789"
TID = "wc-1700000000-a1b2c3"


def _file_bytes():
    return {"code.zip": b"PK-not-really-a-zip", "topology.pkl": cloudpickle.dumps({"t": 1}),
            "conf.json": b'{"topology.workers": 2}'}


class Node:
    """One in-process Nimbus: its store connection, blob directory, HTTP server and code sync."""

    def __init__(self, root: Path, host: str, store_path: Path) -> None:
        self.port = free_port()
        self.config = NimbusConfig(host=host, port=self.port, data_dir=root / host,
                                   store=f"sqlite:{store_path}").resolved()
        assert self.config.blob_dir is not None and self.config.log_dir is not None
        self.store = open_store(self.config.store or "")
        self.election = self.store.election({"url": self.config.url})
        launcher = Launcher(store_uri=self.config.store or "", blob_dir=self.config.blob_dir,
                            log_dir=self.config.log_dir, spark_submit="/bin/false")
        blobs = BlobStore(self.config.blob_dir)
        self.nimbus = Nimbus(self.config, self.store, self.election, launcher, blobs)
        self.server = NimbusServer(host, self.port, TOKEN)
        self.server.attach(self.nimbus)
        self.sync = CodeSync(self.store, self.nimbus.blobs, self.config.url or "", http_fetcher(TOKEN),
                             freq_secs=3600, leader_url=lambda: (self.election.leader() or {}).get("url"))
        self.nimbus.sync = self.sync
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.election.start()

    @property
    def url(self) -> str:
        return self.config.url or ""

    def close(self) -> None:
        self.server.shutdown()
        self.election.stop()
        self.store.close()


@pytest.fixture
def pair(tmp_path):
    store = tmp_path / "shared-store.sqlite3"
    a = Node(tmp_path, "127.0.0.2", store)
    deadline = time.monotonic() + 10
    while not a.election.is_leader():
        assert time.monotonic() < deadline, "the first node did not lead"
        time.sleep(0.05)
    b = Node(tmp_path, "127.0.0.3", store)
    yield a, b
    b.close()
    a.close()


def add_record(node: Node, name: str = "wc", topology_id: str = TID) -> None:
    node.store.put(K.topology_key(name), {"name": name, "id": topology_id, "secret": "0" * 64,
                                          "epoch": 1, "version": 1, "versions": [1], "status": K.ACTIVE})


def store_version(node: Node, conf: dict, name: str = "wc", topology_id: str = TID):
    files = _file_bytes()
    return node.nimbus.store_version(name, topology_id, 1, code=files["code.zip"],
                                     topology=files["topology.pkl"], conf=conf)


# ---- the copy itself ---------------------------------------------------------------------

def test_a_corrupt_copy_is_refused_and_leaves_nothing(tmp_path):
    blobs = BlobStore(tmp_path / "blobs")
    files = _file_bytes()
    digest = digest_of(files)
    bad = {**files, CODE: files[CODE][:-1] + b"X"}
    with pytest.raises(CorruptBlob, match="refused"):
        blobs.write_files(TID, 1, bad, expected=digest)
    assert not blobs.version(TID, 1).exists()
    assert not (tmp_path / "blobs" / TID).exists()  # refused before anything is written
    good = blobs.write_files(TID, 1, files, expected=digest)
    good.verify(digest)
    (good.directory / "topology.pkl").write_bytes(b"changed on disk")
    with pytest.raises(CorruptBlob):
        good.verify(digest)


def test_the_digest_covers_every_file_and_its_boundaries():
    files = _file_bytes()
    base = digest_of(files)
    for name in FILES:
        assert digest_of({**files, name: files[name] + b"!"}) != base, name
    # moving a byte from one file to the next changes the digest too
    moved = {**files, "code.zip": files["code.zip"][:-1],
             "topology.pkl": files["code.zip"][-1:] + files["topology.pkl"]}
    assert digest_of(moved) != base


# ---- waiting for replication, on simulated time (Storm's waitForDesiredCodeReplication) ------

def _wait_in_thread(store, min_count, max_wait):
    out: dict = {}

    def run():
        try:
            out["rep"] = wait_for_replication(store, TID, 1, min_count, max_wait, lambda: None)
        except Exception as e:  # noqa: BLE001 - handed to the test
            out["error"] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


def test_the_wait_ends_at_the_max_wait_and_says_how_many_hold_it(tmp_path):
    store = open_store(str(tmp_path / "s.sqlite3"))
    publish(store, "wc", TID, 1, "d" * 64)
    register_holder(store, TID, 1, "http://127.0.0.2:6627", "d" * 64)
    with simulated_time() as clock:
        t, out = _wait_in_thread(store, 2, 5)
        for _ in range(4):
            time.sleep(0.05)
            clock.advance(1.0)
            assert t.is_alive(), "returned before topology.max.replication.wait.time.sec"
        clock.advance(1.0)
        t.join(5)
    rep = out["rep"]
    assert (rep.count, rep.required, rep.achieved) == (1, 2, False)
    assert rep.waited_secs == 5.0
    assert "held by 1 of the 2 Nimbus nodes" in rep.message() and "going on with 1" in rep.message()
    store.close()


def test_minus_one_waits_until_enough_nodes_hold_it(tmp_path):
    store = open_store(str(tmp_path / "s.sqlite3"))
    publish(store, "wc", TID, 1, "d" * 64)
    register_holder(store, TID, 1, "http://127.0.0.2:6627", "d" * 64)
    register_holder(store, TID, 1, "http://127.0.0.9:6627", "e" * 64)  # another digest: not a copy
    with simulated_time() as clock:
        t, out = _wait_in_thread(store, 2, -1)
        for _ in range(100):
            time.sleep(0.01)
            clock.advance(10.0)
        assert t.is_alive(), "-1 must wait for ever"
        register_holder(store, TID, 1, "http://127.0.0.3:6627", "d" * 64)
        while t.is_alive():
            clock.advance(1.0)
            t.join(0.05)
    rep = out["rep"]
    assert rep.achieved and rep.count == 2
    assert rep.holders == ["http://127.0.0.2:6627", "http://127.0.0.3:6627"]
    store.close()


def test_a_bad_replication_setting_is_refused_naming_the_key(pair):
    a, _ = pair
    add_record(a)
    with pytest.raises(NimbusError, match="topology.min.replication.count must be an integer >= 1"):
        store_version(a, {"topology.min.replication.count": 0})
    with pytest.raises(NimbusError, match="topology.max.replication.wait.time.sec"):
        store_version(a, {"topology.max.replication.wait.time.sec": "soon"})


# ---- two Nimbus nodes -------------------------------------------------------------------------

def test_the_standby_copies_checks_and_registers_each_version(pair):
    a, b = pair
    add_record(a)
    rep = store_version(a, {})
    assert rep.achieved and rep.holders == [a.url]
    assert not b.nimbus.blobs.version(TID, 1).exists()
    b.sync.sync()
    digest = a.store.get(blob_key(TID, 1))["digest"]
    b.nimbus.blobs.version(TID, 1).verify(digest)  # its own copy, in its own directory
    assert b.nimbus.blobs.root != a.nimbus.blobs.root
    assert sorted(holders(a.store, TID, 1).values()) == [a.url, b.url]
    assert b.nimbus.blobs.version(TID, 1).file_bytes() == a.nimbus.blobs.version(TID, 1).file_bytes()


def test_min_replication_two_is_met_once_the_standby_copies(pair):
    a, b = pair
    add_record(a)
    out: dict = {}

    def submit():
        out["rep"] = store_version(a, {"topology.min.replication.count": 2,
                                       "topology.max.replication.wait.time.sec": 30})
    t = threading.Thread(target=submit, daemon=True)
    t.start()
    b.sync.start()  # the standby's loop notices the new key within a second
    t.join(30)
    b.sync.stop()
    rep = out["rep"]
    assert rep.achieved and rep.count == 2 and rep.waited_secs < 10


def test_blob_files_need_the_token(pair):
    a, _ = pair
    add_record(a)
    store_version(a, {})
    url = f"{a.url}/api/v1/blobs/{TID}/1/topology.pkl"
    for header, status in ((None, 401), ("Bearer wrong-token-0123456789", 403)):
        req = urllib.request.Request(url, headers={"Authorization": header} if header else {})
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=5)
        assert e.value.code == status
        assert json.loads(e.value.read())["code"] in ("unauthorized", "forbidden")
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(req, timeout=5) as resp:
        assert resp.read() == _file_bytes()["topology.pkl"]
    req = urllib.request.Request(f"{a.url}/api/v1/blobs/{TID}/1/secret.txt",
                                 headers={"Authorization": f"Bearer {TOKEN}"})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=5)
    assert e.value.code == 404


def test_a_corrupt_local_copy_is_detected_dropped_and_fetched_again(pair, caplog):
    a, b = pair
    add_record(a)
    store_version(a, {})
    b.sync.sync()
    mine = b.nimbus.blobs.version(TID, 1)
    code = Path(mine.code_path)
    code.write_bytes(code.read_bytes()[:-1] + b"?")
    b.sync.sync()  # not a full round: a registered copy is trusted until the periodic check
    assert code.read_bytes() != _file_bytes()["code.zip"]
    with caplog.at_level(logging.ERROR, logger="squall.nimbus.replication"):
        b.sync.sync(full=True)
    assert any("is corrupt" in r.getMessage() for r in caplog.records)
    assert code.read_bytes() == _file_bytes()["code.zip"]
    assert sorted(holders(a.store, TID, 1).values()) == [a.url, b.url]


def test_a_corrupt_copy_served_by_the_leader_is_refused(pair, caplog):
    a, b = pair
    add_record(a)
    store_version(a, {})
    theirs = Path(a.nimbus.blobs.version(TID, 1).code_path)
    theirs.write_bytes(b"tampered")
    with caplog.at_level(logging.ERROR, logger="squall.nimbus.replication"):
        b.sync.sync()
    assert any("refused a corrupt copy" in r.getMessage() for r in caplog.records)
    assert not b.nimbus.blobs.version(TID, 1).exists()
    assert sorted(holders(a.store, TID, 1).values()) == [a.url]
    with pytest.raises(NimbusError, match="no Nimbus gave a good copy"):
        b.nimbus.ensure_code(a.nimbus.record("wc"))


def test_a_leader_without_the_code_fetches_it_before_launching(pair):
    a, b = pair
    add_record(a)
    store_version(a, {})
    b.nimbus.ensure_code(b.nimbus.record("wc"))  # what the monitor does before a relaunch
    digest = a.store.get(blob_key(TID, 1))["digest"]
    b.nimbus.blobs.version(TID, 1).verify(digest)


def test_copies_of_killed_topologies_are_deleted(pair):
    a, b = pair
    add_record(a)
    store_version(a, {})
    b.sync.sync()
    a.store.delete(K.topology_key("wc"))
    forget(a.store, TID)
    assert a.store.children("blobstore") == {}
    b.sync.sync()
    # a young directory is left alone: a submit may be under way
    assert b.nimbus.blobs.version(TID, 1).exists()
    old = time.time() - 3600
    os.utime(b.nimbus.blobs.root / TID, (old, old))
    b.sync.sync()
    assert not (b.nimbus.blobs.root / TID).exists()


def test_a_sync_with_no_holder_left_reports_it(pair):
    a, b = pair
    add_record(a)
    store_version(a, {})
    a.nimbus.blobs.remove(TID)  # the only holder lost its disk
    unregister_holder(a.store, TID, 1, a.url)
    with pytest.raises(ReplicationError, match="no Nimbus holds it"):
        b.sync.ensure(TID, 1)
