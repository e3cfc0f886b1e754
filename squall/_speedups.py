"""Which of the hot-path modules run compiled, and the guard against stale builds.

``scripts/compile.py`` (run by ``make setup``) compiles ``MODULES`` with Cython next to
their sources and records a digest of those sources in ``squall/_compiled.json``. When
the digest no longer matches (a source was edited and not recompiled), or when
``SQUALL_PURE_PYTHON=1``, a finder placed first on ``sys.meta_path`` makes every one of
these modules load from its ``.py`` file: the compiled classes declare C layouts that the
other compiled modules rely on, so they are used all together or not at all.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import logging
import os
import sys
import sysconfig
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = Path("squall") / "_compiled.json"
MODULES = (
    "squall.api.tuple",
    "squall.runtime.host",
    "squall.runtime.collectors",
    "squall.runtime.tasks",
    "squall.runtime.transfer",
    "squall.runtime.round",
    "squall.runtime.worker",
    "squall.runtime.routing",
    "squall.runtime.roottable",
    "squall.runtime.acker",
    "squall.runtime.hashing",
    "squall.runtime.rotating",
    "squall.runtime.ids",
    "squall.runtime.metrics",
    "squall.runtime.serialization",
    "squall.runtime.fused",
)

log = logging.getLogger("squall")


def _source(module: str, suffix: str) -> Path:
    return (ROOT / Path(*module.split("."))).with_suffix(suffix)


def source_digest() -> str:
    """SHA-256 of the compiled modules' sources and declarations, and the interpreter's ABI."""
    h = hashlib.sha256(str(sysconfig.get_config_var("EXT_SUFFIX")).encode())
    for module in MODULES:
        for suffix in (".py", ".pxd"):
            path = _source(module, suffix)
            if path.exists():
                h.update(module.encode() + suffix.encode() + path.read_bytes())
    return h.hexdigest()


def _built() -> bool:
    suffix = str(sysconfig.get_config_var("EXT_SUFFIX"))
    return any(_source(m, suffix).exists() for m in MODULES)


def _state() -> str:
    """``compiled``, ``pure`` (nothing built), ``forced`` (by the environment) or ``stale``."""
    if not _built():
        return "pure"
    if os.environ.get("SQUALL_PURE_PYTHON", "") not in ("", "0"):
        return "forced"
    try:
        recorded = json.loads((ROOT / MANIFEST).read_text())["digest"]
    except (OSError, ValueError, KeyError, TypeError):
        return "stale"
    return "compiled" if recorded == source_digest() else "stale"


class _PureFinder:
    """Finds the hot-path modules' ``.py`` sources, ahead of their compiled builds."""

    def find_spec(self, name: str, path: Any = None, target: ModuleType | None = None) -> Any:
        if name not in MODULES:
            return None
        source = _source(name, ".py")
        loader = importlib.machinery.SourceFileLoader(name, str(source))
        return importlib.util.spec_from_file_location(name, source, loader=loader)


STATE = _state()

_DESCRIPTIONS = {
    "compiled": "compiled",
    "pure": "plain Python (no compiled build installed)",
    "forced": "plain Python (SQUALL_PURE_PYTHON is set)",
    "stale": "plain Python (the compiled build is older than its sources)",
}


def describe() -> str:
    """Which hot path runs, in words: ``compiled`` or ``plain Python (why)``."""
    return _DESCRIPTIONS[STATE]


def install() -> None:
    """Make the hot-path modules load from source unless their compiled build is current."""
    if STATE in ("compiled", "pure") or any(isinstance(f, _PureFinder) for f in sys.meta_path):
        return
    if STATE == "stale":
        log.warning("squall: the compiled hot path is older than its sources; running the "
                    "plain Python (run `make setup` or `python scripts/compile.py` to recompile)")
    sys.meta_path.insert(0, _PureFinder())
