"""Security item 2: the store is the Nimbus's only, and what it holds is checked on reading.

ZooKeeper: with ``squall nimbus --zk-auth`` every znode squall creates carries a digest
ACL, so a client without the credential can neither read the topologies' secrets nor
rewrite records. Every store: a record's ``id`` is a topology id, never a path.
"""

from __future__ import annotations

import time

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from squall.store import BlobStore, open_store
from tests.nimbus.harness import NimbusProcess, wait_for

CRED = "squall:s3cret-pass"


def anonymous(zookeeper) -> KazooClient:
    client = KazooClient(hosts=f"127.0.0.1:{zookeeper.port}")
    client.start(timeout=10)
    return client


def test_sec2_zk_store_with_auth_puts_acls_on_every_znode(zookeeper):
    root = "/sec2-store"
    store = open_store(zookeeper.uri(root), auth=CRED)
    try:
        store.put("topologies/wc", {"name": "wc", "secret": "ab" * 32})
        election = store.election({"url": "http://127.0.0.1:1"})
        election.start()
        wait_for(election.is_leader, 20, "leadership")
        other = anonymous(zookeeper)
        try:
            for path in (root, f"{root}/topologies", f"{root}/topologies/wc"):
                with pytest.raises(NoAuthError):
                    other.get(path)
                with pytest.raises(NoAuthError):
                    other.set(path, b"{}")
            with pytest.raises(NoAuthError):
                other.create(f"{root}/topologies/evil", b"{}")
            with pytest.raises(NoAuthError):
                other.get_children(f"{root}/nimbus/election")
        finally:
            other.stop()
            other.close()
        # a client with the credential reads it all
        reader = open_store(zookeeper.uri(root), auth=CRED)
        assert reader.get("topologies/wc")["secret"] == "ab" * 32
        reader.close()
        election.stop()
    finally:
        store.close()


def test_sec2_open_root_is_tightened(zookeeper):
    root = "/sec2-open"
    other = anonymous(zookeeper)
    other.ensure_path(f"{root}/topologies")  # made by someone else, open to the world
    store = open_store(zookeeper.uri(root), auth=CRED)
    store.put("topologies/wc", {"name": "wc"})
    try:
        with pytest.raises(NoAuthError):
            other.get(f"{root}/topologies/wc")
        with pytest.raises(NoAuthError):
            other.get_children(root)
    finally:
        store.close()
        other.stop()
        other.close()


def test_sec2_nimbus_zk_auth(zookeeper, tmp_path):
    secret_file = tmp_path / "zk-auth"
    secret_file.write_text(CRED + "\n")
    secret_file.chmod(0o600)
    root = "/sec2-nimbus"
    nimbus = NimbusProcess(tmp_path / "home", tmp_path / "w", store=zookeeper.uri(root),
                           args=["--zk-auth", f"@{secret_file}"])
    nimbus.start()
    try:
        nimbus.wait_leader()
        other = anonymous(zookeeper)
        try:
            with pytest.raises(NoAuthError):
                other.get_children(root)
            with pytest.raises(NoAuthError):
                other.get_children(f"{root}/nimbus/election")
        finally:
            other.stop()
            other.close()
        assert CRED not in nimbus.log_tail(100000)
    finally:
        nimbus.stop()


def test_sec2_blob_store_takes_topology_ids_only(tmp_path):
    blobs = BlobStore(tmp_path / "blobs")
    victim = tmp_path / "victim"
    victim.mkdir()
    for bad in ("../victim", "/etc", "a/b", "..", ""):
        with pytest.raises(ValueError, match="topology id"):
            blobs.remove(bad)
        with pytest.raises(ValueError, match="topology id"):
            blobs.version(bad, 1)
    assert victim.exists()


