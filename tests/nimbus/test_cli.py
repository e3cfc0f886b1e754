"""The command line without Nimbus: finding the topology in a file, packaging, --local."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from io import BytesIO

import pytest

from squall.client.exits import CliError, ExitCode
from squall.client.loader import import_file, load_topology, package_code
from tests.nimbus.harness import base_env
from tests.nimbus.topology_source import write_topology

MODULE_LEVEL = '''\
from squall import Fields, Spout, TopologyBuilder
from {helper} import WORD


class S(Spout):
    def next_tuple(self):
        pass

    def declare_output_fields(self, d):
        d.declare(Fields(WORD))


builder = TopologyBuilder()
builder.set_spout("s", S())
topology = builder.create_topology()
conf = {{"topology.workers": 1}}
'''


def test_module_level_topology_and_conf_and_its_code(tmp_path):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helper_mod.py").write_text("WORD = 'w'\n")
    path = pkg / "topo_mod.py"
    path.write_text(MODULE_LEVEL.format(helper="mypkg.helper_mod"))
    conf, topology = load_topology(str(path))
    assert conf == {"topology.workers": 1} and set(topology.components) == {"s"}
    code, _ = package_code()
    names = set(zipfile.ZipFile(BytesIO(code)).namelist())
    assert {"mypkg/__init__.py", "mypkg/topo_mod.py", "mypkg/helper_mod.py"} <= names
    assert not any(n.startswith("squall/") for n in names)


@pytest.mark.parametrize("source, code, words", [
    ("x = 1\n", ExitCode.USAGE, "defines no topology"),
    ("def build_topology():\n    return 42\n", ExitCode.USAGE, "must return a StormTopology"),
    ("def build_topology():\n    raise ValueError('boom')\n", ExitCode.ERROR, "boom"),
    ("raise ImportError('nope')\n", ExitCode.ERROR, "cannot import"),
])
def test_files_without_a_usable_topology(tmp_path, source, code, words):
    path = tmp_path / f"t_{abs(hash(source))}.py"
    path.write_text(source)
    with pytest.raises(CliError) as e:
        load_topology(str(path))
    assert e.value.code == code and words in str(e.value)


def test_two_topologies_need_build_topology(tmp_path):
    (tmp_path / "helper_two.py").write_text("WORD = 'w'\n")
    source = MODULE_LEVEL.format(helper="helper_two") + "other = builder.create_topology()\n"
    path = tmp_path / "two_topos.py"
    path.write_text(source)
    with pytest.raises(CliError, match="2 topologies"):
        load_topology(str(path))


def test_bad_file_names(tmp_path):
    path = tmp_path / "not-a-module.py"
    path.write_text("x = 1\n")
    with pytest.raises(CliError, match="not an importable module name"):
        import_file(str(path))


def test_submit_local_runs_without_nimbus(tmp_path):
    path = write_topology(tmp_path / "local_wc.py", tmp_path / "out", tmp_path / "state", "v1", rate=200)
    proc = subprocess.run([sys.executable, "-m", "squall.cli.main", "submit", str(path), "--local", "3"],
                          cwd=tmp_path, env=base_env(tmp_path / "home"), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "ran locally for 3s" in proc.stdout and "sentences: emitted" in proc.stdout
    assert list((tmp_path / "out").glob("count-*.txt")), "nothing was counted"


def test_help_documents_exit_codes():
    proc = subprocess.run([sys.executable, "-m", "squall.cli.main", "--help"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and "3 Nimbus unreachable" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "squall.cli.main", "frobnicate"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
