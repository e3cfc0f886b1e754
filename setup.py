"""Builds squall's hot path as extension modules, the one way it gets compiled.

``pip install .``, ``python -m build`` (the wheel), ``pip install -e .`` and
``scripts/compile.py`` (``make setup``) all run this file's ``build_ext``: Cython compiles
the modules of ``squall._speedups.MODULES`` from their ``.py`` sources and ``.pxd``
declarations, and a manifest (``squall/_compiled.json``) records the digest of those
sources so that ``squall._speedups`` only loads a build that matches them. Where no C
compiler (or no Cython) is usable, the build says so in one line and installs the plain
Python modules instead: squall runs the same, only slower. The metadata is in
pyproject.toml.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
NOTICE = "squall: the hot path is not compiled ({reason}); installing the plain-Python path"
# annotations are for mypy; the C types come from the .pxd files only
DIRECTIVES = {"language_level": 3, "annotation_typing": False, "binding": True}


def _speedups():
    """``squall/_speedups.py`` loaded by path: the build must not import squall's dependencies."""
    spec = importlib.util.spec_from_file_location("_squall_speedups", ROOT / "squall" / "_speedups.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SPEEDUPS = _speedups()


def _notice(reason: str) -> None:
    print(NOTICE.format(reason=reason), file=sys.stderr, flush=True)


def extensions() -> list[Extension]:
    """The hot-path modules as Cython-compiled extensions; empty (with a notice) without Cython."""
    if os.environ.get("SQUALL_BUILD_PURE", "") not in ("", "0"):
        _notice("SQUALL_BUILD_PURE is set")
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        _notice("Cython is not installed")
        return []
    sources = [Extension(m, [str(Path(*m.split(".")).with_suffix(".py"))]) for m in SPEEDUPS.MODULES]
    # the generated C goes under build/, not beside the sources
    return cythonize(sources, quiet=True, compiler_directives=DIRECTIVES,
                     build_dir=str(Path("build") / "cython"))


class BuildHotPath(build_ext):
    """``build_ext`` that installs all the compiled modules or none, and writes the manifest."""

    def run(self) -> None:
        """Compile every hot-path module, or fall back to none of them with a notice."""
        if not self.extensions:
            self._drop_outputs()
            return
        try:
            super().run()
        except Exception as e:  # noqa: BLE001 - any compiler failure means: plain Python
            # the compiled modules rely on each other's C layouts: all of them or none
            reason = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
            _notice(f"no usable C compiler: {reason}")
            self._drop_outputs()
            return
        for lib in self._package_roots():
            (lib / SPEEDUPS.MANIFEST).write_text(
                json.dumps({"digest": SPEEDUPS.source_digest()}, indent=1) + "\n")

    def _package_roots(self) -> list[Path]:
        """Where the built ``squall`` package lives: build_lib, and the sources when in place."""
        roots = [Path(self.build_lib)]
        if self.inplace or getattr(self, "editable_mode", False):
            roots.append(ROOT)
        return roots

    def _drop_outputs(self) -> None:
        suffix = str(SPEEDUPS.sysconfig.get_config_var("EXT_SUFFIX"))
        for lib in self._package_roots():
            for module in SPEEDUPS.MODULES:
                (lib / Path(*module.split("."))).with_suffix(suffix).unlink(missing_ok=True)
            (lib / SPEEDUPS.MANIFEST).unlink(missing_ok=True)


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildHotPath})
