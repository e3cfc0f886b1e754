"""Security review #9: a LocalStateProvider file is trusted with untagged pickles only in a
folder that no other user can write.

Today's failure: trust was decided from the database file's mode alone, so in a folder
others can write (or own) they could swap the file, or plant its ``-wal``/``-shm``, with
untagged pickles, and the next task to open the state unpickled them (ran their code).
Now such a store is opened untrusted: it takes tagged pickles (``topology.state.key``) and
never bare ones, as a store others can write always did.

The tests run as root with one uid: "another user" is uid 65534 (nobody), given by chown.
"""

from __future__ import annotations

import os
import pickle
import sqlite3

import msgpack
import pytest

from squall.state import StateSerializationError
from squall.state.codec import PICKLE_EXT
from squall.state.local import DB_FILE, LocalStateProvider

NS = "t/c/0@g0"
OTHER_UID = 65534


class Trap:
    """Unpickling it creates a directory: proof that code from the store ran."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


def conf(folder):
    return {"topology.state.provider.config": {"path": str(folder)}}


def made(folder):
    """A state folder as LocalStateProvider makes it, with one committed value."""
    s = LocalStateProvider().new_state(NS, conf(folder), None)
    s.put("a", 1)
    s.commit(1)
    s.close()
    return folder / DB_FILE


def plant(db, trap):
    """What the other user writes: an untagged pickle in the committed table."""
    value = msgpack.packb(msgpack.ExtType(PICKLE_EXT, pickle.dumps(Trap(str(trap)))), use_bin_type=True)
    with sqlite3.connect(db) as c:
        c.execute("INSERT OR REPLACE INTO committed (ns, key, value) VALUES (?, ?, ?)",
                  (NS, msgpack.packb("q"), value))
    c.close()


def opened_trusted(folder, trap):
    """Whether the state loads the planted pickle; it must not run either way."""
    state = LocalStateProvider().new_state(NS, conf(folder), None)
    try:
        trusted = state._codec.trusted
        try:
            state.get("q")
        except StateSerializationError:
            pass
        return trusted, trap.exists()
    finally:
        state.close()


def test_sec9_a_private_folder_is_trusted(tmp_path):
    db = made(tmp_path / "state")
    plant(db, tmp_path / "ran")
    assert opened_trusted(tmp_path / "state", tmp_path / "ran") == (True, True)  # the owner's own pickles


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o1777, 0o757])
def test_sec9_a_folder_others_can_write_is_not_trusted(tmp_path, mode):
    db = made(tmp_path / "state")
    (tmp_path / "state").chmod(mode)  # the file itself stays 0600
    plant(db, tmp_path / "ran")
    assert opened_trusted(tmp_path / "state", tmp_path / "ran") == (False, False)


def test_sec9_a_folder_owned_by_another_user_is_not_trusted(tmp_path):
    db = made(tmp_path / "state")
    os.chown(tmp_path / "state", OTHER_UID, OTHER_UID)
    (tmp_path / "state").chmod(0o755)
    plant(db, tmp_path / "ran")
    assert opened_trusted(tmp_path / "state", tmp_path / "ran") == (False, False)


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm"])
def test_sec9_a_database_or_wal_file_of_another_user_is_not_trusted(tmp_path, suffix):
    db = made(tmp_path / "state")
    plant(db, tmp_path / "ran")  # first: closing its connection removes the -wal
    planted = tmp_path / "state" / f"{DB_FILE}{suffix}"
    planted.touch()
    os.chown(planted, OTHER_UID, OTHER_UID)
    planted.chmod(0o600)
    assert opened_trusted(tmp_path / "state", tmp_path / "ran") == (False, False)


def test_sec9_a_wal_file_others_can_write_is_not_trusted(tmp_path):
    db = made(tmp_path / "state")
    plant(db, tmp_path / "ran")
    (tmp_path / "state" / f"{DB_FILE}-wal").touch()
    os.chmod(tmp_path / "state" / f"{DB_FILE}-wal", 0o666)
    assert opened_trusted(tmp_path / "state", tmp_path / "ran") == (False, False)


def test_sec9_an_ancestor_others_can_write_without_the_sticky_bit_is_not_trusted(tmp_path):
    shared = tmp_path / "team"
    shared.mkdir()
    db = made(shared / "state")
    shared.chmod(0o777)  # they can rename "state" away and put a folder of their own in its place
    plant(db, tmp_path / "ran")
    assert opened_trusted(shared / "state", tmp_path / "ran") == (False, False)
    shared.chmod(0o1777)  # sticky, as /tmp: the folder, ours, cannot be renamed by others
    assert opened_trusted(shared / "state", tmp_path / "ran") == (True, True)
