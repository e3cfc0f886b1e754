"""Issue 43 part 3: a topology takes parameters (``--param``), for a .py file's
``build_topology()`` and a YAML's ``${...}``, on submit, local and upgrade; and the
``squall`` command finds the user's modules from where it is run."""

from __future__ import annotations

import pytest

from squall.cli.main import build_parser, main
from squall.client.exits import CliError, ExitCode
from squall.client.loader import load_topology

SOURCE = '''\
from squall import Fields, Spout, TopologyBuilder


class S(Spout):
    def next_tuple(self):
        pass

    def declare_output_fields(self, d):
        d.declare(Fields("w"))


def build_topology(bootstrap: str, *, workers: int = 1, debug: bool = False, limit: int | None = None):
    builder = TopologyBuilder()
    builder.set_spout("s", S(), parallelism=workers)
    conf = {{"topology.workers": workers, "topology.debug": debug, "my.bootstrap": bootstrap,
            "my.limit": limit}}
    return conf, builder.create_topology()
'''


@pytest.fixture
def topo_file(tmp_path, request):
    path = tmp_path / f"params_{request.node.name[5:40]}.py"
    path.write_text(SOURCE.format())
    return str(path)


def test_params_reach_build_topology_converted_by_annotation(topo_file):
    conf, topology = load_topology(topo_file, {"bootstrap": "k1:9092", "workers": "3", "debug": "true",
                                               "limit": "null"})
    assert conf == {"topology.workers": 3, "topology.debug": True, "my.bootstrap": "k1:9092",
                    "my.limit": None}
    assert topology.components["s"].parallelism == 3


def test_a_missing_parameter_says_how_to_give_it(topo_file):
    with pytest.raises(CliError) as e:
        load_topology(topo_file)
    assert e.value.code == ExitCode.USAGE
    assert "build_topology() needs bootstrap: give --param bootstrap=VALUE" in str(e.value)


def test_an_unknown_parameter_names_the_ones_taken(topo_file):
    with pytest.raises(CliError, match=r"takes no parameter 'brokers' \(its parameters: bootstrap, workers"):
        load_topology(topo_file, {"bootstrap": "k", "brokers": "k"})


def test_a_bad_value_names_the_type(topo_file):
    with pytest.raises(CliError, match=r"--param workers=three: build_topology\(\) takes workers as int"):
        load_topology(topo_file, {"bootstrap": "k", "workers": "three"})


def test_submit_dry_run_with_params(topo_file, capsys):
    assert main(["submit", topo_file, "--dry-run", "--param", "bootstrap=k1:9092",
                 "--param", "workers=2"]) == 0
    assert "workers" in capsys.readouterr().out


def test_submit_without_the_param_is_one_usage_line(topo_file, capsys):
    assert main(["submit", topo_file, "--dry-run"]) == ExitCode.USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--param bootstrap=VALUE" in err[0]


YAML = '''\
name: "p"
config:
  topology.workers: ${workers}
spouts:
  - id: "words"
    className: "tests.unit.flux.components.TestWordSpout"
    parallelism: 1
bolts:
  - id: "count"
    className: "tests.unit.flux.components.TestWordCounter"
    parallelism: 1
streams:
  - from: "words"
    to: "count"
    grouping:
      type: SHUFFLE
'''


def test_a_yaml_takes_params_as_its_variables(tmp_path, capsys):
    f = tmp_path / "p.yaml"
    f.write_text(YAML)
    assert main(["submit", str(f), "--dry-run", "--param", "workers=2"]) == 0
    assert "2 worker" in capsys.readouterr().out
    assert main(["submit", str(f), "--dry-run"]) == ExitCode.ERROR  # not substituted: a string
    props = tmp_path / "p.properties"
    props.write_text("workers=1\n")
    assert main(["submit", str(f), "--dry-run", "--filter", str(props), "--param", "workers=2"]) == 0
    assert "2 worker" in capsys.readouterr().out  # --param wins over the file


def test_upgrade_takes_a_yaml_with_its_filters_and_params(tmp_path, capsys):
    f = tmp_path / "p.yaml"
    f.write_text(YAML)
    props = tmp_path / "p.properties"
    props.write_text("workers=2\n")
    assert main(["upgrade", "p", str(f), "--filter", str(props), "--dry-run"]) == 0
    assert "2 worker" in capsys.readouterr().out
    help_text = build_parser()._subparsers._group_actions[0].choices["upgrade"].format_help()
    assert ".yaml" in help_text and "--env-filter" in help_text and "--param" in help_text


def test_token_file_help_names_the_right_variables():
    help_text = " ".join(build_parser().format_help().split())
    assert "$SQUALL_TOKEN_FILE" in help_text and "$SQUALL_TOKEN, if set, wins" in help_text
