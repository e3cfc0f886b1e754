"""Staged writes published at checkpoint commits: the files of a sink's transactions.

A sink task that follows checkpoints keeps, under ``<output>/_squall_txn/<owner>/``:

- ``tmp/<batch>/``: a batch being written (an interrupted write leaves it here);
- ``open/<batch>/``: batches fully written since the last prepare (moved in by rename);
- ``tx-<txid>/<batch>/``: the batches of transaction ``txid``, sealed at its prepare.

``seal(txid)`` renames ``open`` to ``tx-<txid>`` (one atomic rename, after fsync of the
data). ``publish(txid)`` moves the data files of every sealed transaction up to ``txid``
into the output, each file by one rename, then removes the transaction's folder: run again
after a crash it moves the files left and nothing twice, so a replayed commit is
idempotent. ``recover(committed)`` is what a (re)started or rolled-back task does: publish
what its last commit covers, discard everything else. The folder's name starts with ``_``,
so Spark's and pyarrow's readers skip it.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from pathlib import Path

ROOT = "_squall_txn"
_SEALED = re.compile(r"tx-(\d+)$")


def move_data_files(source: Path, target: Path) -> int:
    """Move the data files under ``source`` to the same places under ``target``; returns how many.

    Names starting with ``_`` or ``.`` (``_SUCCESS``, checksums, Spark's ``_temporary``)
    are left behind.
    """
    moved = 0
    for root, dirs, files in os.walk(source):
        dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
        rel = Path(root).relative_to(source)
        for name in files:
            if name.startswith(("_", ".")):
                continue
            (target / rel).mkdir(parents=True, exist_ok=True)
            os.replace(Path(root) / name, target / rel / name)
            moved += 1
    return moved


def _fsync_tree(path: Path) -> None:
    """Flush every file and folder under ``path`` to disk: staged data survives a machine crash."""
    for root, _dirs, files in os.walk(path):
        for name in files:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(Path(root))


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class TxnStaging:
    """One sink task's staged transactions under ``output/_squall_txn/owner``."""

    def __init__(self, output: Path, owner: str) -> None:
        self.output = output
        self.root = output / ROOT / owner
        self.tmp = self.root / "tmp"
        self.open = self.root / "open"

    def new_batch(self) -> Path:
        """A fresh folder for one batch's write (under ``tmp``; not created)."""
        return self.tmp / uuid.uuid4().hex

    def add(self, written: Path) -> None:
        """A batch written completely to ``written`` joins the open transaction (a rename)."""
        self.open.mkdir(parents=True, exist_ok=True)
        os.replace(written, self.open / written.name)

    def seal(self, txid: int) -> int:
        """Make the open batches transaction ``txid``, durably; returns how many batches."""
        if not self.open.is_dir():
            return 0
        batches = len(list(self.open.iterdir()))
        _fsync_tree(self.open)
        sealed = self.root / f"tx-{txid}"
        if sealed.exists():  # a transaction of this txid from before a rollback: gone
            shutil.rmtree(sealed)
        os.replace(self.open, sealed)
        _fsync_dir(self.root)
        return batches

    def sealed(self) -> list[int]:
        """The txids of the sealed transactions, in order."""
        if not self.root.is_dir():
            return []
        found = (_SEALED.match(p.name) for p in self.root.iterdir())
        return sorted(int(m.group(1)) for m in found if m)

    def publish(self, txid: int) -> int:
        """Move the files of every sealed transaction up to ``txid`` into the output."""
        moved = 0
        for t in self.sealed():
            if t > txid:
                break
            folder = self.root / f"tx-{t}"
            for written in sorted(folder.iterdir()):  # one folder per batch, laid out as the output
                moved += move_data_files(written, self.output)
            _fsync_dir(self.output)
            shutil.rmtree(folder)
        return moved

    def discard_open(self) -> None:
        """Drop the batches not yet sealed, and writes that never finished."""
        shutil.rmtree(self.open, ignore_errors=True)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def recover(self, committed: int | None) -> tuple[int, list[int]]:
        """Publish the sealed transactions up to ``committed``, discard all the rest.

        Returns (files published, txids discarded).
        """
        moved = self.publish(committed) if committed is not None else 0
        dropped = self.sealed()
        for t in dropped:
            shutil.rmtree(self.root / f"tx-{t}")
        self.discard_open()
        return moved, dropped
