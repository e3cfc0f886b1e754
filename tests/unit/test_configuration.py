"""Issue 43 part 4: every key squall reads is in one table, typos are caught at every door,
and ``docs/configuration.md`` is generated from that table."""

from __future__ import annotations

import ast
import importlib.util
import logging
import re
from pathlib import Path

import pytest

from squall.api.builder import TopologyBuilder
from squall.api.components import BasicBolt, Spout
from squall.api.errors import InvalidTopologyError
from squall.api.fields import Fields
from squall.flux import FluxError, load_yaml
from squall.nimbus.clusterconf import ClusterConfError, classify
from squall.runtime.submission import prepare_conf

ROOT = Path(__file__).resolve().parents[2]
KEY = re.compile(r"(topology|squall)\.[a-z0-9_]+(\.[a-z0-9_]+)*")
# string literals shaped like keys that are not configuration keys
NOT_KEYS = {"squall.yaml", "topology.pkl"}


class OneSpout(Spout):
    def declare_output_fields(self, declarer):
        declarer.declare(Fields("n"))


class PassBolt(BasicBolt):
    def execute(self, tup, collector):
        pass


def topology():
    b = TopologyBuilder()
    b.set_spout("s", OneSpout())
    b.set_bolt("b", PassBolt()).shuffle_grouping("s")
    return b.create_topology()


def test_a_misspelled_guarantee_is_refused_with_the_key_it_meant():
    with pytest.raises(InvalidTopologyError,
                       match=r"topology\.guarantees.*did you mean 'topology\.guarantee'"):
        prepare_conf({"topology.guarantees": "exactly_once"}, topology())


def test_an_unknown_squall_key_is_refused_even_far_from_any_known_one():
    with pytest.raises(InvalidTopologyError, match=r"unknown key 'squall\.no\.such\.thing'"):
        prepare_conf({"squall.no.such.thing": 1}, topology())


def test_a_squall_typo_names_the_key_it_meant():
    with pytest.raises(InvalidTopologyError, match=r"did you mean 'squall\.transfer\.batch\.size'"):
        prepare_conf({"squall.transfer.bach.size": 64}, topology())


def test_a_users_own_topology_key_passes_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="squall.conf"):
        merged = prepare_conf({"topology.my.brokers": "k1:9092"}, topology())
    assert merged["topology.my.brokers"] == "k1:9092"
    assert "topology.my.brokers" in caplog.text and "not a key squall reads" in caplog.text


def test_storm_keys_squall_does_not_use_pass_with_a_warning(caplog):
    storm = {"topology.component.resources.offheap.memory.mb": 128.0, "topology.kryo.register": []}
    with caplog.at_level(logging.WARNING, logger="squall.conf"):
        prepare_conf(storm, topology())
    assert "topology.kryo.register" in caplog.text and "Storm" in caplog.text


def test_keys_of_other_packages_and_the_users_pass_silently(caplog):
    with caplog.at_level(logging.WARNING, logger="squall.conf"):
        prepare_conf({"squall.spark.master": "local[2]", "squall.scheduler.reserved.workers": 0,
                      "kafka.bootstrap": "k1:9092", "topology.guarantee": "at_least_once"}, topology())
    assert caplog.text == ""


def test_a_component_key_typo_is_refused_naming_the_component():
    b = TopologyBuilder()
    b.set_spout("s", OneSpout())
    b.set_bolt("b", PassBolt()).shuffle_grouping("s").add_configuration("topology.max.spout.pendin", 5)
    with pytest.raises(InvalidTopologyError,
                       match=r"component 'b'.*did you mean 'topology\.max\.spout\.pending'"):
        prepare_conf({}, b.create_topology())


FLUX = """\
name: "wc"
config:
  topology.workers: 1
  topology.guarantees: exactly_once
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
"""


