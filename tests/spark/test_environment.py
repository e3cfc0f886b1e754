"""The shipped environment (squall/spark/environment.py, shipping.py) without a Spark cluster.

The archive is unpacked as Spark unpacks ``spark.archives`` and its launcher run on a bare
virtualenv's Python: the one a machine without squall has.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from squall.spark import settings as S
from squall.spark.environment import ALIAS, PYTHON_IN_ARCHIVE, pack_environment
from squall.spark.errors import SparkSetupError
from squall.spark.shipping import env_choice, environment_settings

pytestmark = pytest.mark.spark
MISSING = ("squall", "msgpack", "zmq", "cloudpickle")


def bare_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "SQUALL_PURE_PYTHON", "PYSPARK_PYTHON", "SQUALL_PYTHON")}


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> str:
    """A fresh virtualenv without packages (not even pip), from the base interpreter."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    for module in MISSING:
        done = subprocess.run([python, "-c", f"import {module}"], env=bare_env(), cwd=venv,
                              capture_output=True, timeout=60)
        assert done.returncode != 0, f"the bare Python imports {module}"
    return python


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    return pack_environment((), tmp_path_factory.mktemp("env-cache"))


def unpack(archive: Path, workdir: Path) -> Path:
    """Unpack as Spark does for ``spark.archives`` ``path#squall-env``: into ./squall-env."""
    with tarfile.open(archive) as tar:
        tar.extractall(workdir / ALIAS, filter="tar")
    return workdir


def test_the_archive_runs_squall_on_a_bare_python(packed, bare_python, tmp_path):
    workdir = unpack(packed.path, tmp_path)
    probe = ("import sys, squall, msgpack, zmq, cloudpickle, squall._speedups as s, "
             "squall.runtime.worker as w; print(sys.executable); print(squall.__file__); "
             "print(msgpack.__file__); print(zmq.__file__); print(s.STATE); print(w.__file__)")
    done = subprocess.run([PYTHON_IN_ARCHIVE, "-c", probe], cwd=workdir, capture_output=True, text=True,
                          env={**bare_env(), "PYSPARK_PYTHON": bare_python}, timeout=120)
    assert done.returncode == 0, done.stderr
    executable, squall_file, msgpack_file, zmq_file, state, worker = done.stdout.split()
    assert executable == bare_python
    shipped = str(workdir / ALIAS / "site-packages")
    for file in (squall_file, msgpack_file, zmq_file, worker):
        assert file.startswith(shipped), file
    manifest = json.loads((workdir / ALIAS / "squall-env.json").read_text())
    # the compiled core travels when this squall has one (a worktree may run plain Python)
    if manifest["hot_path"] == "compiled":
        assert (state, Path(worker).suffix) == ("compiled", ".so")
    else:
        assert state == "pure"
    assert {d.split("==")[0] for d in manifest["distributions"]} >= {"msgpack", "cloudpickle", "pyzmq"}


def test_squall_python_names_the_executors_interpreter(packed, bare_python, tmp_path):
    workdir = unpack(packed.path, tmp_path)
    env = {**bare_env(), "SQUALL_PYTHON": bare_python, "PYSPARK_PYTHON": PYTHON_IN_ARCHIVE}
    done = subprocess.run([PYTHON_IN_ARCHIVE, "-c", "import sys, squall; print(sys.executable)"],
                          cwd=workdir, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == bare_python


def test_an_unchanged_environment_is_reused_and_a_changed_one_rebuilt(packed, tmp_path):
    cache = packed.path.parent
    mtime = packed.path.stat().st_mtime_ns
    again = pack_environment((), cache)
    assert (again.built, again.path, again.digest) == (False, packed.path, packed.digest)
    assert packed.path.stat().st_mtime_ns == mtime
    more = pack_environment(["PyYAML"], cache)
    assert more.built and more.path != packed.path
    assert any(d.startswith("PyYAML==") for d in more.distributions)
    with tarfile.open(more.path) as tar:
        assert "site-packages/yaml/__init__.py" in tar.getnames()


def test_a_package_not_installed_is_named():
    with pytest.raises(SparkSetupError, match="'no-such-dist-xyz', which is not installed"):
        pack_environment(["no-such-dist-xyz"])


def test_auto_is_none_on_local_masters():
    assert env_choice({}, "local[2]") == "none"
    assert env_choice({}, "spark://127.0.0.1:7077") == "auto"
    assert env_choice({S.ENV: "none"}, "yarn") == "none"
    assert environment_settings({}, "local[*]", {}) == ({}, None)


def test_auto_ships_the_archive_with_python_inside_it(tmp_path):
    conf = {S.ENV_CACHE_DIR: str(tmp_path), S.ENV_PYTHON: "/opt/py/bin/python3.11"}
    out, packed = environment_settings(conf, "spark://h:7077", {"spark.archives": "/data/a.zip#a"})
    assert packed is not None
    assert out == {"spark.archives": f"/data/a.zip#a,{packed.path}#{ALIAS}",
                   "spark.pyspark.python": PYTHON_IN_ARCHIVE,
                   "spark.executorEnv.SQUALL_PYTHON": "/opt/py/bin/python3.11"}


def test_a_users_python_or_archive_wins(tmp_path):
    assert environment_settings({}, "yarn", {"spark.pyspark.python": "/env/bin/python"}) == ({}, None)
    archive = tmp_path / "venv.tar.gz"
    archive.write_bytes(b"")
    out, packed = environment_settings({S.ENV: str(archive)}, "yarn", {})
    assert packed is None
    assert out == {"spark.archives": f"{archive}#environment",
                   "spark.pyspark.python": "./environment/bin/python"}
    pex = tmp_path / "app.pex"
    pex.write_bytes(b"")
    out, _ = environment_settings({S.ENV: str(pex)}, "yarn", {})
    assert out == {"spark.files": str(pex), "spark.pyspark.python": "./app.pex"}


def test_a_missing_archive_is_one_clear_error(tmp_path):
    with pytest.raises(SparkSetupError, match=r"squall.spark.env is '.*nope.tar.gz', but no such file"):
        environment_settings({S.ENV: str(tmp_path / "nope.tar.gz")}, "yarn", {})


def test_bind_hosts_auto_and_wildcard_advertise_this_hosts_address(monkeypatch):
    from squall.spark.transport import bind_address

    monkeypatch.delenv("SQUALL_ADVERTISE_HOST", raising=False)
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.3")
    assert bind_address("auto") == ("127.0.0.3", "127.0.0.3")
    assert bind_address("0.0.0.0") == ("*", "127.0.0.3")
    assert bind_address("127.0.0.1") == ("127.0.0.1", "127.0.0.1")
    monkeypatch.setenv("SQUALL_ADVERTISE_HOST", "10.1.2.3")
    assert bind_address("auto") == ("10.1.2.3", "10.1.2.3")
