"""``squall --version`` and ``squall version`` name the hot path that runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import squall
from squall import _speedups
from squall.cli.main import main

ROOT = Path(squall.__file__).resolve().parent.parent


def run_version(*args: str, **env: str) -> str:
    base = {k: v for k, v in os.environ.items() if k != "SQUALL_PURE_PYTHON"}
    done = subprocess.run([sys.executable, "-m", "squall.cli.main", *args], capture_output=True, text=True,
                          env={**base, "PYTHONPATH": str(ROOT), **env}, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_version_flag_prints_one_line_and_exits_0(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    assert out.startswith(f"squall {squall.__version__} (hot path: {_speedups.describe()}; Python ")


def test_the_forced_plain_path_says_why():
    out = run_version("--version", SQUALL_PURE_PYTHON="1")
    built = (ROOT / _speedups.MANIFEST).exists() and _speedups._built()  # for this Python
    why = "SQUALL_PURE_PYTHON is set" if built else "no compiled build installed"
    assert f"(hot path: plain Python ({why}); Python " in out


@pytest.mark.skipif(not ((ROOT / _speedups.MANIFEST).exists() and _speedups._built()),
                    reason="the hot path is not compiled here for this Python")
def test_a_current_build_says_compiled():
    assert "(hot path: compiled; Python " in run_version("--version")
    # the version command says the same, Nimbus or not
    assert "(hot path: compiled; Python " in run_version("version", "--nimbus", "http://127.0.0.1:9")
