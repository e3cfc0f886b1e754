"""Compile squall's hot path with Cython, in place: ``python scripts/compile.py [--clean]``.

The modules below stay plain Python; their ``.pxd`` files declare C types for Cython, so
one source serves both. The compiled modules are written next to their sources with a
manifest (``squall/_compiled.json``) of the sources' hashes: ``squall._speedups`` loads
them only while every hash matches, and the plain sources otherwise (an edit without a
recompile never runs stale code). ``SQUALL_PURE_PYTHON=1`` forces the plain sources.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import sysconfig
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from squall._speedups import MANIFEST, MODULES, source_digest  # noqa: E402


def _outputs(module: str) -> list[Path]:
    base = ROOT / Path(*module.split("."))
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    return [base.with_suffix(suffix), base.with_suffix(".c")]


def clean() -> None:
    """Remove the compiled modules, their C sources and the manifest."""
    for module in MODULES:
        for path in _outputs(module):
            path.unlink(missing_ok=True)
    (ROOT / MANIFEST).unlink(missing_ok=True)


def build() -> None:
    """Cythonize and compile every module of ``MODULES`` in place, then write the manifest."""
    try:
        from Cython.Build import cythonize
        from setuptools import Extension, setup
    except ImportError as e:
        raise SystemExit(f"squall: cannot compile the hot path: {e} (pip install 'cython>=3,<4')") from e
    clean()
    # setuptools warns that pyproject's [tool.setuptools] table is "beta": not ours to fix
    warnings.filterwarnings("ignore", message=".*tool.setuptools.*")
    started = time.monotonic()
    extensions = [Extension(m, [str(Path(*m.split(".")).with_suffix(".py"))]) for m in MODULES]
    os.chdir(ROOT)
    print(f"squall: compiling {len(MODULES)} modules with Cython (about a minute)", flush=True)
    setup(
        name="squall-speedups",
        ext_modules=cythonize(
            extensions,
            quiet=True,
            compiler_directives={
                "language_level": 3,
                # annotations are for mypy; C types come from the .pxd files only
                "annotation_typing": False,
                "binding": True,
            },
        ),
        script_args=["-q", "build_ext", "--inplace", "--parallel", str(os.cpu_count() or 1)],
    )
    for module in MODULES:
        _outputs(module)[1].unlink(missing_ok=True)
    (ROOT / MANIFEST).write_text(json.dumps({"digest": source_digest()}, indent=1) + "\n")
    print(f"squall: compiled in {time.monotonic() - started:.0f} s", flush=True)


def main() -> int:
    """Build, or clean with ``--clean``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clean", action="store_true", help="remove the compiled modules")
    args = parser.parse_args()
    clean() if args.clean else build()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
