"""Security review #2: the multilang resources folder is used only if it is this user's own.

Today's failure: ``unpack`` took an existing ``$TMPDIR/squall-multilang-<uid>`` whatever its
owner or mode, and returned a ``<digest>`` folder planted there, so another local user's
script ran as the topology's user. The code zip's folder (``squall-code-<uid>``) had the
check; both now share ``squall.runtime.private_dirs``.

The tests run as root with one uid: "another user" is shown by chowning planted folders to
uid 65534 (nobody).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import pytest

from squall.multilang import resources
from squall.multilang.resources import pack, unpack
from squall.spark.worker_main import local_code

GENUINE = "print('genuine')\n"
PLANTED = "print('ATTACKER code')\n"
OTHER_UID = 65534


@pytest.fixture
def tmpdir_here(tmp_path, monkeypatch):
    """``tempfile.gettempdir()`` is a scratch folder for the test (the shared /tmp in real life)."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    scratch.chmod(0o1777)  # as /tmp: everyone may create entries
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setattr(resources, "_unpacked", {}, raising=False)  # a fresh worker process
    return scratch


@pytest.fixture
def blob(tmp_path):
    res = tmp_path / "resources"
    res.mkdir()
    (res / "split.py").write_text(GENUINE)
    return pack(res)


def digest(blob: bytes) -> str:
    return hashlib.sha256(blob).hexdigest()[:32]


def plant(folder: Path, blob: bytes, mode: int = 0o777, uid: int | None = None) -> Path:
    """What the other user leaves: the base folder with ``<digest>/split.py`` of their own."""
    folder.mkdir(exist_ok=True)
    target = folder / digest(blob)
    target.mkdir()
    (target / "split.py").write_text(PLANTED)
    for p in (target / "split.py", target, folder):
        if uid is not None:
            os.chown(p, uid, uid)
    folder.chmod(mode)
    return target


def script_used(blob: bytes) -> str:
    """The script the multilang subprocess would run (``cwd`` is what ``unpack`` returns)."""
    return (Path(unpack(blob)) / "split.py").read_text()


def base_of(tmpdir: Path) -> Path:
    return tmpdir / f"squall-multilang-{os.getuid()}"


def test_sec_multilang_a_planted_open_folder_is_not_used(tmpdir_here, blob):
    plant(base_of(tmpdir_here), blob, mode=0o777)
    assert script_used(blob) == GENUINE


def test_sec_multilang_a_folder_owned_by_another_user_is_not_used(tmpdir_here, blob):
    plant(base_of(tmpdir_here), blob, mode=0o700, uid=OTHER_UID)
    assert script_used(blob) == GENUINE


def test_sec_multilang_a_symlinked_folder_is_not_used(tmpdir_here, tmp_path, blob):
    elsewhere = tmp_path / "attacker"
    plant(elsewhere, blob, mode=0o700)
    base_of(tmpdir_here).symlink_to(elsewhere)
    assert script_used(blob) == GENUINE


@pytest.mark.parametrize("mode, uid", [(0o777, None), (0o700, OTHER_UID)])
def test_sec_multilang_a_planted_digest_folder_in_a_private_base_is_not_used(tmpdir_here, blob, mode, uid):
    base = base_of(tmpdir_here)
    base.mkdir(mode=0o700)
    target = base / digest(blob)
    target.mkdir()
    (target / "split.py").write_text(PLANTED)
    if uid is not None:
        os.chown(target, uid, uid)
    target.chmod(mode)
    assert script_used(blob) == GENUINE


def test_sec_multilang_the_private_folder_is_made_and_used_once_per_content(tmpdir_here, blob):
    first = unpack(blob)
    assert Path(first).parent == base_of(tmpdir_here) and script_used(blob) == GENUINE
    assert unpack(blob) == first
    assert base_of(tmpdir_here).stat().st_mode & 0o777 == 0o700
    assert not [p for p in base_of(tmpdir_here).iterdir() if p.name.startswith(".")]  # no staging left


@pytest.mark.parametrize("how", ["open", "other-user", "symlink"])
def test_sec_multilang_the_code_zip_folder_keeps_refusing_what_it_refused(tmpdir_here, tmp_path, how):
    code = b"PK zip bytes"
    folder = tmpdir_here / f"squall-code-{os.getuid()}"
    if how == "symlink":
        (tmp_path / "attacker").mkdir(mode=0o700)
        folder.symlink_to(tmp_path / "attacker")
    else:
        folder.mkdir(mode=0o700)
        if how == "open":
            folder.chmod(0o777)
        else:
            os.chown(folder, OTHER_UID, OTHER_UID)
    with pytest.raises(PermissionError, match="not a private directory"):
        local_code(str(tmp_path / "missing.zip"), code)
