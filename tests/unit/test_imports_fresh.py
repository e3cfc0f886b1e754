"""Every module of squall/ imports as the first import of a fresh interpreter, on both paths.

An import circle shows up as an ImportError (a name not yet defined) only when one of the
circle's modules is the process's first import, and on the compiled path also through the
``.pxd`` cimports, which import the cimported modules at module load: a test process, which
imported half the package already, never sees it. So each module gets an interpreter of its
own, on the path this run is on: ``make test`` runs it compiled, then again with
``SQUALL_PURE_PYTHON=1`` (the interpreters inherit the environment).
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from squall import _speedups

ROOT = Path(__file__).resolve().parents[2]
# entry points run a program when imported, and are run as ``python -m``, never imported
SKIP = ("__main__",)


def modules(package: str) -> list[str]:
    """The dotted names of the modules of ``squall.<package>`` (``""``: squall's own files)."""
    base = ROOT / "squall" / package if package else ROOT / "squall"
    files = sorted(base.rglob("*.py")) if package else sorted(base.glob("*.py"))
    names = []
    for f in files:
        parts = f.relative_to(ROOT).with_suffix("").parts
        if parts[-1] in SKIP:
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names.append(".".join(parts))
    return names


PACKAGES = sorted(["", *(p.name for p in (ROOT / "squall").iterdir()
                         if p.is_dir() and (p / "__init__.py").exists())])


def first_import(module: str) -> str | None:
    """None if ``module`` imports in a fresh interpreter, else the last line of its error."""
    proc = subprocess.run([sys.executable, "-c", f"import {module}"], cwd=ROOT,
                          env=dict(os.environ), capture_output=True, text=True, timeout=120)
    if proc.returncode == 0:
        return None
    lines = proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"]
    return f"{module}: {lines[-1]}"


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p or "squall")
def test_each_module_imports_first_in_a_fresh_interpreter(package: str) -> None:
    names = modules(package)
    with ThreadPoolExecutor(max_workers=2) as pool:
        errors = [e for e in pool.map(first_import, names) if e]
    assert not errors, f"on the {_speedups.describe()} hot path:\n" + "\n".join(errors)


def test_the_runtime_modules_are_all_found():
    runtime = modules("runtime")
    assert {"squall.runtime.worker", "squall.runtime.tasks", "squall.runtime.host",
            "squall.runtime.round", "squall.runtime.stateful"} <= set(runtime)
