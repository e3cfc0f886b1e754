"""The YAML word count (examples/word_count.yaml) on the Spark runtime: the exact counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from examples import word_count as wc
from squall.flux import load_yaml

pytestmark = [pytest.mark.spark, pytest.mark.slow]

YAML = Path(__file__).resolve().parents[2] / "examples" / "word_count.yaml"


@pytest.mark.timeout(240)
def test_yaml_word_count_on_spark_counts_exactly(local_cluster, tmp_path, monkeypatch):
    results = tmp_path / "results"
    results.mkdir()
    props = tmp_path / "wc.properties"
    props.write_text("sentences=300\nseed=11\n")
    monkeypatch.setenv("SQUALL_WORDCOUNT_RESULTS", str(results))
    spec = load_yaml(str(YAML), properties=str(props), env=True)
    local_cluster.submit_topology(spec.name, spec.conf, spec.topology)
    try:
        info = wc.wait_for_acks(local_cluster, spec.name, "sentence", 300, timeout=120)
    finally:
        local_cluster.kill_topology(spec.name, wait_secs=0)
    assert info["components"]["sentence"]["failed"] == 0
    assert wc.word_counts(str(results)) == wc.expected_counts(300, 11)
