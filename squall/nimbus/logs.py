"""Reading a topology's log for the UI and ``squall logs`` (Storm's logviewer, in small).

A topology master logs to ``<log dir>/<name>-<epoch>.log`` on the host of the Nimbus that
launched it; in local mode its workers' Python processes log there too, each line tagged
``squall worker pid <pid>``. ``read_log`` returns whole lines only, at most ``limit`` bytes
from ``offset`` (or the tail when no offset is given), and the offset to ask from next,
which is how ``squall logs --follow`` follows it.
"""

from __future__ import annotations

import os

LIMIT = 256 << 10


def read_log(path: str | os.PathLike, offset: int | None = None, pid: int | None = None,
             limit: int = LIMIT) -> dict:
    """``{"text", "offset", "size"}`` of the log at ``path`` (see the module docstring).

    A file shorter than ``offset`` was replaced: reading starts again at its beginning.
    """
    size = os.path.getsize(path)
    if offset is None:
        start = max(0, size - limit)
    else:
        start = offset if 0 <= offset <= size else 0
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(limit)
        size = max(size, os.fstat(f.fileno()).st_size)  # it may have grown since
    end = start + len(data)
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n")
        if cut >= 0:  # the last line is still being written: leave it for next time
            data = data[:cut + 1]
            end = start + cut + 1
    if offset is None and start > 0:
        first = data.find(b"\n")
        data = data[first + 1:] if first >= 0 else b""  # a tail starts mid-line
    lines = data.decode("utf-8", errors="replace").splitlines(keepends=True)
    if pid is not None:
        tag = f"squall worker pid {pid} "
        lines = [line for line in lines if tag in line]
    return {"text": "".join(lines), "offset": end, "size": size}
