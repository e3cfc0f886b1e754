"""LocalStateProvider specifics: its config, the SQLite file, and concurrent writers (threads and
processes) sharing one file; a locked database as a storage outage (D12)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from squall.state import StateConfigError, StateUnavailableError
from squall.state.local import DB_FILE, LocalKeyValueState, LocalStateProvider


def conf_for(path) -> dict:
    return {"topology.state.provider.config": {"path": str(path)}}


def test_the_directory_is_created_and_holds_one_wal_database(tmp_path):
    target = tmp_path / "a" / "b"
    s = LocalStateProvider().new_state("ns", conf_for(target), None)
    s.put("k", 1)
    s.commit(1)
    s.close()
    assert (target / DB_FILE).exists()
    with sqlite3.connect(target / DB_FILE) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert tables == {"committed", "staged", "txids"}
        txids = db.execute("SELECT ns, committed_txid, prepared_txid FROM txids").fetchall()
        assert txids == [("ns", 1, None)]


def test_staged_changes_and_tombstones_are_rows_until_commit(tmp_path):
    s = LocalStateProvider().new_state("ns", conf_for(tmp_path), None)
    s.put("gone", 1)
    s.commit(1)
    s.delete("gone")
    s.put("new", 2)
    s.prepare_commit(2)
    with sqlite3.connect(tmp_path / DB_FILE) as db:
        staged = db.execute("SELECT value IS NULL FROM staged WHERE ns = 'ns' ORDER BY 1").fetchall()
        assert staged == [(0,), (1,)]  # one put, one tombstone
        assert db.execute("SELECT count(*) FROM committed").fetchone() == (1,)
    s.commit(2)
    with sqlite3.connect(tmp_path / DB_FILE) as db:
        assert db.execute("SELECT count(*) FROM staged").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM committed").fetchone() == (1,)
    s.close()


@pytest.mark.parametrize("config, message", [
    ({}, 'needs topology.state.provider.config = {"path": <directory>}'),
    ({"path": ""}, 'no "path" was given'),
    ({"path": "/tmp/x", "pth": 1}, r"unknown keys \['pth'\] for LocalStateProvider"),
    ("{not json", "is not valid JSON"),
    (["path"], "must be a dict, got list"),
])
def test_bad_config_is_a_clear_error(config, message):
    with pytest.raises(StateConfigError, match=message):
        LocalStateProvider().new_state("ns", {"topology.state.provider.config": config}, None)


def test_config_as_a_json_string_like_storm_yaml(tmp_path):
    conf = {"topology.state.provider.config": json.dumps({"path": str(tmp_path)})}
    LocalStateProvider().new_state("ns", conf, None).close()
    assert (tmp_path / DB_FILE).exists()


def test_a_path_that_is_a_file_is_a_clear_error(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(StateConfigError, match="cannot create the state directory"):
        LocalStateProvider().new_state("ns", conf_for(tmp_path / "file"), None)


def test_threads_with_their_own_namespaces_share_the_file(tmp_path):
    errors = []

    def task(i: int) -> None:
        try:
            s = LocalStateProvider().new_state(f"task-{i}", conf_for(tmp_path), None)
            for txid in range(1, 21):
                s.put("count", txid)
                s.put(("txid", txid), i)
                s.prepare_commit(txid)
                s.commit(txid)
            s.close()
        except Exception as e:  # noqa: BLE001 - any failure is reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=task, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    for i in range(8):
        s = LocalStateProvider().new_state(f"task-{i}", conf_for(tmp_path), None)
        assert s.get("count") == 20 and s.committed_txid() == 20 and len(dict(s)) == 21
        s.close()


WRITER = textwrap.dedent("""
    import sys
    from squall.state.local import LocalStateProvider
    path, namespace, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    s = LocalStateProvider().new_state(namespace, {"topology.state.provider.config": {"path": path}}, None)
    for txid in range(1, n + 1):
        for k in range(10):
            s.put((txid, k), namespace)
        s.delete((txid - 1, 0))
        s.prepare_commit(txid)
        s.commit(txid)
