"""Shipping a multilang component's resources directory with the topology.

The directory is packed into the component when it is built (on the client), so it
travels with the pickled topology to any worker, and unpacked once per worker process
into a directory named by its content hash, which becomes the subprocess's working
directory (Storm's ``resources/`` inside the topology jar).
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import shutil
import tarfile
import tempfile
import threading
from pathlib import Path

from squall.runtime.private_dirs import not_private, private_directory

MAX_RESOURCES_BYTES = 256 * 1024 * 1024
log = logging.getLogger("squall.multilang")
_lock = threading.Lock()
_unpacked: dict[str, str] = {}  # digest -> folder, once per process


def pack(directory: str | os.PathLike[str]) -> bytes:
    """The files under ``directory`` as a gzipped tar (modes kept: scripts stay executable)."""
    root = Path(directory)
    if not root.is_dir():
        raise ValueError(f"multilang resources {str(directory)!r} is not a directory")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path in sorted(root.rglob("*")):
            if "__pycache__" in path.parts:
                continue
            tar.add(path, arcname=str(path.relative_to(root)), recursive=False)
    data = buf.getvalue()
    if len(data) > MAX_RESOURCES_BYTES:
        raise ValueError(f"multilang resources {str(directory)!r} pack to {len(data)} bytes, more "
                         f"than {MAX_RESOURCES_BYTES}: ship large files another way")
    return data


def unpack(blob: bytes) -> str:
    """Unpack ``blob`` (once per process and content) and return the directory.

    Shared by the worker processes of this user on this host: ``$TMPDIR/squall-multilang-<uid>/
    <digest>``, used only while both folders pass ``private_dirs.not_private`` (another local
    user could otherwise plant the script the subprocess runs). If the shared folder is not
    private, the content goes to a fresh folder of this process instead (``mkdtemp``), so a
    planted folder can neither run code nor stop the topology.
    """
    digest = hashlib.sha256(blob).hexdigest()[:32]
    with _lock:
        done = _unpacked.get(digest)
        if done is not None and os.path.isdir(done):  # a cleaner may have removed it since
            return done
        base = Path(tempfile.gettempdir()) / f"squall-multilang-{os.getuid()}"
        try:
            target = _shared(base, digest, blob)
        except PermissionError as e:
            log.warning("multilang resources: %s; unpacking into a folder of this process", e)
            target = Path(tempfile.mkdtemp(prefix=f"squall-multilang-{digest}-"))
            _extract(blob, target)
        _unpacked[digest] = str(target)
        return str(target)


def _shared(base: Path, digest: str, blob: bytes) -> Path:
    """``base/digest`` holding ``blob``'s files, made if missing; PermissionError if not private."""
    private_directory(base, "multilang resources")
    target = base / digest
    if not target.exists() and not target.is_symlink():
        # staged in a private folder of its own, then renamed into place: a reader never sees
        # half the files, and of two processes unpacking at once one rename wins
        staging = Path(tempfile.mkdtemp(prefix=f".{digest}-", dir=base))
        try:
            _extract(blob, staging)
            staging.rename(target)
        except OSError:
            if not target.is_dir():
                raise
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
    reason = not_private(target)
    if reason is not None:
        raise PermissionError(f"{target} is not a private directory of this user ({reason})")
    return target


def _extract(blob: bytes, into: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        tar.extractall(into, filter="tar")
