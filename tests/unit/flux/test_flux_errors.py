"""Each kind of mistake in a YAML topology gets a FluxError naming the file and line."""

from __future__ import annotations

import re

import pytest

from squall.flux import FluxError, load_yaml

GOOD = """\
name: "wc"
spouts:
  - id: "words"
    className: "tests.unit.flux.components.TestWordSpout"
    parallelism: 1
bolts:
  - id: "count"
    className: "tests.unit.flux.components.TestWordCounter"
    parallelism: 2
streams:
  - from: "words"
    to: "count"
    grouping:
      type: FIELDS
      args: ["word"]
"""


def error_of(tmp_path, text, **kwargs) -> FluxError:
    f = tmp_path / "topology.yaml"
    f.write_text(text)
    with pytest.raises(FluxError) as info:
        load_yaml(str(f), **kwargs)
    return info.value


def line_of(e: FluxError) -> int:
    m = re.match(r".*topology\.yaml:(\d+): ", str(e))
    assert m, f"no file:line in {e}"
    return int(m.group(1))


def test_the_good_one_loads(tmp_path):
    f = tmp_path / "topology.yaml"
    f.write_text(GOOD)
    assert load_yaml(str(f)).name == "wc"


@pytest.mark.parametrize("old, new, line, words", [
    ('className: "tests.unit.flux.components.TestWordCounter"',
     'className: "tests.unit.flux.components.NoSuchBolt"', 8, "unknown class"),
    ('className: "tests.unit.flux.components.TestWordCounter"',
     'className: "no_such_package.bolts.Counter"', 8, "unknown class"),
    ('parallelism: 2', 'parallelism: 2\n    constructorArgs: [1, 2, 3, 4, 5]', 10, "TypeError"),
    ('to: "count"', 'to: "counter"', 12, "unknown component 'counter'"),
    ('from: "words"', 'from: "sentences"', 11, "unknown component 'sentences'"),
    ('args: ["word"]', 'args: ["wrod"]', 15, "unknown field 'wrod'"),
    ('type: FIELDS', 'type: FIELDZ', 14, "unknown grouping type 'FIELDZ'"),
    ('type: FIELDS\n      args: ["word"]', 'type: FIELDS', 14, "needs 'args'"),
    ('type: FIELDS', 'type: FIELDS\n      streamId: "words2"', 15, "declares no stream 'words2'"),
    ('type: FIELDS\n      args: ["word"]', 'type: DIRECT', 14, "not direct"),
    ('    parallelism: 2', '    parallelizm: 2', 9, "did you mean 'parallelism'"),
    ('    parallelism: 2', '    parallelism: 0', 9, "positive integer"),
    ('  - id: "count"', '  - id: "words"', 7, "used twice"),
    ('  - from: "words"', '  - from: "words"\n    to: "words"\n', 14, "key 'to' appears twice"),
])
def test_each_mistake_names_its_line(tmp_path, old, new, line, words):
    assert old in GOOD
    e = error_of(tmp_path, GOOD.replace(old, new, 1))
    assert line_of(e) == line, str(e)
    assert words in str(e)


def test_unknown_config_method(tmp_path):
    text = GOOD.replace('    parallelism: 2\n',
                        '    parallelism: 2\n    configMethods:\n      - name: "with_nothing"\n', 1)
    e = error_of(tmp_path, text)
    assert line_of(e) == 11 and "unable to find configuration method 'with_nothing'" in str(e)


def test_bad_config_method_arguments(tmp_path):
    text = GOOD.replace(
        '    className: "tests.unit.flux.components.TestWordCounter"',
        '    className: "tests.integration.window_components.WindowRecorder"\n'
        '    configMethods:\n      - name: "with_window"\n        args: [3]', 1)
    e = error_of(tmp_path, text)
    assert line_of(e) == 11 and "must be a Count or a Duration" in str(e)


def test_unknown_ref(tmp_path):
    text = GOOD.replace('    parallelism: 2\n',
                        '    parallelism: 2\n    constructorArgs:\n      - ref: "nothing"\n', 1)
    e = error_of(tmp_path, text)
    assert line_of(e) == 11 and "ref 'nothing'" in str(e)


def test_yaml_syntax_error(tmp_path):
    e = error_of(tmp_path, GOOD.replace('args: ["word"]', 'args: ["word"'))
    assert line_of(e) >= 15 and "YAML syntax error" in str(e)


def test_missing_property_when_filtering(tmp_path):
    props = tmp_path / "dev.properties"
    props.write_text("other=1\n")
    e = error_of(tmp_path, GOOD.replace('name: "wc"', 'name: "${topology.name}"'), properties=str(props))
    assert line_of(e) == 1 and "${topology.name} is not defined" in str(e)


def test_missing_environment_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("SQUALL_NO_SUCH_VAR", raising=False)
    e = error_of(tmp_path, GOOD.replace('parallelism: 2', 'parallelism: ${ENV-SQUALL_NO_SUCH_VAR}'), env=True)
    assert line_of(e) == 9 and "SQUALL_NO_SUCH_VAR" in str(e)


