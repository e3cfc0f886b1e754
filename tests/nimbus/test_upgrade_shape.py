"""A gray upgrade runs under the running topology's shape (issue 41, item 11; issue 31, item 5).

``squall upgrade NAME FILE --worker-num 1`` after a ``rebalance --workers 3`` (or without the
``--conf topology.workers=3`` given at submit) used to be refused with "workers: running 3,
new 1". A gray upgrade now runs the new code under the running worker count and parallelism
(as rebalanced) and compares only what the code decides: components, groupings, streams and
task counts. A Nimbus on a real SQLite store; the check comes before any master is asked, so
no Spark is needed (an accepted upgrade goes on to ask the master, which is not running
here). The master's own check (``layout_difference``) is tested on real plans;
tests/nimbus/test_gray_after_rebalance.py runs the whole routine on Spark.
"""

from __future__ import annotations

import base64
import io
import zipfile

import cloudpickle
import pytest

from squall import Bolt, Fields, Spout, TopologyBuilder
from squall.nimbus.errors import Conflict, InvalidRequest
from squall.nimbus.validation import gray_difference, running_parallelism
from squall.runtime.layout import layout_difference, upgrade_refusal
from squall.runtime.plan import make_plan
from squall.runtime.submission import prepare_conf
from squall.store import keys as K
from tests.nimbus.test_uptime import nimbus


class Words(Spout):
    def declare_output_fields(self, d):
        d.declare(Fields("w"))


class Count(Bolt):
    def execute(self, tup):
        pass


def topology(count: int = 2):
    b = TopologyBuilder()
    b.set_spout("words", Words())
    b.set_bolt("count", Count(), parallelism=count).fields_grouping("words", Fields("w"))
    return b.create_topology()


def plan(conf: dict, count: int = 2):
    t = topology(count)
    return make_plan(t, prepare_conf(conf, t))


def test_the_masters_check_names_each_part_and_how():
    running = plan({"topology.workers": 3})
    assert layout_difference(running, plan({"topology.workers": 3})) is None
    assert layout_difference(running, plan({})) == "workers: running 3, new 1"
    fewer_ackers = plan({"topology.workers": 3, "topology.acker.executors": 1})
    assert layout_difference(running, fewer_ackers).startswith(
        "tasks of '__acker': running 3, new 1; task ids of '__system'")
    more_tasks = plan({"topology.workers": 3}, 4)
    assert "tasks of 'count': running 2, new 4" in layout_difference(running, more_tasks)
    text = upgrade_refusal(2, "tasks of '__acker': running 3, new 1", {"topology.acker.executors": 3}, {})
    assert text == ("version 2 does not have the running topology's shape (tasks of '__acker': running 3, "
                    "new 1); a gray upgrade keeps the running worker count and parallelism and takes every "
                    "other key from the new version's configuration (as JStorm's): overrides given at "
                    "submit are not carried over; repeat --conf topology.acker.executors=3 to keep the "
                    "running value")


def upload(conf: dict, count: int = 2, extra_stream: bool = False) -> dict:
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as z:
        z.writestr("empty.py", "")
    t = topology(count) if not extra_stream else topology_with_a_stream(count)
    return {"conf": conf, "topology": base64.b64encode(cloudpickle.dumps(t)).decode(),
            "code": base64.b64encode(code.getvalue()).decode()}


class WordsAndLengths(Words):
    def declare_output_fields(self, d):
        d.declare(Fields("w"))
        d.declare(Fields("n"), stream="lengths")


def topology_with_a_stream(count: int = 2):
    b = TopologyBuilder()
    b.set_spout("words", WordsAndLengths())
    b.set_bolt("count", Count(), parallelism=count).fields_grouping("words", Fields("w"))
    return b.create_topology()


def started(n, record: dict) -> None:
    """Version 1 of 'wc' (submitted with ``--conf topology.workers=3``), as ``record`` says it runs."""
    first = upload({"topology.workers": 3})
    n.store.put(K.topology_key("wc"), {
        "name": "wc", "id": "wc-1700000000-a1b2c3", "secret": "0" * 64, "status": K.ACTIVE, "active": True,
        "version": 1, "versions": [1], "epoch": 1, "num_workers": 3, "upgrade": None,
        "spark_master": "local[2]", "submitted": n.now(), "state": K.RUNNING, **record})
    n.store_version("wc", "wc-1700000000-a1b2c3", 1, code=base64.b64decode(first["code"]),
                    topology=base64.b64decode(first["topology"]), conf=first["conf"])


@pytest.fixture
def nimbus_leader(tmp_path):
    n = nimbus(tmp_path, lead=True)
    yield n
    n.election.stop()
    n.store.close()


@pytest.fixture
def running(nimbus_leader):
    """Version 1 of 'wc', submitted with --conf topology.workers=3 (as the client merges it)."""
    started(nimbus_leader, {})
    return nimbus_leader


def accepted(n, body: dict) -> None:
    """The upgrade got past every check and asked the master (which is not running here)."""
    with pytest.raises(Conflict, match="the topology master of 'wc' is not running"):
        n.upgrade("wc", body)


def test_a_gray_upgrade_after_a_rebalance_runs_under_the_rebalanced_shape(nimbus_leader):
    # rebalanced from 3 workers to 4 and 'count' from 2 to 5; the new file says neither
    started(nimbus_leader, {"workers": 4, "num_workers": 4, "parallelism": {"count": 5}})
    accepted(nimbus_leader, {**upload({}), "gray": {"worker_num": 1}})
    accepted(nimbus_leader, {**upload({"topology.workers": 2}, count=3), "gray": {"worker_num": 1}})


def test_a_gray_upgrade_without_the_submit_override_runs_under_the_running_workers(running):
    accepted(running, {**upload({}), "gray": {"worker_num": 1}})
    assert running.record("wc")["versions"] == [1]  # nothing stored before the master answers


def test_a_gray_upgrade_of_another_stream_says_how_and_not_the_workers(running):
    with pytest.raises(InvalidRequest) as e:
        running.upgrade("wc", {**upload({}, extra_stream=True), "gray": {"worker_num": 1}})
    text = str(e.value)
    assert "streams of 'words': running {'default': (('w',), False)}, new {'default': (('w',), False), " \
           "'lengths': (('n',), False)}" in text, text
    assert "workers" not in text.split("; or use")[0] and "parallelism" not in text
    assert "or use a hot deploy" in text and "\n" not in text
    assert running.record("wc")["versions"] == [1]  # refused before the version is stored


def test_the_running_parallelism_decides_the_task_counts_compared():
    running = topology(2)
    assert running_parallelism(running, {"count": 5}) == {"count": 5, "words": 1}
    assert gray_difference(running, {"count": 5, "words": 1}, topology(3)) is None
    assert gray_difference(running, {"count": 5, "words": 1}, topology_with_a_stream(2)).startswith(
        "streams of 'words'")
    fixed = TopologyBuilder()
    fixed.set_spout("words", Words())
    fixed.set_bolt("count", Count(), parallelism=2).set_num_tasks(8).fields_grouping("words", Fields("w"))
    assert gray_difference(running, {"count": 2, "words": 1}, fixed.create_topology()) == \
        "tasks of 'count': running 2, new 8"
