"""Which addresses the driver and squall's sockets take by default (tests/nimbus/test_hosts_cluster.py
runs them on hosts of their own; these are the rules, without a cluster)."""

from __future__ import annotations

import pytest

from squall.nimbus.clusterconf import classify
from squall.nimbus.launcher import advertised_host
from squall.spark import settings as S
from squall.spark.context import spark_settings


@pytest.fixture
def no_host_env(monkeypatch):
    for key in ("SPARK_LOCAL_IP", "SQUALL_ADVERTISE_HOST"):
        monkeypatch.delenv(key, raising=False)
    return monkeypatch


def test_the_driver_binds_and_advertises_spark_local_ip(no_host_env, tmp_path):
    no_host_env.setenv("SPARK_LOCAL_IP", "10.77.43.8")
    s = spark_settings("spark://10.77.43.4:7077", {}, str(tmp_path))
    assert (s["spark.driver.host"], s["spark.driver.bindAddress"]) == ("10.77.43.8", "10.77.43.8")


def test_without_spark_local_ip_the_driver_stays_on_loopback(no_host_env, tmp_path):
    s = spark_settings("local[2]", None, str(tmp_path))
    assert (s["spark.driver.host"], s["spark.driver.bindAddress"]) == ("127.0.0.1", "127.0.0.1")


def test_a_driver_host_set_alone_is_bound_too_and_the_users_keys_win(no_host_env, tmp_path):
    no_host_env.setenv("SPARK_LOCAL_IP", "10.77.43.8")
    s = spark_settings("spark://m:7077", {"spark.driver.host": "10.0.0.5"}, str(tmp_path))
    assert (s["spark.driver.host"], s["spark.driver.bindAddress"]) == ("10.0.0.5", "10.0.0.5")
    s = spark_settings("spark://m:7077", {"spark.driver.host": "driver-host",
                                          "spark.driver.bindAddress": "0.0.0.0"}, str(tmp_path))
    assert (s["spark.driver.host"], s["spark.driver.bindAddress"]) == ("driver-host", "0.0.0.0")


def test_squalls_sockets_default_to_this_hosts_address():
    assert S.setting({}, S.MASTER_BIND_HOST) == "auto"
    assert S.setting({}, S.WORKER_BIND_HOST) == "auto"


def test_nimbus_on_a_wildcard_gives_its_launches_this_hosts_address(no_host_env):
    assert advertised_host("10.77.43.9") == "10.77.43.9"
    no_host_env.setenv("SQUALL_ADVERTISE_HOST", "10.77.43.10")
    assert advertised_host("0.0.0.0") == "10.77.43.10"


def test_the_cluster_file_takes_spark_defaults():
    conf = classify({"spark.executor.memory": "512m", "spark.cores.max": 4, "topology.workers": 2},
                    "squall.yaml", {}, frozenset())
    assert conf.topology == {"spark.executor.memory": "512m", "spark.cores.max": 4, "topology.workers": 2}


def test_nimbus_binds_nimbus_bind_host_and_host_wins(tmp_path):
    from squall.cli.main import build_parser
    from squall.nimbus.config import NimbusConfig, with_conf

    assert with_conf(NimbusConfig(), {"nimbus.bind.host": "10.77.43.9"}).host == "10.77.43.9"
    args = build_parser().parse_args(["nimbus"])
    assert args.host is None  # not given: the cluster file's nimbus.bind.host, else 127.0.0.1
    assert NimbusConfig().host == "127.0.0.1"


def test_nimbus_launches_drivers_with_its_own_address(no_host_env, tmp_path):
    from pathlib import Path

    from squall.nimbus.launcher import Launcher

    fake = tmp_path / "spark-submit"
    fake.write_text('#!/bin/sh\necho "$SPARK_LOCAL_IP $*" > "$(dirname "$0")/seen"\n')
    fake.chmod(0o755)
    launcher = Launcher(store_uri="sqlite:x", blob_dir=tmp_path / "blobs", log_dir=tmp_path / "logs",
                        spark_submit=str(fake), bind_host="10.77.43.9")
    launch = launcher.launch("t", 1, "spark://10.77.43.4:7077")
    assert launch.process is not None and launch.process.wait(30) == 0
    seen = Path(tmp_path / "seen").read_text().split()
    assert seen[0] == "10.77.43.9"
    assert not any(arg.startswith("spark.driver.") for arg in seen)  # the driver takes it from there
