"""Security item 7: Nimbus's data is its owner's only; the CLI refuses a token others can read."""

from __future__ import annotations

import stat

from tests.nimbus.harness import Cli, NimbusProcess


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_sec7_data_dir_and_store_made_private_whatever_exists(tmp_path):
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    home.chmod(0o755)
    (home / "blobs").mkdir(mode=0o777)
    (home / "blobs").chmod(0o777)
    db = home / "nimbus.sqlite3"
    db.touch()
    db.chmod(0o666)
    nimbus = NimbusProcess(home, tmp_path / "work").start()
    try:
        nimbus.wait_leader()
        assert mode(home) == 0o700
        assert mode(home / "blobs") == 0o700
        assert mode(home / "logs") == 0o700
        for f in home.glob("nimbus.sqlite3*"):
            assert mode(f) == 0o600, f
        assert mode(home / "nimbus.token") == 0o600
    finally:
        nimbus.stop()


def test_sec7_cli_refuses_a_token_file_others_can_read(tmp_path):
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    token = home / "nimbus.token"
    token.write_text("x" * 43 + "\n")
    token.chmod(0o644)
    cli = Cli("http://127.0.0.1:9", home, tmp_path)  # never reached: refused before any request
    proc = cli("kill", "wc")
    assert proc.returncode == 6, proc.stderr
    assert "chmod 600" in proc.stderr and str(token) in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
