"""A worker on a host without Nimbus's blob directory gets the topology's code from its task.

Nimbus's topology master names the code zip by its path in its own blob directory; an
executor on another machine has no such path, so the zip travels in the task and is
written once per content under the temporary directory (``worker_main.local_code``).
"""

from __future__ import annotations

import os
import sys
import zipfile

from squall.spark.worker_main import local_code, use_code


def _zip(path, source: str) -> bytes:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("shipped_module_for_test.py", source)
    return path.read_bytes()


def test_the_local_path_is_used_when_this_host_has_it(tmp_path):
    code = _zip(tmp_path / "code.zip", "X = 1\n")
    assert local_code(str(tmp_path / "code.zip"), code) == str(tmp_path / "code.zip")


def test_a_missing_or_different_path_gets_a_private_copy_of_the_shipped_zip(tmp_path):
    code = _zip(tmp_path / "made.zip", "VALUE = 'from the task'\n")
    elsewhere = str(tmp_path / "nimbus-host" / "blobs" / "wc-1-abcdef" / "v1" / "code.zip")
    copy = local_code(elsewhere, code)
    assert copy != elsewhere and open(copy, "rb").read() == code
    directory = os.path.dirname(copy)
    assert os.stat(directory).st_mode & 0o777 == 0o700
    assert local_code(elsewhere, code) == copy  # once per content
    # a path that exists here with other content (another host's version) is not trusted
    (tmp_path / "stale.zip").write_bytes(b"not this version")
    assert local_code(str(tmp_path / "stale.zip"), code) == copy
    use_code(copy)
    try:
        import shipped_module_for_test
        assert shipped_module_for_test.VALUE == "from the task"
    finally:
        sys.path.remove(copy)
        sys.modules.pop("shipped_module_for_test", None)