def test_flux_refuses_a_typo_at_the_line_of_the_key(tmp_path):
    f = tmp_path / "topology.yaml"
    f.write_text(FLUX)
    with pytest.raises(FluxError, match=r"topology\.yaml:4: .*did you mean 'topology\.guarantee'"):
        load_yaml(str(f))


def test_the_cluster_file_refuses_a_typo_at_its_line():
    with pytest.raises(ClusterConfError,
                       match=r"squall\.yaml:3: unknown key.*did you mean 'topology\.message\.timeout\.secs'"):
        classify({"topology.workers": 2, "topology.mesage.timeout.secs": 30}, "squall.yaml",
                 {"topology.workers": 2, "topology.mesage.timeout.secs": 3}, set())


def _module(name: str) -> bool:
    """True when ``name`` is one of squall's modules (a name in a table of modules, not a key)."""
    path = ROOT / name.replace(".", "/")
    return path.is_dir() or path.with_suffix(".py").is_file()


def keys_read_in_the_code() -> dict[str, list[str]]:
    """Key -> places, for every string literal of squall shaped like a key."""
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "squall").rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel.as_posix() in ("squall/__init__.py", "squall/_speedups.py"):  # lists of modules
            continue
        tree = ast.parse(path.read_text())
        skip = {id(a) for n in ast.walk(tree) if isinstance(n, ast.Call)
                and getattr(n.func, "attr", getattr(n.func, "id", ""))
                in ("getLogger", "import_module", "files")
                for a in n.args}
        for n in ast.walk(tree):
            if (isinstance(n, ast.Constant) and isinstance(n.value, str) and KEY.fullmatch(n.value)
                    and id(n) not in skip and n.value not in NOT_KEYS and not _module(n.value)):
                found.setdefault(n.value, []).append(f"{rel}:{n.lineno}")
    return found


def test_every_key_read_in_the_code_is_in_the_table():
    from squall.api.conf_checks import known_keys
    from squall.api.config import STORM_UNUSED

    known = known_keys()
    missing = {k: where for k, where in keys_read_in_the_code().items()
               if k not in known and k not in STORM_UNUSED}
    assert not missing, (f"keys read in the code but not declared (add a Setting to MORE_SETTINGS in "
                         f"squall/api/config.py, then run scripts/gen_configuration.py): {missing}")


def test_no_key_called_unused_is_read():
    from squall.api.config import STORM_UNUSED

    read = {k: where for k, where in keys_read_in_the_code().items()
            if k in STORM_UNUSED and where != [f"squall/api/config.py:{where[0].rsplit(':', 1)[1]}"]}
    assert not read, f"STORM_UNUSED names keys the code reads: declare them instead: {read}"
    from squall.api.conf_checks import known_keys

    assert not STORM_UNUSED & known_keys(), "a key is both read and called unused"


def test_the_tables_of_other_layers_are_named_in_the_api_table():
    from squall.api.config import OTHER_TABLES
    from squall.scheduler.keys import SCHEDULER_SETTINGS
    from squall.spark.settings import SPARK_SETTINGS

    theirs = {s.key for s in SPARK_SETTINGS + SCHEDULER_SETTINGS
              if s.key.startswith(("topology.", "squall."))}
    assert theirs == set(OTHER_TABLES), "squall/api/config.py OTHER_TABLES must name exactly these keys"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_configuration",
                                                  ROOT / "scripts" / "gen_configuration.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_configuration_md_is_generated_from_the_table():
    assert (ROOT / "docs" / "configuration.md").read_text() == _generator().render(), (
        "docs/configuration.md is stale: run python scripts/gen_configuration.py")


def test_the_reference_lists_every_known_key_with_its_default():
    from squall.api.conf_checks import known_keys

    text = _generator().render()
    for key in known_keys():
        assert f"`{key}`" in text, key


def test_every_checked_key_is_declared():
    from squall.api.conf_checks import CHECKS, known_keys

    assert set(CHECKS) <= known_keys(), set(CHECKS) - known_keys()
