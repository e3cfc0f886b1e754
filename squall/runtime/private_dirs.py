"""Folders in the shared temporary directory that only this user may have written.

A worker puts the topology's code zip (``squall-code-<uid>``) and multilang resources
(``squall-multilang-<uid>``) under ``tempfile.gettempdir()``, a directory every local user
can write: another user could create the folder first, or a folder inside it, and have
their code run as the topology's user. A folder is used only if ``lstat`` shows a real
directory (not a symlink) owned by this uid, with no rights for group or others.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["not_private", "private_directory"]


def not_private(path: Path) -> str | None:
    """Why ``path`` is not a private folder of this user (None if it is one)."""
    try:
        st = path.lstat()
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if st.st_uid != os.getuid():
        return f"is owned by uid {st.st_uid}, not {os.getuid()}"
    if st.st_mode & 0o077:
        return f"has mode {stat.S_IMODE(st.st_mode):04o}: group or others have rights on it"
    return None


def private_directory(path: Path, what: str) -> Path:
    """``path``, made mode 0700 if missing; ``PermissionError`` if it is not this user's own.

    ``what``: what goes there, for the error ("the topology's code").
    """
    try:
        path.mkdir(mode=0o700, exist_ok=True)
    except FileExistsError:  # a file or a dangling symlink: not_private names it
        pass
    reason = not_private(path)
    if reason is not None:
        raise PermissionError(f"{path} is not a private directory of this user ({reason}): "
                              f"refusing to put {what} there")
    return path
