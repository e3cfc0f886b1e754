"""Packing the submitting environment for executors that have none of it.

On a real cluster the executors' Python has neither squall nor its dependencies. As
Spark users do with ``venv-pack``, squall packs what the topology needs into an archive
that Spark unpacks on every executor (``spark.archives``), and points
``spark.pyspark.python`` inside it. The archive holds:

- ``site-packages/``: squall's package as installed here (with its compiled hot path),
  the distributions squall needs (msgpack, cloudpickle, pyzmq) and those the user names
  in ``squall.spark.env.packages``, each with the distributions it requires, copied
  from this environment's files (no network, no rebuild);
- ``bin/python``: a launcher that runs the executor machine's own Python (``SQUALL_PYTHON``,
  else its ``PYSPARK_PYTHON``, else ``python3.X`` of the driver's version) with
  ``site-packages`` first on ``PYTHONPATH``. Unlike a packed virtualenv, whose
  interpreter is a link to the build machine's path, it needs only a Python of the same
  version somewhere on the executor.

Archives are cached under a digest of their contents: a resubmit of an unchanged
environment reuses the archive, and a changed file gives a new name.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import io
import json
import os
import re
import sys
import sysconfig
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from squall.spark.errors import SparkSetupError

FORMAT = "squall-env/1"
ALIAS = "squall-env"
PYTHON_IN_ARCHIVE = f"./{ALIAS}/bin/python"
# what squall itself needs on an executor (pyzmq: the workers' transport)
CORE_DISTRIBUTIONS = ("msgpack", "cloudpickle", "pyzmq")
# Spark puts its own pyspark and py4j on every executor's PYTHONPATH
PROVIDED_BY_SPARK = frozenset({"pyspark", "py4j", "squall"})
_SKIP_PARTS = frozenset({"__pycache__"})
_SKIP_SUFFIXES = (".pyc", ".c")

LAUNCHER = """#!/bin/sh
# squall's shipped environment: the executor's own Python, on the packages beside this file
env_dir=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
python=${{SQUALL_PYTHON:-}}
if [ -z "$python" ]; then
  case "${{PYSPARK_PYTHON:-}}" in
    ""|*{alias}*|./*) ;;
    *) python=$PYSPARK_PYTHON ;;
  esac
fi
if [ -z "$python" ]; then
  python=$(command -v python{version} || command -v python3)
fi
PYTHONPATH="$env_dir/site-packages${{PYTHONPATH:+:$PYTHONPATH}}"
export PYTHONPATH
exec "$python" "$@"
"""


@dataclass(frozen=True)
class PackedEnvironment:
    """A packed environment: its archive, content digest, distributions and whether just built."""

    path: Path
    digest: str
    distributions: tuple[str, ...]
    built: bool


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_names(dist: md.Distribution) -> list[str]:
    """Names a distribution requires unconditionally (extras' requirements are left out)."""
    names = []
    for req in dist.requires or []:
        if "extra ==" in req.replace("extra==", "extra =="):
            continue
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
        if m:
            names.append(m.group(1))
    return names


def resolve_distributions(names: list[str] | tuple[str, ...]) -> list[md.Distribution]:
    """``names`` and everything they require, as installed here (pyspark, py4j, squall left out).

    A name the user asked for that is not installed raises ``SparkSetupError``; a
    requirement that is not installed is skipped (its marker excluded it here).
    """
    out: dict[str, md.Distribution] = {}
    todo = [(n, True) for n in names]
    while todo:
        name, asked = todo.pop()
        key = _canonical(name)
        if key in out or key in PROVIDED_BY_SPARK:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            if asked:
                raise SparkSetupError(
                    f"squall.spark.env.packages names {name!r}, which is not installed in this "
                    f"environment ({sys.prefix}); pip install it or remove it from the list") from None
            continue
        out[key] = dist
        todo.extend((r, False) for r in _requirement_names(dist))
    return [out[k] for k in sorted(out)]


def _skipped(rel: Path) -> bool:
    return bool(_SKIP_PARTS.intersection(rel.parts)) or rel.name.endswith(_SKIP_SUFFIXES)


def distribution_files(dist: md.Distribution) -> dict[str, Path]:
    """``site-packages``-relative path -> file of one installed distribution (scripts left out)."""
    base = Path(str(dist.locate_file(""))).resolve()
    out: dict[str, Path] = {}
    for entry in dist.files or []:
        rel = Path(str(entry))
        if rel.is_absolute() or ".." in rel.parts or _skipped(rel):
            continue
        path = base / rel
        if path.is_file():
            out[rel.as_posix()] = path
    return out


def squall_files() -> dict[str, Path]:
    """The squall package as this process imports it: sources, ``.pxd``, compiled modules, manifest."""
    package = Path(__file__).resolve().parents[1]
    out: dict[str, Path] = {}
    for path in sorted(package.rglob("*")):
        rel = path.relative_to(package.parent)
        if path.is_file() and not _skipped(rel):
            out[rel.as_posix()] = path
    return out


def environment_files(packages: list[str] | tuple[str, ...] = ()) -> tuple[dict[str, Path], list[str]]:
    """(site-packages path -> file, distribution names) of an environment with ``packages``."""
    dists = resolve_distributions([*CORE_DISTRIBUTIONS, *packages])
    files: dict[str, Path] = {}
    for dist in dists:
        files.update(distribution_files(dist))
    files.update(squall_files())
    names = [f"{dist.metadata['Name']}=={dist.version}" for dist in dists]
    return files, names


def python_tag() -> str:
    """The interpreter the compiled files were built for (``cpython-311-x86_64-linux-gnu``)."""
    return str(sysconfig.get_config_var("EXT_SUFFIX") or sys.implementation.cache_tag).strip(".").rsplit(
        ".", 1)[0]


def content_digest(files: dict[str, Path]) -> str:
    """SHA-256 of the launcher, the interpreter tag and every file's path and bytes."""
    h = hashlib.sha256(f"{FORMAT}\0{python_tag()}\0{_launcher()}".encode())
    for arcname in sorted(files):
        h.update(arcname.encode() + b"\0")
        h.update(hashlib.sha256(files[arcname].read_bytes()).digest())
    return h.hexdigest()


def _launcher() -> str:
    return LAUNCHER.format(alias=ALIAS, version=f"{sys.version_info[0]}.{sys.version_info[1]}")


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, 0
    tar.addfile(info, io.BytesIO(data))


def write_archive(files: dict[str, Path], manifest: dict, dest: Path) -> None:
    """Write the ``.tar.gz`` of an environment to ``dest`` atomically (see the module docstring)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=dest.name, suffix=".part", dir=dest.parent)
    os.close(fd)
    try:
        with tarfile.open(tmp, "w:gz", compresslevel=6) as tar:
            _add_bytes(tar, "bin/python", _launcher().encode(), 0o755)
            _add_bytes(tar, "squall-env.json", (json.dumps(manifest, indent=1) + "\n").encode())
            for arcname in sorted(files):
                path = files[arcname]
                mode = 0o755 if os.access(path, os.X_OK) else 0o644
                _add_bytes(tar, f"site-packages/{arcname}", path.read_bytes(), mode)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would keep the archive from a Spark run as another user
        os.replace(tmp, dest)
    finally:
        Path(tmp).unlink(missing_ok=True)


def default_cache_dir() -> Path:
    """``$SQUALL_ENV_CACHE``, else ``$XDG_CACHE_HOME/squall/envs`` (``~/.cache/squall/envs``)."""
    explicit = os.environ.get("SQUALL_ENV_CACHE")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "squall" / "envs"


def pack_environment(packages: list[str] | tuple[str, ...] = (),
                     cache_dir: str | os.PathLike | None = None) -> PackedEnvironment:
    """The archive of this environment with ``packages``: from the cache, or built into it."""
    files, names = environment_files(packages)
    digest = content_digest(files)
    directory = Path(cache_dir) if cache_dir else default_cache_dir()
    path = directory / f"squall-env-{digest[:20]}.tar.gz"
    if path.is_file():
        return PackedEnvironment(path, digest, tuple(names), built=False)
    compiled = any(a.startswith("squall/") and a.endswith((".so", ".pyd")) for a in files)
    manifest = {"format": FORMAT, "digest": digest, "python": python_tag(),
                "hot_path": "compiled" if compiled else "plain Python", "distributions": names}
    write_archive(files, manifest, path)
    return PackedEnvironment(path, digest, tuple(names), built=True)
