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

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from squall.store.keys import check_topology_id

CODE = "code.zip"
TOPOLOGY = "topology.pkl"
CONF = "conf.json"
FILES = (CODE, TOPOLOGY, CONF)  # what one version is, in the order its digest reads them


class CorruptBlob(ValueError):
    """A copy of a version whose content does not match its digest; the message says which."""


def digest_of(files: Mapping[str, bytes]) -> str:
    """The content digest of one version: SHA-256 over each file's name, length and bytes.

    Every copy of a version (the leader's, each standby's) is checked against it.

    >>> digest_of({"code.zip": b"c", "topology.pkl": b"t", "conf.json": b"{}"})[:12]
    'b4f59b4254d0'
    """
    h = hashlib.sha256()
    for name in FILES:
        data = files[name]
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def conf_bytes(conf: dict) -> bytes:
    """How a version's configuration is stored (its digest covers these bytes)."""
    return json.dumps(conf, sort_keys=True).encode()


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

    def exists(self) -> bool:
        """True if the version's directory is there (its files may still be corrupt)."""
        return self.directory.is_dir()

    def file_bytes(self) -> dict[str, bytes]:
        """The three files' bytes, by name (``OSError`` if one is missing)."""
        return {name: (self.directory / name).read_bytes() for name in FILES}

    def digest(self) -> str | None:
        """The digest of the files as they are on disk now, or None if one is missing."""
        try:
            return digest_of(self.file_bytes())
        except OSError:
            return None

    def verify(self, expected: str) -> None:
        """Raise ``CorruptBlob`` unless the files on disk have the digest ``expected``."""
        got = self.digest()
        if got != expected:
            what = "a file is missing" if got is None else f"digest {got[:16]}..."
            raise CorruptBlob(f"{self.directory}: {what}, expected {expected[:16]}...")


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
        return self.write_files(topology_id, version,
                                {CODE: code, TOPOLOGY: topology, CONF: conf_bytes(conf)})

    def write_files(self, topology_id: str, version: int, files: Mapping[str, bytes],
                    expected: str | None = None) -> VersionBlobs:
        """Store one version from its three files' bytes (a replica copied from another Nimbus).

        With ``expected``, the files are checked against that digest before they take the
        version's place: a corrupt copy raises ``CorruptBlob`` and leaves nothing behind.
        Raises ``FileExistsError`` if the version exists already.
        """
        if expected is not None and digest_of(files) != expected:
            raise CorruptBlob(f"{topology_id} v{version}: the copy's digest {digest_of(files)[:16]}... is "
                              f"not {expected[:16]}...; refused")
        blobs = self.version(topology_id, version)
        blobs.directory.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".v{version}-", dir=blobs.directory.parent))
        try:
            for name in FILES:
                (staging / name).write_bytes(files[name])
            if expected is not None:  # what reached the disk, not only what was received
                VersionBlobs(staging).verify(expected)
            os.rename(staging, blobs.directory)  # fails if the version exists: never overwritten
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return blobs

    def remove_version(self, topology_id: str, version: int) -> None:
        """Delete one version (a corrupt copy, before it is fetched again)."""
        shutil.rmtree(self.version(topology_id, version).directory, ignore_errors=True)

    def topology_ids(self) -> list[str]:
        """The topology ids that have a directory here (malformed names are skipped)."""
        if not self.root.is_dir():
            return []
        out = []
        for entry in sorted(self.root.iterdir()):
            try:
                check_topology_id(entry.name)
            except ValueError:
                continue
            if entry.is_dir():
                out.append(entry.name)
        return out

    def versions(self, topology_id: str) -> list[int]:
        """The versions of ``topology_id`` held here (complete or not)."""
        directory = self._dir(topology_id)
        if not directory.is_dir():
            return []
        return sorted(int(e.name[1:]) for e in directory.iterdir()
                      if e.name[:1] == "v" and e.name[1:].isdigit())

    def remove(self, topology_id: str) -> None:
        """Delete every version of ``topology_id``."""
        shutil.rmtree(self._dir(topology_id), ignore_errors=True)