""")


def test_two_processes_write_different_namespaces_of_one_file_at_once(tmp_path, subprocess_env):
    # a fresh directory, so both children also race to create the database and its tables
    path, n = str(tmp_path / "shared"), 60
    children = [subprocess.Popen([sys.executable, "-c", WRITER, path, ns, str(n)], env=subprocess_env,
                                 stderr=subprocess.PIPE, text=True) for ns in ("left", "right")]
    for child in children:
        _, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
    for ns in ("left", "right"):
        s = LocalStateProvider().new_state(ns, conf_for(path), None)
        got = dict(s)
        assert s.committed_txid() == n
        assert len(got) == n * 10 - (n - 1) and set(got.values()) == {ns}
        assert (n, 0) in got and (1, 0) not in got
        s.close()


def test_a_locked_database_is_unavailable_then_recovers(tmp_path):
    """D12 for local: a writer holding the lock past the busy timeout fails the call, not the state."""
    LocalStateProvider().new_state("ns", conf_for(tmp_path), None).close()  # creates the file
    s = LocalKeyValueState("ns", str(tmp_path / DB_FILE), busy_timeout=0.2)
    s.put("a", 1)
    blocker = sqlite3.connect(tmp_path / DB_FILE, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    with pytest.raises(StateUnavailableError) as err:
        s.prepare_commit(1)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"LocalStateProvider: state database {tmp_path / DB_FILE} is unavailable")
    assert "locked" in message
    assert s.prepared_txid() is None  # readers are not blocked in WAL mode
    blocker.execute("ROLLBACK")
    blocker.close()
    s.prepare_commit(1)  # the pending change was kept
    s.commit(1)
    assert LocalKeyValueState("ns", str(tmp_path / DB_FILE)).get("a") == 1
    s.close()


def test_a_database_from_a_newer_squall_is_refused(tmp_path):
    LocalStateProvider().new_state("ns", conf_for(tmp_path), None).close()
    with sqlite3.connect(tmp_path / DB_FILE) as db:
        db.execute("PRAGMA user_version = 99")
    with pytest.raises(StateConfigError, match="schema version 99, newer than"):
        LocalStateProvider().new_state("ns", conf_for(tmp_path), None)


OPENER = textwrap.dedent("""
    import os, sys, time
    from squall.state.local import LocalStateProvider
    path, namespace, ready, go = sys.argv[1:5]
    open(ready, "w").close()
    while not os.path.exists(go):   # a barrier: every child opens at the same instant
        time.sleep(0)
    s = LocalStateProvider().new_state(namespace, {"topology.state.provider.config": {"path": path}}, None)
    s.put("k", namespace)
    s.prepare_commit(1)
    s.commit(1)
    s.close()
""")


@pytest.mark.parametrize("attempt", range(4))
def test_many_processes_create_one_new_database_at_the_same_instant(tmp_path, subprocess_env, attempt):
    """Issue 19: opening a new file races on the journal-mode switch, which SQLite answers
    with "locked" at once rather than after the busy timeout; every opener must succeed."""
    path, n = tmp_path / "shared", 12
    go = tmp_path / "go"
    ready = [tmp_path / f"ready-{i}" for i in range(n)]
    children = [subprocess.Popen([sys.executable, "-c", OPENER, str(path), f"ns-{i}", str(ready[i]), str(go)],
                                 env=subprocess_env, stderr=subprocess.PIPE, text=True)
                for i in range(n)]
    try:
        deadline = time.monotonic() + 120  # children are real processes that need to start
        while not all(r.exists() for r in ready) and time.monotonic() < deadline:
            time.sleep(0.01)
        go.touch()
        errors = []
        for child in children:
            _, err = child.communicate(timeout=120)
            if child.returncode != 0:
                errors.append(err.strip().splitlines()[-1])
    finally:
        for child in children:
            child.kill()
    assert errors == []
    for i in range(n):
        s = LocalStateProvider().new_state(f"ns-{i}", conf_for(path), None)
        assert s.get("k") == f"ns-{i}" and s.committed_txid() == 1
        s.close()


def test_an_unopenable_database_is_a_clear_error_at_once(tmp_path):
    (tmp_path / DB_FILE).mkdir()  # not a contention: must not be retried for the busy timeout
    started = time.monotonic()
    with pytest.raises(StateUnavailableError) as err:
        LocalKeyValueState("ns", str(tmp_path / DB_FILE), busy_timeout=5.0)
    assert time.monotonic() - started < 2.5
    assert "\n" not in str(err.value) and "unable to open database file" in str(err.value)


def test_a_corrupt_file_is_a_clear_error_at_once(tmp_path):
    (tmp_path / DB_FILE).write_bytes(b"this is not a database" * 100)
    started = time.monotonic()
    with pytest.raises((StateUnavailableError, StateConfigError)) as err:
        LocalKeyValueState("ns", str(tmp_path / DB_FILE), busy_timeout=5.0)
    assert time.monotonic() - started < 2.5
    assert "not a database" in str(err.value) and "\n" not in str(err.value)