def test_sec2_nimbus_never_takes_a_record_id_as_a_path(tmp_path):
    """A forged KILLED record: today the leader's monitor 'finished the kill' with rmtree."""
    home = tmp_path / "home"
    victim = home / "victim"
    nimbus = NimbusProcess(home, tmp_path / "w").start()
    try:
        nimbus.wait_leader()
        victim.mkdir()
        (victim / "precious").write_text("keep me")
        store = open_store(f"sqlite:{home / 'nimbus.sqlite3'}")
        store.put("topologies/evil", {"name": "evil", "id": "../victim", "status": "KILLED", "epoch": 1,
                                      "secret": "ab" * 32, "versions": [1], "version": 1})
        store.close()
        wait_for(lambda: "evil" in nimbus.log_tail(100000), 15, "the monitor to see the record")
        time.sleep(3)  # three more monitor rounds
        assert (victim / "precious").exists()
        assert "malformed: id" in nimbus.log_tail(100000)
    finally:
        nimbus.stop()


@pytest.mark.spark
@pytest.mark.slow
def test_sec2_a_topology_runs_end_to_end_under_zk_auth(zookeeper, tmp_path):
    """Nimbus, its topology master (handed the credential in its environment) and the
    workers (sealed coordination, bound links, a state key) on an authenticated ZooKeeper."""
    from tests.nimbus import results as R
    from tests.nimbus.harness import Cli, cleanup_topologies
    from tests.nimbus.topology_source import write_topology

    root = "/sec2-e2e"
    home, out = tmp_path / "home", tmp_path / "out"
    source = write_topology(tmp_path / "wordcount.py", out, tmp_path / "state", "v1", rate=200, n=400)
    nimbus = NimbusProcess(home, tmp_path, store=zookeeper.uri(root), args=["--zk-auth", CRED]).start()
    cli = Cli(nimbus.url, home, tmp_path)
    try:
        nimbus.wait_leader()
        proc = cli("submit", str(source), "--name", "wc-auth", timeout=240)
        assert proc.returncode == 0, proc.stderr + nimbus.log_tail()
        wait_for(lambda: len(R.acked(out)) >= 50, 90, "50 acked sentences")
        info = cli.json("info", "wc-auth")
        assert info["master"]["state"] == "RUNNING" and info["status"] == "ACTIVE"
        assert sum(w.get("rejected_frames", 0) for w in info["workers"]) == 0
        other = anonymous(zookeeper)
        try:
            for kind in ("topologies", "masters", "statekeys"):
                path = f"{root}/{kind}/wc-auth"
                with pytest.raises(NoAuthError):
                    other.get(path)
        finally:
            other.stop()
            other.close()
        store = open_store(zookeeper.uri(root), auth=CRED)
        assert len(store.get("statekeys/wc-auth")["key"]) == 64
        store.close()
        assert cli("kill", "wc-auth", "--wait", "0", timeout=120).returncode == 0
    finally:
        cleanup_topologies(cli, home)
        nimbus.stop()


def test_sec2_records_are_checked_field_by_field():
    from squall.store import keys as K

    good = {"name": "wc", "id": "wc-1700000000-abcdef", "secret": "ab" * 32, "epoch": 1, "version": 1,
            "versions": [1], "launcher": {"pid": 4242, "host": "h"}}
    assert K.check_record("wc", good) is good
    for field, value in (("id", "../x"), ("id", "wc-1-abcdef/.."), ("name", "other"), ("secret", ""),
                         ("epoch", "1"), ("versions", ["1"]), ("launcher", {"pid": 1}),
                         ("launcher", {"pid": -5})):
        with pytest.raises(K.RecordError, match=field.split(".")[0]):
            K.check_record("wc", {**good, field: value})
    reg = {"epoch": 1, "control": "http://127.0.0.1:4567", "state": "RUNNING"}
    assert K.check_master("wc", reg) is reg
    for control in ("http://evil.example/steal?x=", "https://h:1", "file:///etc/passwd"):
        with pytest.raises(K.RecordError, match="control"):
            K.check_master("wc", {**reg, "control": control})