def test_no_spouts_and_no_name(tmp_path):
    assert "no spouts" in str(error_of(tmp_path, 'name: "x"\n'))
    e = error_of(tmp_path, GOOD.replace('name: "wc"\n', ''))
    assert "needs a 'name'" in str(e)


def test_invalid_window_reports_the_bolt_line(tmp_path):
    text = GOOD.replace(
        '    className: "tests.unit.flux.components.TestWordCounter"',
        '    className: "tests.integration.window_components.WindowRecorder"', 1)
    e = error_of(tmp_path, text)  # a windowed bolt with no window shape
    assert line_of(e) == 7 and "window length is not specified" in str(e)


def test_missing_include(tmp_path):
    e = error_of(tmp_path, GOOD + "includes:\n  - file: nowhere.yaml\n")
    assert line_of(e) == 17 and "does not exist" in str(e)


def test_error_in_an_included_file_names_that_file(tmp_path):
    (tmp_path / "part.yaml").write_text('name: "part"\nbolts:\n  - id: "log"\n    className: "x.y.Nope"\n')
    f = tmp_path / "main.yaml"
    f.write_text(GOOD + "includes:\n  - file: part.yaml\n")
    with pytest.raises(FluxError, match=r"part\.yaml:4: unknown class 'x.y.Nope'"):
        load_yaml(str(f))


# ---- configuration values: the checks submit makes, at the line of the value (issue 31) ----

CONFIGURED = GOOD.replace('name: "wc"\n', 'name: "wc"\nconfig:\n  my.own.key: [1]\n  KEY: VALUE\n')


@pytest.mark.parametrize("key, value, words", [
    ("topology.workers", '"not-a-number"', "topology.workers must be a positive integer, got 'not-a-number'"),
    ("topology.workers", "0", "topology.workers must be a positive integer, got 0"),
    ("topology.workers", "2.5", "must be a positive integer, got 2.5"),
    ("topology.message.timeout.secs", "-1", "topology.message.timeout.secs must be a positive number"),
    ("topology.max.spout.pending", '"1000"', "topology.max.spout.pending must be a positive integer or None"),
    ("topology.acker.executors", "-1", "topology.acker.executors must be a non-negative integer or None"),
    ("topology.debug", '"yes"', "topology.debug must be true or false, got 'yes'"),
    ("topology.backpressure.water.mark.high", "1.5", "must be a number from 0 to 1, got 1.5"),
    ("topology.state.provider.config", "[1]", "topology.state.provider.config must be a mapping"),
    ("topology.spout.wait.progressive.level1.count", "-3", "must be an integer >= 0, got -3"),
    ("squall.max.tuple.bytes", "true", "squall.max.tuple.bytes must be a positive integer, got True"),
])
def test_a_bad_config_value_is_refused_at_its_line(tmp_path, key, value, words):
    text = CONFIGURED.replace("KEY: VALUE", f"{key}: {value}")
    e = error_of(tmp_path, text)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.startswith(f"  {key}:"))
    assert line_of(e) == line, str(e)
    assert words in str(e)


def test_a_bad_component_config_value_is_refused_at_its_line(tmp_path):
    text = GOOD.replace('    parallelism: 2\n',
                        '    parallelism: 2\n    config:\n      topology.max.spout.pending: "lots"\n', 1)
    e = error_of(tmp_path, text)
    assert line_of(e) == 11 and "bolt 'count': config topology.max.spout.pending" in str(e)


def test_values_that_only_go_wrong_together_name_the_line_of_a_key(tmp_path):
    # a window longer than the message timeout: the check submit makes, at the timeout's line
    text = CONFIGURED.replace("KEY: VALUE", "topology.message.timeout.secs: 2").replace(
        '    className: "tests.unit.flux.components.TestWordCounter"',
        '    className: "tests.integration.window_components.WindowRecorder"\n'
        '    configMethods:\n      - name: "with_tumbling_window"\n        args: [ref: "five"]', 1)
    text = text.replace("spouts:", 'components:\n  - id: "five"\n    className: "squall.Duration"\n'
                                   '    factory: "seconds"\n    factoryArgs: [5]\nspouts:', 1)
    e = error_of(tmp_path, text)
    assert line_of(e) == 4 and "topology.message.timeout.secs 2 s" in str(e)


def test_flux_and_submit_refuse_the_same_values(tmp_path):
    """Every key in the one table of checks: a bad value fails ``prepare_conf`` and Flux alike."""
    from squall.api.conf_checks import CHECKS
    from squall.api.errors import InvalidTopologyError
    from squall.runtime.submission import prepare_conf

    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    topology = load_yaml(str(good)).topology
    for key in CHECKS:
        bad = {"topology.debug": 7}.get(key, [7, 7])  # no check takes a list of numbers
        with pytest.raises(InvalidTopologyError, match=re.escape(key)) as submitted:
            prepare_conf({key: bad}, topology)
        e = error_of(tmp_path, CONFIGURED.replace("KEY: VALUE", f'"{key}": {bad}'))
        assert str(submitted.value) in str(e), (key, str(e))
