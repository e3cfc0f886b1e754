"""``squall submit``'s spark-submit flags and ``--env`` become configuration keys."""

from __future__ import annotations

import pytest

from squall.cli.commands.submit import spark_options
from squall.cli.main import build_parser


def parse(*argv: str):
    return build_parser().parse_args(["submit", "topo.py", *argv])


def test_spark_submit_flags_set_their_keys(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = parse("--master", "spark://h:7077", "--archives", "env.tar.gz#environment,hdfs://nn/x.zip",
                 "--py-files", "lib.zip", "--files", "a.txt", "--packages", "org.x:y:1.0", "--jars", "a.jar",
                 "--executor-memory", "2g", "--executor-cores", "2", "--total-executor-cores", "8",
                 "--num-executors", "4")
    assert spark_options(args) == {
        "squall.spark.master": "spark://h:7077",
        "spark.archives": f"{tmp_path / 'env.tar.gz'}#environment,hdfs://nn/x.zip",
        "spark.submit.pyFiles": str(tmp_path / "lib.zip"),
        "spark.files": str(tmp_path / "a.txt"),
        "spark.jars.packages": "org.x:y:1.0",
        "spark.jars": str(tmp_path / "a.jar"),
        "spark.executor.memory": "2g",
        "spark.executor.cores": "2",
        "spark.cores.max": "8",
        "spark.executor.instances": "4",
    }


def test_no_flag_sets_nothing():
    assert spark_options(parse()) == {}


@pytest.mark.parametrize("value", ["auto", "none", "envs/x.tar.gz"])
def test_env_is_parsed(value):
    assert parse("--env", value).env == value
