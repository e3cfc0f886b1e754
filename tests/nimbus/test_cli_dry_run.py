"""Newcomer findings 17 and 18: ``--dry-run`` shows the guarantee, the checkpoint wiring the
submit adds, the state provider (and warns when it is in memory) and the Spark master."""

from __future__ import annotations

from squall.cli.main import main

SOURCE = '''\
from squall import Fields, StatefulBolt, TopologyBuilder
from tests.integration.eo_components import ListSpout


class Count(StatefulBolt):
    def init_state(self, state):
        self.state = state

    def execute(self, tup):
        pass

    def declare_output_fields(self, d):
        d.declare(Fields("n"))


def build_topology(provider: str = "squall.state.memory.InMemoryStateProvider"):
    b = TopologyBuilder()
    b.set_spout("source", ListSpout(["a b"], "dry"), 1)
    b.set_bolt("count", Count(), 1).shuffle_grouping("source")
    conf = {{"topology.guarantee": "exactly_once", "topology.state.provider": provider,
            "squall.spark.master": "spark://m:7077"}}
    return conf, b.create_topology()
'''


def plan_of(tmp_path, capsys, *params: str) -> str:
    f = tmp_path / "eo_dry.py"
    f.write_text(SOURCE.format())
    args = ["submit", str(f), "--dry-run"]
    for p in params:
        args += ["--param", p]
    assert main(args) == 0
    return capsys.readouterr().out


def test_dry_run_shows_the_exactly_once_wiring(tmp_path, capsys):
    out = plan_of(tmp_path, capsys)
    assert "guarantee: exactly_once" in out
    assert "$checkpointspout" in out and "--$checkpoint--> source" in out
    assert "state: squall.state.memory.InMemoryStateProvider" in out
    assert "warning: state in memory" in out
    assert "spark master: spark://m:7077" in out


def test_no_memory_warning_with_a_durable_provider(tmp_path, capsys):
    out = plan_of(tmp_path, capsys, "provider=squall.state.redis.RedisStateProvider")
    assert "state: squall.state.redis.RedisStateProvider" in out and "warning" not in out
