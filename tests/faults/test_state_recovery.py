"""RELIABILITY D11: a task state lost (its namespace deleted) or a checkpoint record lost is
an error naming the task, never a silent start from empty state."""

import sqlite3

import pytest

from squall import LocalCluster
from squall.state.local import DB_FILE
from squall.testing import tracked_topology
from tests.integration.components import RECORD
from tests.integration.test_stateful import SENTENCES, committed_counts, conf, expected, topology
from tests.waiting import wait_for


def local(tmp_path):
    return {"topology.state.provider": "squall.state.local.LocalStateProvider",
            "topology.state.provider.config": {"path": str(tmp_path / "state")}}


def first_run(c):
    with LocalCluster() as cluster:
        tracked_topology(cluster, "d11", c, topology(SENTENCES * 4)).wait_idle(timeout=60, trees=True)
        cluster.kill_topology("d11")
    assert committed_counts(c, "d11") == expected(SENTENCES * 4)


def errors_after_resubmit(c):
    RECORD.clear()
    with LocalCluster() as cluster:
        cluster.submit_topology("d11", c, topology(SENTENCES))
        # the store is a real file and checkpoints run on real time here
        wait_for(lambda: any("StateError" in e["message"]
                             for e in cluster.get_topology_info("d11")["errors"]), timeout=30)
        errors = cluster.get_topology_info("d11")["errors"]
        acked = len(RECORD["spout.acked"])
    return [e["message"] for e in errors], acked


def test_d11_a_deleted_task_state_is_an_error_not_an_empty_start(tmp_path):
    c = conf(local(tmp_path))
    first_run(c)
    with sqlite3.connect(tmp_path / "state" / DB_FILE) as db:  # one partition vanishes
        gone = db.execute("DELETE FROM committed WHERE ns = 'd11/count/0'").rowcount
        db.execute("DELETE FROM txids WHERE ns = 'd11/count/0'")
    assert gone > 0
    messages, acked = errors_after_resubmit(c)
    assert any(m.startswith("MissingStateError: task") and "'count'" in m and "is missing" in m
               for m in messages), messages
    assert acked == 0  # nothing was counted into an empty state


def test_d11_a_lost_checkpoint_record_is_an_error(tmp_path):
    c = conf(local(tmp_path))
    first_run(c)
    with sqlite3.connect(tmp_path / "state" / DB_FILE) as db:
        gone = db.execute("DELETE FROM committed WHERE ns = 'd11/$checkpointspout'").rowcount
        db.execute("DELETE FROM txids WHERE ns = 'd11/$checkpointspout'")
    assert gone > 0
    messages, acked = errors_after_resubmit(c)
    assert any(m.startswith("InconsistentStateError: task") and "record is missing" in m
               for m in messages), messages
    assert acked == 0


@pytest.mark.parametrize("rounds", [2])
def test_d11_a_healthy_store_recovers_without_errors(tmp_path, rounds):
    c = conf(local(tmp_path))
    first_run(c)
    with LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "d11", c, topology(SENTENCES))
        tracked.wait_idle(timeout=60, trees=True)
        assert tracked.info()["errors"] == []
        cluster.kill_topology("d11")
    assert committed_counts(c, "d11") == expected(SENTENCES * 5)
