"""Staged transactions of a checkpoint-aligned sink: seal, publish, recover (plain files)."""

from __future__ import annotations

import os

import pytest

from squall.connectors.staging import TxnStaging


def batch(staging: TxnStaging, *names: str) -> None:
    folder = staging.new_batch()
    (folder / "k=1").mkdir(parents=True)
    for name in names:
        (folder / "k=1" / name).write_text(name)
    (folder / "_SUCCESS").touch()
    staging.add(folder)


def published(out) -> list[str]:
    return sorted(p.name for p in (out / "k=1").glob("*")) if (out / "k=1").exists() else []


def test_a_transaction_is_published_at_its_commit_only(tmp_path):
    s = TxnStaging(tmp_path, "write-0")
    batch(s, "a", "b")
    assert s.seal(7) == 1
    batch(s, "c")  # the next transaction, open
    assert published(tmp_path) == []
    assert s.publish(7) == 2
    assert published(tmp_path) == ["a", "b"]
    assert s.sealed() == []
    assert s.publish(7) == 0  # a replayed commit: nothing twice
    assert s.seal(8) == 1 and s.publish(8) == 1
    assert published(tmp_path) == ["a", "b", "c"]


def test_a_commit_interrupted_midway_finishes_on_recovery_without_duplicates(tmp_path):
    s = TxnStaging(tmp_path, "write-0")
    batch(s, "a", "b", "c")
    s.seal(3)
    # a crash after one file was moved
    [first] = sorted((tmp_path / "_squall_txn" / "write-0" / "tx-3").rglob("a"))
    (tmp_path / "k=1").mkdir()
    os.replace(first, tmp_path / "k=1" / "a")
    moved, dropped = TxnStaging(tmp_path, "write-0").recover(committed=3)
    assert (moved, dropped) == (2, [])
    assert published(tmp_path) == ["a", "b", "c"]


def test_recovery_discards_what_no_commit_covers(tmp_path):
    s = TxnStaging(tmp_path, "write-0")
    batch(s, "a")
    s.seal(4)
    batch(s, "b")
    s.seal(5)  # prepared, never committed
    batch(s, "c")  # open
    (s.tmp / "half-written").mkdir(parents=True)
    moved, dropped = s.recover(committed=4)
    assert (moved, dropped) == (1, [5])
    assert published(tmp_path) == ["a"]
    assert not s.open.exists() and not s.tmp.exists() and s.sealed() == []


def test_a_rolled_back_txid_can_be_sealed_again(tmp_path):
    s = TxnStaging(tmp_path, "write-0")
    batch(s, "old")
    s.seal(9)
    s.recover(committed=8)  # rollback of 9
    batch(s, "new")
    s.seal(9)
    s.publish(9)
    assert published(tmp_path) == ["new"]


@pytest.mark.parametrize("committed", [None, 0])
def test_nothing_committed_yet_discards_everything(tmp_path, committed):
    s = TxnStaging(tmp_path, "write-0")
    batch(s, "a")
    s.seal(1)
    assert s.recover(committed) == (0, [1])
    assert published(tmp_path) == []
