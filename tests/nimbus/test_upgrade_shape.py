"""A gray upgrade of another shape says which part differs and how (issue 31, item 5).

``squall upgrade NAME FILE --worker-num 1`` without the ``--conf topology.workers=3`` given at
submit used to fail with "does not have the running topology's shape (components, streams,
tasks, workers)". An upgrade takes the new submission's configuration, as JStorm's (nothing of
the running one is inherited): the refusal says so, names the part ("workers: running 3, new
1") and the ``--conf`` to repeat. A Nimbus on a real SQLite store; the refusal comes before any
master is asked, so no Spark is needed. The master's own check (``layout_difference``) is
tested on real plans.
"""

from __future__ import annotations

import base64
import io
import zipfile

import cloudpickle
import pytest

from squall import Bolt, Fields, Spout, TopologyBuilder
from squall.nimbus.errors import InvalidRequest
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
    text = upgrade_refusal(2, "workers: running 3, new 1", {"topology.workers": 3}, {"topology.workers": 1})
    assert text == ("version 2 does not have the running topology's shape (workers: running 3, new 1); "
                    "an upgrade runs with the new version's configuration only (as JStorm's): overrides "
                    "given at submit are not carried over; repeat --conf topology.workers=3 to keep the "
                    "running value")


def upload(conf: dict, count: int = 2) -> dict:
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as z:
        z.writestr("empty.py", "")
    return {"conf": conf, "topology": base64.b64encode(cloudpickle.dumps(topology(count))).decode(),
            "code": base64.b64encode(code.getvalue()).decode()}


@pytest.fixture
def running(tmp_path):
    """Version 1 of 'wc', submitted with --conf topology.workers=3 (as the client merges it)."""
    n = nimbus(tmp_path, lead=True)
    first = upload({"topology.workers": 3})
    n.store.put(K.topology_key("wc"), {
        "name": "wc", "id": "wc-1700000000-a1b2c3", "secret": "0" * 64, "status": K.ACTIVE, "active": True,
        "version": 1, "versions": [1], "epoch": 1, "num_workers": 3, "upgrade": None,
        "spark_master": "local[2]", "submitted": n.now(), "state": K.RUNNING})
    n.store_version("wc", "wc-1700000000-a1b2c3", 1, code=base64.b64decode(first["code"]),
                    topology=base64.b64decode(first["topology"]), conf=first["conf"])
    yield n
    n.election.stop()
    n.store.close()


def test_a_gray_upgrade_without_the_submit_override_says_workers_running_3_new_1(running):
    with pytest.raises(InvalidRequest) as e:
        running.upgrade("wc", {**upload({}), "gray": {"worker_num": 1}})
    text = str(e.value)
    assert "workers: running 3, new 1" in text, text
    assert "new version's configuration only" in text and "repeat --conf topology.workers=3" in text
    assert "\n" not in text
    assert running.record("wc")["versions"] == [1]  # refused before the version is stored


def test_a_gray_upgrade_of_another_parallelism_says_how(running):
    with pytest.raises(InvalidRequest) as e:
        running.upgrade("wc", {**upload({"topology.workers": 3}, count=4), "gray": {"worker_num": 1}})
    assert "parallelism of 'count': running 2, new 4; tasks of 'count': running 2, new 4" in str(e.value)
    assert "repeat --conf" not in str(e.value)  # the configurations agree
