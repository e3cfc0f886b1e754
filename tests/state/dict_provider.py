"""A state provider written only from docs/state.md ("Writing a provider"), as a user would.

Each namespace is a dict; prepare and commit write it to one pickle file per namespace in
``topology.state.provider.config["path"]`` (replaced atomically), so the state outlives a
killed worker process on the same machine. Nothing here comes from squall's own providers.
"""

from __future__ import annotations

import copy
import os
import pickle
import tempfile
import threading
from pathlib import Path
from urllib.parse import quote

from squall.state import KeyValueState, StateProvider


class Deleted:
    """A deleted key in the staged or pending changes (pickled with them)."""


class DictState(KeyValueState):
    """One namespace: committed and staged dicts on disk, pending changes in memory."""

    def __init__(self, file: Path) -> None:
        self._file = file
        self._lock = threading.RLock()
        self._pending: dict = {}
        self._disk = {"committed": {}, "staged": {}, "committed_txid": None, "prepared_txid": None}
        if file.exists():
            self._disk = pickle.loads(file.read_bytes())

    def _view(self) -> dict:
        view = dict(self._disk["committed"])
        for layer in (self._disk["staged"], self._pending):
            for key, value in layer.items():
                if isinstance(value, Deleted):
                    view.pop(key, None)
                else:
                    view[key] = value
        return view

    def _save(self, disk: dict) -> None:
        self._file.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self._file.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(pickle.dumps(disk))
        os.replace(tmp, self._file)
        self._disk = disk

    def get(self, key, default=None):
        with self._lock:
            return copy.deepcopy(self._view().get(key, default))

    def put(self, key, value) -> None:
        with self._lock:
            self._pending[key] = copy.deepcopy(value)

    def delete(self, key):
        with self._lock:
            old = self._view().get(key)
            self._pending[key] = Deleted()
            return old

    def __iter__(self):
        with self._lock:
            return iter(list(self._view().items()))

    def committed_txid(self):
        return self._disk["committed_txid"]

    def prepared_txid(self):
        return self._disk["prepared_txid"]

    def prepare_commit(self, txid: int) -> None:
        with self._lock:
            done = self._disk["committed_txid"]
            if done is not None and txid <= done:
                raise ValueError(f"txid {txid} is already committed ({done})")
            staged = {**self._disk["staged"], **self._pending}
            self._save({**self._disk, "staged": staged, "prepared_txid": txid})
            self._pending = {}

    def commit(self, txid: int) -> None:
        with self._lock:
            done, prepared = self._disk["committed_txid"], self._disk["prepared_txid"]
            if done is not None and txid <= done:
                return  # a COMMIT replayed after a crash
            if prepared is not None and prepared != txid:
                raise ValueError(f"cannot commit txid {txid} while txid {prepared} is prepared")
            changes = self._disk["staged"] if prepared is not None else self._pending
            committed = dict(self._disk["committed"])
            for key, value in changes.items():
                if isinstance(value, Deleted):
                    committed.pop(key, None)
                else:
                    committed[key] = value
            self._save({"committed": committed, "staged": {}, "committed_txid": txid,
                        "prepared_txid": None})
            if prepared is None:
                self._pending = {}

    def rollback(self) -> None:
        with self._lock:
            self._save({**self._disk, "staged": {}, "prepared_txid": None})
            self._pending = {}


class DictStateProvider(StateProvider):
    """Dict states kept in pickle files under the config's ``path``."""

    def new_state(self, namespace, conf, context):
        config = conf.get("topology.state.provider.config") or {}
        return DictState(Path(config["path"]) / (quote(namespace, safe="") + ".pickle"))
