"""The blob store: each topology version's code, topology and configuration as files.

Layout under the blob directory (local by default; any path the Spark executors can also
read on a cluster, such as a shared mount, since workers import the code from there)::

    <topology id>/v<version>/code.zip        the user's modules (imported by every worker)
    <topology id>/v<version>/topology.pkl    cloudpickle of the StormTopology
    <topology id>/v<version>/conf.json       the topology's configuration

Files are written to a temporary name and renamed, so a reader never sees half a file.
A version is never modified once written; a killed topology's directory is removed.
A topology id must have the form Nimbus gives ids (``keys.check_topology_id``): one read
from a forged record can never name a path outside the blob directory.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from squall.store.keys import check_topology_id

CODE = "code.zip"
TOPOLOGY = "topology.pkl"
CONF = "conf.json"


@dataclass(frozen=True)
class VersionBlobs:
    """The three files of one topology version."""

    directory: Path

    @property
    def code_path(self) -> str:
        """The code zip's path (what workers put on ``sys.path``)."""
        return str(self.directory / CODE)

    def topology_bytes(self) -> bytes:
        """The pickled topology."""
        return (self.directory / TOPOLOGY).read_bytes()

    def conf(self) -> dict:
        """The stored configuration."""
        return json.loads((self.directory / CONF).read_text())


class BlobStore:
    """Topology versions under ``root`` (see the module docstring)."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root).resolve()

    def _dir(self, topology_id: str) -> Path:
        path = self.root / check_topology_id(topology_id)
        if path.parent != self.root:  # belt and braces: the id's form already excludes it
            raise ValueError(f"{topology_id!r} is not a topology id")
        return path

    def version(self, topology_id: str, version: int) -> VersionBlobs:
        """The files of ``version`` of ``topology_id`` (they may not exist)."""
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise ValueError(f"{version!r} is not a topology version")
        return VersionBlobs(self._dir(topology_id) / f"v{version}")

    def write(self, topology_id: str, version: int, *, code: bytes, topology: bytes,
              conf: dict) -> VersionBlobs:
        """Store one version; raises ``FileExistsError`` if it exists already."""
        blobs = self.version(topology_id, version)
        blobs.directory.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".v{version}-", dir=blobs.directory.parent))
        try:
            (staging / CODE).write_bytes(code)
            (staging / TOPOLOGY).write_bytes(topology)
            (staging / CONF).write_text(json.dumps(conf, sort_keys=True))
            os.rename(staging, blobs.directory)  # fails if the version exists: never overwritten
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return blobs

    def remove(self, topology_id: str) -> None:
        """Delete every version of ``topology_id``."""
        shutil.rmtree(self._dir(topology_id), ignore_errors=True)
