"""Shipping the topology's environment and the user's own modules to the executors.

The environment (squall, its compiled core, its dependencies and the user's packages) is
chosen by ``squall.spark.env``: ``auto`` packs this environment
(``squall.spark.environment``) and ships it through ``spark.archives`` with
``spark.pyspark.python`` inside it, ``none`` ships nothing (the executors share this
interpreter, as on ``local[N]``), and a path ships an archive the user built (a
``venv-pack``/``conda-pack`` ``.tar.gz`` with ``bin/python`` inside, or a ``.pex``).
``auto`` is the default, and means ``none`` on a ``local`` master.

Components are cloudpickled at ``create_topology``. A class defined in ``__main__`` is
pickled by value, but one defined in an importable module of the user's (a topology
module next to the script, a test file) is pickled by reference, and executors that do
not have that module on ``sys.path`` cannot unpickle it. So, at submit, every module
loaded from outside the Python installation and the installed packages (and outside
squall itself) is zipped under its import path and added with ``sc.addPyFile``.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.metadata as md
import io
import logging
import shutil
import site
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from squall.api.topology import StormTopology
from squall.spark import settings as S
from squall.spark.environment import (
    ALIAS,
    PYTHON_IN_ARCHIVE,
    PackedEnvironment,
    _canonical,
    pack_environment,
)
from squall.spark.errors import SparkSetupError
from squall.spark.needs import topology_needs

if TYPE_CHECKING:
    from pyspark import SparkContext

log = logging.getLogger("squall.spark")
USER_ALIAS = "environment"  # where a user's archive unpacks, as in Spark's own guide


def env_choice(conf: dict, master: str) -> str:
    """``none``, ``auto`` or an archive's path: ``squall.spark.env``, with ``auto`` resolved."""
    value = str(S.setting(conf, S.ENV)).strip() or "auto"
    if value == "auto" and master.strip().startswith("local"):
        return "none"
    return value


def _packages(conf: dict) -> list[str]:
    value = S.setting(conf, S.ENV_PACKAGES) or []
    if isinstance(value, str):
        value = value.split(",")
    return [str(v).strip() for v in value if str(v).strip()]


def _append(spark_conf: dict[str, Any], key: str, value: str) -> str:
    current = str(spark_conf.get(key) or "").strip().strip(",")
    return f"{current},{value}" if current else value


# connector clients packed when the environment is packed before any topology is known
UNKNOWN_TOPOLOGY_CLIENTS = ("confluent-kafka", "redis")


def _installed(dist: str) -> bool:
    try:
        md.distribution(dist)
    except md.PackageNotFoundError:
        return False
    return True


def packages_for(conf: dict, topology: StormTopology | None) -> list[str]:
    """``squall.spark.env.packages`` and what ``topology``'s components need (``squall.spark.needs``).

    Raises ``SparkSetupError`` (one line naming the component, the package and the setting)
    for a needed package that is not installed here, where ``auto`` packs from.
    """
    packages = _packages(conf)
    if topology is None:
        # started before its first topology (SparkCluster.start()): which connectors the later
        # topologies use is unknown, so the small clients installed here go along (pyarrow,
        # for the DataFrame connectors, is large: list it in squall.spark.env.packages)
        for dist in UNKNOWN_TOPOLOGY_CLIENTS:
            if dist not in packages and _installed(dist):
                packages.append(dist)
    for dist, who in topology_needs(conf, topology).items():
        try:
            md.distribution(dist)
        except md.PackageNotFoundError:
            raise SparkSetupError(
                f"{who} needs the {dist} package on the executors, but it is not installed where "
                f"squall packs their environment ({sys.prefix}); pip install {dist} here, or give "
                f"an environment that has it in squall.spark.env") from None
        if dist not in packages:
            packages.append(dist)
    return packages


def environment_settings(conf: dict, master: str, spark_conf: dict[str, Any],
                         topology: StormTopology | None = None,
                         ) -> tuple[dict[str, str], PackedEnvironment | None]:
    """The ``spark.*`` settings that ship the environment ``conf`` chooses, and what was packed.

    ``auto`` packs ``squall.spark.env.packages`` and the packages ``topology``'s components
    need (its connectors' client libraries). A ``spark.pyspark.python`` the user set wins:
    the environment is theirs to ship. Raises ``SparkSetupError`` for an archive path that
    does not exist or a package not installed.
    """
    choice = env_choice(conf, master)
    if choice == "none":
        return {}, None
    if spark_conf.get("spark.pyspark.python"):
        log.info("spark.pyspark.python is set (%s): squall ships no environment",
                 spark_conf["spark.pyspark.python"])
        return {}, None
    out: dict[str, str] = {}
    python = S.setting(conf, S.ENV_PYTHON)
    if python:
        out["spark.executorEnv.SQUALL_PYTHON"] = str(python)
    if choice == "auto":
        packed = pack_environment(packages_for(conf, topology), S.setting(conf, S.ENV_CACHE_DIR))
        log.info("%s the environment %s (%s) for the executors", "packed" if packed.built else "reusing",
                 packed.path.name, ", ".join(packed.distributions))
        out["spark.archives"] = _append(spark_conf, "spark.archives", f"{packed.path}#{ALIAS}")
        out["spark.pyspark.python"] = PYTHON_IN_ARCHIVE
        return out, packed
    path = Path(choice).expanduser().resolve()
    if not path.is_file():
        raise SparkSetupError(f"squall.spark.env is {choice!r}, but no such file exists; give 'auto', "
                              f"'none' or the path of a packed environment (.tar.gz, .zip or .pex)")
    if path.suffix == ".pex":
        out["spark.files"] = _append(spark_conf, "spark.files", str(path))
        out["spark.pyspark.python"] = f"./{path.name}"
    else:
        out["spark.archives"] = _append(spark_conf, "spark.archives", f"{path}#{USER_ALIAS}")
        out["spark.pyspark.python"] = f"./{USER_ALIAS}/bin/python"
    return out, None


