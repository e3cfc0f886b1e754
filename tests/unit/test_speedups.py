"""The compiled hot path (squall/_speedups.py): used when current, never when stale."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import squall
from squall import _speedups

ROOT = Path(squall.__file__).resolve().parent.parent
PROBE = ("import squall._speedups as s, squall.runtime.worker as w, squall.api.tuple as t; "
         "print(s.STATE, Path(w.__file__).suffix, Path(t.__file__).suffix)")

# a build for this Python: make test's second Python (3.13) runs the tree the main venv compiled
BUILT_HERE = (ROOT / _speedups.MANIFEST).exists() and _speedups._built()
needs_build = pytest.mark.skipif(
    not BUILT_HERE,
    reason="the hot path is not compiled here for this Python (make setup, or python scripts/compile.py)",
)


def probe(pythonpath: Path, **env: str) -> tuple[str, str]:
    # not inherited: make test runs this file again under SQUALL_PURE_PYTHON=1
    base = {k: v for k, v in os.environ.items() if k != "SQUALL_PURE_PYTHON"}
    out = subprocess.run(
        [sys.executable, "-c", "from pathlib import Path; " + PROBE],
        env={**base, "PYTHONPATH": str(pythonpath), **env},
        capture_output=True, text=True, timeout=60, check=True, cwd=pythonpath,
    )
    return out.stdout.strip(), out.stderr.strip()


def copy_package(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "squall", tmp_path / "squall",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


@needs_build
def test_a_current_build_is_loaded():
    out, _ = probe(ROOT)
    assert out == "compiled .so .so"


@needs_build
def test_an_edited_source_falls_back_to_plain_python_for_every_module(tmp_path):
    root = copy_package(tmp_path)
    routing = root / "squall" / "runtime" / "routing.py"
    routing.write_text(routing.read_text() + "\n# edited after the build\n")
    out, err = probe(root)
    # all or nothing: the compiled modules rely on each other's C layouts
    assert out == "stale .py .py"
    assert "older than its sources" in err


@needs_build
def test_squall_pure_python_forces_the_sources():
    out, err = probe(ROOT, SQUALL_PURE_PYTHON="1")
    assert out == "forced .py .py"
    assert err == ""


def test_without_a_build_the_sources_run(tmp_path):
    root = copy_package(tmp_path)
    for module in _speedups.MODULES:
        for built in (root / Path(*module.split("."))).parent.glob(module.rsplit(".", 1)[1] + ".*.so"):
            built.unlink()
    (root / _speedups.MANIFEST).unlink(missing_ok=True)
    out, err = probe(root)
    assert out == "pure .py .py"
    assert err == ""


def test_every_compiled_module_declares_its_layout():
    for module in _speedups.MODULES:
        assert (ROOT / Path(*module.split("."))).with_suffix(".pxd").exists(), module
