"""The YAML word count (examples/word_count.yaml) on LocalCluster: the same counts as the
Python one, exactly; and the CLI's ``--dry-run`` and ``squall local`` on it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from examples import word_count as wc
from squall import Config, LocalCluster
from squall.flux import load_yaml

ROOT = Path(__file__).resolve().parents[2]
YAML = ROOT / "examples" / "word_count.yaml"


def yaml_spec(tmp_path, results, sentences=400, seed=7, monkeypatch=None):
    props = tmp_path / "wc.properties"
    props.write_text(f"sentences={sentences}\nseed={seed}\n")
    monkeypatch.setenv("SQUALL_WORDCOUNT_RESULTS", str(results))
    return load_yaml(str(YAML), properties=str(props), env=True)


def run_to_completion(topology, conf, name, sentences):
    with LocalCluster() as cluster:
        cluster.submit_topology(name, conf, topology)
        wc.wait_for_acks(cluster, name, "sentence", sentences, timeout=60)
        cluster.kill_topology(name)


def test_yaml_word_count_matches_the_python_one_exactly(tmp_path, monkeypatch):
    yaml_results, py_results = tmp_path / "yaml", tmp_path / "py"
    yaml_results.mkdir()
    py_results.mkdir()
    spec = yaml_spec(tmp_path, yaml_results, monkeypatch=monkeypatch)
    assert spec.name == "word-count" and spec.conf["topology.workers"] == 2
    assert {c: s.parallelism for c, s in spec.topology.components.items()} == {
        "sentence": 5, "split": 8, "count": 12}
    run_to_completion(spec.topology, spec.conf, "wc-yaml", 400)
    conf = Config()
    conf.set_num_workers(2)
    conf.set_max_spout_pending(1000)
    run_to_completion(wc.build_topology(str(py_results), sentences=400, seed=7), conf, "wc-py", 400)
    expected = wc.expected_counts(400, 7)
    assert wc.word_counts(str(py_results)) == expected
    assert wc.word_counts(str(yaml_results)) == expected


def cli(*args, env_extra=None, cwd=ROOT):
    import os

    env = dict(os.environ, PYTHONPATH=str(ROOT), SQUALL_PURE_PYTHON="1", **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "squall.cli.main", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=120)


def test_submit_dry_run_prints_the_plan(tmp_path):
    props = tmp_path / "wc.properties"
    props.write_text("sentences=10\nseed=1\n")
    out = cli("submit", str(YAML), "--filter", str(props), "--env-filter", "--dry-run",
              env_extra={"SQUALL_WORDCOUNT_RESULTS": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert "topology 'word-count': 2 worker(s), 2 acker(s)" in out.stdout
    assert "count     bolt   parallelism 12  tasks [1-12]" in out.stdout
    assert "split --default--> count  FIELDS(word)" in out.stdout
    assert "worker 0:" in out.stdout and "worker 1:" in out.stdout


def test_cli_reports_a_mistake_with_its_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(YAML.read_text().replace('args: ["word"]', 'args: ["wrod"]'))
    out = cli("submit", str(bad), "--dry-run", "--filter", str(ROOT / "examples" / "word_count.properties"),
              "--env-filter", env_extra={"SQUALL_WORDCOUNT_RESULTS": str(tmp_path)})
    assert out.returncode == 1
    line = next(i for i, t in enumerate(bad.read_text().splitlines(), 1) if "wrod" in t)
    assert f"bad.yaml:{line}: FIELDS grouping on unknown field 'wrod'" in out.stderr


def test_squall_local_runs_a_yaml_topology(tmp_path):
    props = tmp_path / "wc.properties"
    props.write_text("sentences=50\nseed=3\n")
    out = cli("local", str(YAML), "--seconds", "2", "--filter", str(props), "--env-filter",
              env_extra={"SQUALL_WORDCOUNT_RESULTS": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert "sentence: emitted 50, acked 50, failed 0" in out.stdout
    assert wc.word_counts(str(tmp_path)) == wc.expected_counts(50, 3)


def test_dry_run_of_a_python_file():
    out = cli("submit", str(ROOT / "examples" / "word_count.py"), "--dry-run", "--name", "wc")
    assert out.returncode == 0, out.stderr
    assert "topology 'wc': 1 worker(s)" in out.stdout
    assert "sentence --default--> split  SHUFFLE" in out.stdout


def test_a_window_too_long_for_the_timeout_is_refused_by_the_dry_run(tmp_path):
    f = tmp_path / "win.yaml"
    f.write_text("""\
name: "win"
config:
  topology.message.timeout.secs: 10
components:
  - id: "length"
    className: "squall.Duration"
    factory: "seconds"
    factoryArgs: [8]
spouts:
  - id: "words"
    className: "tests.unit.flux.components.TestWordSpout"
bolts:
  - id: "window"
    className: "tests.integration.window_components.WindowRecorder"
    configMethods:
      - name: "with_window"
        args: [ref: "length", ref: "length"]
streams:
  - from: "words"
    to: "window"
    grouping: {type: SHUFFLE}
""")
    out = cli("submit", str(f), "--dry-run")
    assert out.returncode == 1
    assert "16000 ms is more than topology.message.timeout.secs 10 s" in out.stderr


def test_dry_run_refuses_a_bad_config_value_at_its_line(tmp_path):
    """Issue 31: ``topology.workers: "not-a-number"`` used to pass the load (and the error of
    the dry run named no line)."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(YAML.read_text().replace("topology.workers: 2", 'topology.workers: "not-a-number"'))
    out = cli("submit", str(bad), "--dry-run", "--filter", str(ROOT / "examples" / "word_count.properties"),
              "--env-filter", env_extra={"SQUALL_WORDCOUNT_RESULTS": str(tmp_path)})
    assert out.returncode == 1
    line = next(i for i, t in enumerate(bad.read_text().splitlines(), 1) if "not-a-number" in t)
    assert f"bad.yaml:{line}: config topology.workers must be a positive integer, got 'not-a-number'" \
        in out.stderr, out.stderr