def check_shipped(packed: PackedEnvironment | None, conf: dict, topology: StormTopology) -> None:
    """Refuse a topology whose components need a package the running environment lacks.

    A SparkContext ships one environment, packed when it started (for its first topology):
    a later topology of another kind would fail to import on the executors. One line naming
    the component, the package and the setting. Nothing to check without a packed environment.
    """
    if packed is None:
        return
    have = {_canonical(d.split("==", 1)[0]) for d in packed.distributions}
    for dist, who in topology_needs(conf, topology).items():
        if _canonical(dist) not in have:
            raise SparkSetupError(
                f"{who} needs the {dist} package on the executors, but the environment this "
                f"SparkContext shipped at its start has no {dist}; list it in "
                f"squall.spark.env.packages of the first topology (or start a new SparkCluster)")


def _system_roots() -> list[Path]:
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    roots.update(p for p in sysconfig.get_paths().values() if p)
    roots.update(site.getsitepackages())
    roots.add(site.getusersitepackages())
    roots.add(str(Path(__file__).resolve().parents[1]))  # squall itself is installed
    return [Path(r).resolve() for r in roots if r]


def _archive_name(module: ModuleType) -> str | None:
    file = getattr(module, "__file__", None)
    name = getattr(module, "__name__", "")
    if not file or not file.endswith(".py") or name == "__main__" or name.startswith("__mp_"):
        return None
    path = name.replace(".", "/")
    return f"{path}/__init__.py" if Path(file).name == "__init__.py" else f"{path}.py"


def user_modules() -> dict[str, Path]:
    """Archive path -> source file of every loaded user module (see the module docstring)."""
    roots = _system_roots()
    out: dict[str, Path] = {}
    for module in list(sys.modules.values()):
        arcname = _archive_name(module) if module is not None else None
        if arcname is None:
            continue
        file = Path(module.__file__).resolve()  # type: ignore[arg-type]
        if any(file.is_relative_to(r) for r in roots) or not file.is_file():
            continue
        out[arcname] = file
    # a package's modules need its __init__ in the zip even if it has none on disk
    for arcname in list(out):
        parts = arcname.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            init = "/".join(parts[:i]) + "/__init__.py"
            out.setdefault(init, Path())
    return out


def build_zip(modules: dict[str, Path]) -> bytes:
    """A zip of ``modules`` (an empty ``Path()`` stands for an empty ``__init__.py``)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for arcname in sorted(modules):
            src = modules[arcname]
            data = src.read_bytes() if src != Path() else b""
            info = zipfile.ZipInfo(arcname, date_time=(1980, 1, 1, 0, 0, 0))
            zf.writestr(info, data)
    return buf.getvalue()


def ship_user_modules(sc: SparkContext) -> str | None:
    """Add a zip of the user's modules to ``sc`` unless this content was shipped already.

    Returns the zip's path, or None when there is nothing new to ship. What was shipped is
    remembered on the SparkContext itself, since several ``SparkCluster`` objects may share
    it, and Spark refuses a second file of the same name from another path (the name
    carries the content hash, so changed code gets a new name).
    """
    modules = user_modules()
    if not modules:
        return None
    data = build_zip(modules)
    digest = hashlib.sha1(data).hexdigest()[:16]
    state = getattr(sc, "_squall_shipping", None)
    if state is None:
        state = (Path(tempfile.mkdtemp(prefix="squall-spark-")), set[str]())
        sc._squall_shipping = state  # type: ignore[attr-defined]
        # a context shared by several clusters may never see forget_shipped: clean at exit
        atexit.register(shutil.rmtree, state[0], True)
    work_dir, shipped = state
    if digest in shipped:
        return None
    path = work_dir / f"squall-user-{digest}.zip"
    path.write_bytes(data)
    sc.addPyFile(str(path))
    shipped.add(digest)
    return str(path)


def forget_shipped(sc: SparkContext) -> None:
    """Delete the zips shipped to ``sc``; call once it has stopped (it serves them till then)."""
    state = getattr(sc, "_squall_shipping", None)
    if state is not None:
        shutil.rmtree(state[0], ignore_errors=True)
        sc._squall_shipping = None  # type: ignore[attr-defined]
