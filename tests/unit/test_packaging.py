"""The package: a wheel built by ``python -m build`` compiles the hot path, or says it did not.

Both tests build from a copy of the sources and install into a fresh virtualenv, so they
take minutes (Cython and the C compiler run for real): marked slow.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import squall
from squall import _speedups

ROOT = Path(squall.__file__).resolve().parent.parent
pytestmark = pytest.mark.slow
SUFFIX = ".cpython-{}{}".format(*sys.version_info[:2])


def clean_env(**extra: str) -> dict[str, str]:
    drop = ("PYTHONPATH", "SQUALL_PURE_PYTHON", "VIRTUAL_ENV", "PYTHONHOME")
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}


def copy_sources(tmp_path: Path) -> Path:
    """The files a fresh clone has (no build outputs), so that the build starts from nothing."""
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", "*.so", "*.c", "_compiled.json",
        ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis", "logs", ".bench", ".tools"))
    return src


def build_wheel(src: Path, out: Path, **env: str) -> tuple[Path, str]:
    done = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(src)],
                          env=clean_env(**env), capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    wheels = list(out.glob("squall-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0], done.stdout + done.stderr


def fresh_venv(path: Path) -> Path:
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(path)], check=True, timeout=300, env=clean_env())
    return path / "bin"


def install(bin_dir: Path, wheel: Path, *flags: str) -> None:
    done = subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "-q", *flags, str(wheel)],
                          env=clean_env(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]


def version(bin_dir: Path, cwd: Path) -> str:
    done = subprocess.run([str(bin_dir / "squall"), "--version"], env=clean_env(), cwd=cwd,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.timeout(2400)
def test_the_wheel_compiles_the_hot_path_and_runs_the_word_count(tmp_path):
    src = copy_sources(tmp_path)
    wheel, _ = build_wheel(src, tmp_path / "dist")
    names = zipfile.ZipFile(wheel).namelist()
    for module in _speedups.MODULES:
        path = "/".join(module.split("."))
        assert any(n.startswith(path + SUFFIX) and n.endswith(".so") for n in names), module
        assert f"{path}.pxd" in names, module
    assert "squall/_compiled.json" in names
    assert not [n for n in names if n.endswith(".c")]

    bin_dir = fresh_venv(tmp_path / "venv")
    install(bin_dir, wheel)
    elsewhere = tmp_path / "elsewhere"  # not beside any squall sources
    elsewhere.mkdir()
    assert "hot path: compiled;" in version(bin_dir, elsewhere)
    done = subprocess.run([str(bin_dir / "python"), str(src / "examples" / "word_count.py"),
                           "--runtime", "local", "--sentences", "2000", "--workers", "2"],
                          env=clean_env(), cwd=elsewhere, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "counted exactly once" in done.stdout


@pytest.mark.timeout(2400)
def test_without_a_compiler_the_wheel_installs_plain_python_with_a_notice(tmp_path):
    src = copy_sources(tmp_path)
    wheel, output = build_wheel(src, tmp_path / "dist", CC="false", CXX="false")
    notices = [line for line in output.splitlines() if "the hot path is not compiled" in line]
    assert notices and "no usable C compiler" in notices[0], output[-3000:]
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.endswith(".so")]
    assert "squall/_compiled.json" not in names

    bin_dir = fresh_venv(tmp_path / "venv")
    install(bin_dir, wheel)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert "hot path: plain Python (no compiled build installed);" in version(bin_dir, elsewhere)
