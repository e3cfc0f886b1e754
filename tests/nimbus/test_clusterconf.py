"""The cluster configuration file (Storm's storm.yaml, squall.yaml) and where each value comes from."""

from __future__ import annotations

import logging

import pytest

from squall.nimbus import clusterconf
from squall.nimbus.config import CONF_KEYS, NimbusConfig, with_conf

STORM_YAML = """\
# a storm.yaml as a Storm cluster has it, plus squall's keys
storm.zookeeper.servers:
  - "zk1.example.com"
storm.local.dir: "/var/storm"
supervisor.slots.ports: [6700, 6701]
nimbus.seeds: ["nimbus1.example.com", "nimbus2.example.com"]
nimbus.thrift.port: 6628
nimbus.master.timeout.secs: 12
squall.spark.master: "local[3]"
topology.message.timeout.secs: 45
topology.acker.executors: 2
topology.max.spout.pending: 500
topology.executor.receive.buffer.size: 4096
topology.state.provider: squall.state.local.LocalStateProvider
squall.transfer.batch.size: 64
"""


def write(tmp_path, text, name="squall.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_storm_yaml_is_sorted_by_who_uses_it(tmp_path, caplog):
    path = write(tmp_path, STORM_YAML, "storm.yaml")
    with caplog.at_level(logging.WARNING, logger="squall.nimbus.conf"):
        c = clusterconf.read(path, set(CONF_KEYS))
    assert c.nimbus == {"nimbus.master.timeout.secs": 12, "squall.spark.master": "local[3]"}
    assert c.topology == {"topology.message.timeout.secs": 45, "topology.acker.executors": 2,
                          "topology.max.spout.pending": 500, "topology.executor.receive.buffer.size": 4096,
                          "topology.state.provider": "squall.state.local.LocalStateProvider",
                          "squall.transfer.batch.size": 64,
                          "squall.spark.worker.port": "6700,6701"}  # supervisor.slots.ports
    assert c.urls == ["http://nimbus1.example.com:6628", "http://nimbus2.example.com:6628"]
    assert c.ignored == ["storm.zookeeper.servers", "storm.local.dir"]
    warning = " ".join(r.getMessage() for r in caplog.records)
    assert "storm.zookeeper.servers" in warning and "supervisor.slots.ports" not in warning
    config = with_conf(NimbusConfig(), {k: str(v) for k, v in c.nimbus.items()})
    assert (config.master_timeout_secs, config.spark_master) == (12.0, "local[3]")


def test_slots_ports_become_the_worker_ports_unless_the_file_names_them(tmp_path):
    c = clusterconf.read(write(tmp_path, "supervisor.slots.ports: [6700, 6701, 6705]\n"))
    assert c.topology == {"squall.spark.worker.port": "6700,6701,6705"}
    both = "supervisor.slots.ports: [6700]\nsquall.spark.worker.port: 7000-7003\n"
    c = clusterconf.read(write(tmp_path, both))
    assert c.topology == {"squall.spark.worker.port": "7000-7003"}
    with pytest.raises(clusterconf.ClusterConfError, match="yaml:1: supervisor.slots.ports must be a list"):
        clusterconf.read(write(tmp_path, "supervisor.slots.ports: 6700\n"))


def test_squall_nimbus_url_wins_over_storm_seeds(tmp_path):
    c = clusterconf.read(write(tmp_path, "nimbus.seeds: [a]\nsquall.nimbus.url: http://n:1/, http://m:2\n"))
    assert c.urls == ["http://n:1", "http://m:2"]


@pytest.mark.parametrize("text, words", [
    ("topology.workers: 2\nmy.own.key: 1\n", ["squall.yaml:2", "unknown key 'my.own.key'"]),
    ("topology.message.timeout.secs: soon\n", ["squall.yaml:1", "topology.message.timeout.secs", "'soon'"]),
    ("topology.debug: 1\n", ["squall.yaml:1", "topology.debug"]),
    ("- a\n- b\n", ["must be a mapping"]),
    ("topology.workers: [1\n", ["squall.yaml:", "not valid YAML"]),
    ("nimbus.thrift.port: x\nnimbus.seeds: [a]\n", ["squall.yaml:1", "nimbus.thrift.port"]),
    ("topology.upgrade.expire.secs: 60\ntopology.upgrade.worker.num: 1\n",
     ["squall.yaml:2", "topology.upgrade.worker.num", "every upgrade gray"]),
])
def test_bad_files_are_one_line_errors_naming_file_and_line(tmp_path, text, words):
    with pytest.raises(clusterconf.ClusterConfError) as e:
        clusterconf.read(write(tmp_path, text), set(CONF_KEYS))
    message = str(e.value)
    assert "\n" not in message
    for w in words:
        assert w in message, message


def test_a_missing_file_names_itself(tmp_path):
    with pytest.raises(clusterconf.ClusterConfError, match="nope.yaml: cannot read"):
        clusterconf.read(tmp_path / "nope.yaml")


def test_the_usual_places(tmp_path, monkeypatch):
    monkeypatch.delenv("SQUALL_CONF", raising=False)
    assert clusterconf.default_path(tmp_path) is None
    write(tmp_path, "topology.workers: 2\n")
    assert clusterconf.default_path(tmp_path) == tmp_path / "squall.yaml"
    monkeypatch.setenv("SQUALL_CONF", str(tmp_path / "other.yaml"))
    assert clusterconf.default_path(tmp_path) == tmp_path / "other.yaml"


def test_an_empty_file_is_no_configuration(tmp_path):
    c = clusterconf.read(write(tmp_path, "# nothing yet\n"))
    assert (c.nimbus, c.topology, c.urls) == ({}, {}, [])


def test_precedence_with_a_value_at_every_level():
    """squall's default < cluster file < topology Config < a rebalance < component configuration."""
    defaults = {"topology.message.timeout.secs": 45, "topology.max.spout.pending": 500,
                "topology.stats.sample.rate": 0.5, "topology.workers": 3}
    topology_conf = {"topology.message.timeout.secs": 5, "topology.max.spout.pending": 64,
                     "topology.workers": 2}
    stored, taken = clusterconf.layered(defaults, topology_conf)
    assert taken == ["topology.stats.sample.rate"]
    stored[clusterconf.CLUSTER_KEYS] = taken
    stored[clusterconf.CLUSTER_FILE] = "/etc/squall.yaml"
    out = clusterconf.sources(stored, {"sentences": {"topology.max.spout.pending": 8}},
                              {"topology.workers": (4, "rebalance")})
    rows = {r["key"]: (r["value"], r["source"]) for r in out["topology"]}
    assert rows["topology.debug"] == (False, "default")
    assert rows["topology.stats.sample.rate"] == (0.5, "cluster (/etc/squall.yaml)")
    assert rows["topology.message.timeout.secs"] == (5, "topology")
    assert rows["topology.max.spout.pending"] == (64, "topology")
    assert rows["topology.workers"] == (4, "rebalance")
    assert clusterconf.CLUSTER_KEYS not in rows and clusterconf.CLUSTER_FILE not in rows
    assert out["components"] == {"sentences": [{"key": "topology.max.spout.pending", "value": 8,
                                                "source": "component sentences"}]}


def test_submit_local_applies_the_cluster_files_defaults_under_the_topologys(tmp_path):
    import json

    from tests.nimbus.harness import Cli
    from tests.nimbus.topology_source import write_topology

    out = tmp_path / "out"
    (tmp_path / "topo").mkdir()
    path = write_topology(tmp_path / "topo" / "wc_local.py", out, tmp_path / "state", "v1", workers=1,
                          spout_conf={"topology.max.spout.pending": 7})
    conf_file = write(tmp_path, "topology.stats.sample.rate: 0.5\ntopology.message.timeout.secs: 9\n"
                                "topology.max.spout.pending: 100\nstorm.local.dir: /x\n")
    cli = Cli("http://127.0.0.1:9", tmp_path / "home", tmp_path)
    proc = cli("submit", str(path), "--local", "2", env={"SQUALL_CONF": str(conf_file)}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = [json.loads(p.read_text()) for p in out.glob("conf-*.json")]
    assert got and got[0]["topology.stats.sample.rate"] == 0.5  # the cluster's
    assert got[0]["topology.message.timeout.secs"] == 5  # the topology's, over the file's 9
    assert got[0]["topology.max.spout.pending"] == 7  # the component's, over both
    bad = write(tmp_path, "topology.debug: yes please\n", "bad.yaml")
    proc = cli("submit", str(path), "--local", "1", env={"SQUALL_CONF": str(bad)})
    assert proc.returncode == 2 and "bad.yaml:1" in proc.stderr and "topology.debug" in proc.stderr
