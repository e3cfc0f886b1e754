"""Security item 1: an empty or unreadable token file never disables authentication.

Today's failure: an empty token file made Nimbus's token ``""``, and ``Authorization:
Bearer`` (nothing after it) was accepted, so anyone could upload code that Nimbus unpickles.
"""

from __future__ import annotations

import multiprocessing
import os
import stat
import subprocess

import pytest

from squall.nimbus import auth
from squall.nimbus.auth import check_token, load_or_create_token
from squall.nimbus.errors import Unauthorized
from tests.nimbus import harness
from tests.nimbus.harness import PYTHON, free_port


def start_nimbus(home, timeout=20):
    """Run ``squall nimbus``; it must exit by itself (else it is killed and the test fails)."""
    proc = subprocess.Popen([PYTHON, "-m", "squall.cli.main", "nimbus", "--port", str(free_port()),
                             "--data-dir", str(home)], env=harness.base_env(home), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("Nimbus started with an empty token file")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.parametrize("content", ["", "   \n"])
def test_sec1_nimbus_refuses_to_start_with_an_empty_token_file(tmp_path, content):
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    token = home / "nimbus.token"
    token.write_text(content)
    token.chmod(0o600)
    proc = start_nimbus(home)  # returns only because Nimbus refuses to run
    assert proc.returncode != 0
    assert "nimbus.token" in proc.stderr and "empty" in proc.stderr, proc.stderr
    assert token.read_text() == content  # never silently replaced


def test_sec1_unreadable_token_file_is_refused(tmp_path):
    path = tmp_path / "nimbus.token"
    path.mkdir()  # a directory where the token should be: it cannot be read, even by root
    with pytest.raises(getattr(auth, "TokenError", ()) or AssertionError, match="cannot read"):
        load_or_create_token(path)


def test_sec1_empty_expected_token_never_matches():
    with pytest.raises((Unauthorized, ValueError)):
        check_token("", "Bearer ", "POST /api/v1/topologies", "127.0.0.1")


def test_sec1_token_created_with_mode_0600_and_no_temporary_left(tmp_path):
    path = tmp_path / "d" / "nimbus.token"
    token = load_or_create_token(path)
    assert len(token) >= 40
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert os.listdir(path.parent) == ["nimbus.token"]
    assert load_or_create_token(path) == token


def _create(path, queue):
    queue.put(load_or_create_token(path))


def test_sec1_concurrent_creators_all_get_the_one_full_token(tmp_path):
    """Creation is atomic: a racer never reads a half-written (empty) token."""
    for round_ in range(5):
        path = tmp_path / f"r{round_}" / "nimbus.token"
        ctx = multiprocessing.get_context("fork")
        queue = ctx.Queue()
        procs = [ctx.Process(target=_create, args=(path, queue)) for _ in range(6)]
        for p in procs:
            p.start()
        tokens = [queue.get(timeout=30) for _ in procs]
        for p in procs:
            p.join(30)
        assert len(set(tokens)) == 1 and tokens[0], tokens
        assert path.read_text().strip() == tokens[0]
