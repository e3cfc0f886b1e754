"""Compile squall's hot path in place: ``python scripts/compile.py [--clean]``.

This runs setup.py's ``build_ext --inplace``, the same build ``pip install .`` and the
wheel use (see setup.py): the modules of ``squall._speedups.MODULES`` stay plain Python,
their ``.pxd`` files declare C types for Cython, and the compiled modules land next to
their sources with a manifest (``squall/_compiled.json``) of the sources' digest.
``squall._speedups`` loads them only while the digest matches, and the plain sources
otherwise (an edit without a recompile never runs stale code). ``SQUALL_PURE_PYTHON=1``
forces the plain sources at run time.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from squall._speedups import MANIFEST, MODULES  # noqa: E402


def _outputs(module: str) -> list[Path]:
    base = ROOT / Path(*module.split("."))
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    # .c: left beside the sources by compile.py before it used setup.py
    return [base.with_suffix(suffix), base.with_suffix(".c")]


def clean() -> None:
    """Remove the compiled modules, their C sources and the manifest."""
    for module in MODULES:
        for path in _outputs(module):
            path.unlink(missing_ok=True)
    (ROOT / MANIFEST).unlink(missing_ok=True)


def build() -> int:
    """Run setup.py's ``build_ext --inplace``; 0 also when it fell back to plain Python."""
    try:
        import Cython  # noqa: F401
    except ImportError:
        print("squall: cannot compile the hot path: Cython is missing (pip install 'cython>=3,<4'); "
              "the plain-Python path runs", file=sys.stderr)
        return 1
    clean()
    started = time.monotonic()
    print(f"squall: compiling {len(MODULES)} modules with Cython (about a minute)", flush=True)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}  # setuptools' notices are not ours to fix
    cmd = [sys.executable, "setup.py", "-q", "build_ext", "--inplace", "--parallel", str(os.cpu_count() or 1)]
    done = subprocess.run(cmd, cwd=ROOT, env=env, check=False)
    if done.returncode != 0:
        return done.returncode
    if (ROOT / MANIFEST).exists():
        print(f"squall: compiled in {time.monotonic() - started:.0f} s", flush=True)
    return 0


def main() -> int:
    """Build, or clean with ``--clean``."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--clean", action="store_true", help="remove the compiled modules")
    args = parser.parse_args()
    if args.clean:
        clean()
        return 0
    return build()


if __name__ == "__main__":
    raise SystemExit(main())
