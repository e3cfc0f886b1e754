"""Shipping a multilang component's resources directory with the topology.

The directory is packed into the component when it is built (on the client), so it
travels with the pickled topology to any worker, and unpacked once per worker process
into a directory named by its content hash, which becomes the subprocess's working
directory (Storm's ``resources/`` inside the topology jar).
"""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import tempfile
import threading
from pathlib import Path

MAX_RESOURCES_BYTES = 256 * 1024 * 1024
_lock = threading.Lock()


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
    """Unpack ``blob`` (once per process and content) and return the directory."""
    digest = hashlib.sha256(blob).hexdigest()[:32]
    base = Path(tempfile.gettempdir()) / f"squall-multilang-{os.getuid()}"
    target = base / digest
    with _lock:
        if target.is_dir():
            return str(target)
        base.mkdir(mode=0o700, parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{digest}-", dir=base))
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
            tar.extractall(staging, filter="tar")
        try:
            staging.rename(target)
        except OSError:  # another process unpacked the same content first
            pass
    return str(target)
