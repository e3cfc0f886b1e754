"""RELIABILITY D11: a task state lost (its namespace deleted) or a checkpoint record lost is
an error naming the task, never a silent start from empty state."""

import sqlite3

from squall import LocalCluster
from squall.runtime.keygroups import default_table, owned_groups
from squall.state.keygrouped import group_namespace
from squall.state.local import DB_FILE
from squall.testing import simulated_time, tracked_topology
from tests.integration.components import RECORD
from tests.integration.test_stateful import SENTENCES, committed_counts, conf, expected, topology

# the namespaces of task 0's key groups (2 count tasks, topology.key.groups at its default)
TASK0 = [group_namespace("d11/count", g) for g in owned_groups(default_table(2, 4096), 0)]


def local(tmp_path):
    return {"topology.state.provider": "squall.state.local.LocalStateProvider",
            "topology.state.provider.config": {"path": str(tmp_path / "state")}}


def first_run(c):
    """Count SENTENCES * 4 to the end on simulated time (every ack waits for its commit)."""
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("d11", c, topology(SENTENCES * 4))
        for _ in range(600):
            if len({m for _, m in RECORD["spout.acked"]}) == len(SENTENCES) * 4:
                break
            cluster.advance_time(0.1, increment=0.1)
        cluster.kill_topology("d11")
    assert committed_counts(c, "d11") == expected(SENTENCES * 4)


def state_errors(cluster) -> list[str]:
    """The topology's reported errors about its state (Missing/InconsistentStateError)."""
    return [e["message"] for e in cluster.get_topology_info("d11")["errors"] if "StateError" in e["message"]]


def errors_after_resubmit(c):
    """The errors of a resubmit and how many messages it acked, 12 s after its first state
    error: 120 checkpoint intervals (100 ms), past the 5 s message timeout (simulated time)."""
    RECORD.clear()
    # an hour after the first run: a checkpoint spout that lost its record starts from its
    # clock (in ms), above every txid the first run reached, as a real resubmit would
    with simulated_time(start=3600.0), LocalCluster() as cluster:
        cluster.submit_topology("d11", c, topology(SENTENCES))
        for _ in range(100):
            if state_errors(cluster):
                break
            cluster.advance_time(0.1, increment=0.1)
        first = state_errors(cluster)
        assert first, "no state error within 10 s"
        # stateful acks wait for a commit: a task that went on counting into an empty state
        # would show only once checkpoints commit, so watch many intervals, and timeouts
        cluster.advance_time(12, increment=0.1)
        errors = cluster.get_topology_info("d11")["errors"]
        acked = len(RECORD["spout.acked"])
    return [e["message"] for e in errors], acked


def nothing_counted(acked: int) -> None:
    """No message acked, no checkpoint committed: the messages time out and replay, uncounted."""
    assert acked == 0
    assert RECORD["stateful.commit"] == []
    assert RECORD["spout.failed"]


def test_d11_a_deleted_task_state_is_an_error_not_an_empty_start(tmp_path):
    c = conf(local(tmp_path))
    c["topology.max.error.report.per.interval"] = 1000  # every refusal shown, not Storm's 5 per 10 s
    first_run(c)
    with sqlite3.connect(tmp_path / "state" / DB_FILE) as db:  # one partition vanishes
        # task 0's key groups (its record, which says which it committed, stays)
        gone = sum(db.execute("DELETE FROM committed WHERE ns = ?", (ns,)).rowcount for ns in TASK0)
        db.executemany("DELETE FROM txids WHERE ns = ?", [(ns,) for ns in TASK0])
    assert gone > 0
    messages, acked = errors_after_resubmit(c)
    assert any(m.startswith("MissingStateError: task") and "'count'" in m and "is missing" in m
               for m in messages), messages
    nothing_counted(acked)  # nothing was counted into an empty state
    assert sum(m.startswith("MissingStateError") for m in messages) > 10  # refused at every retry
    assert len(RECORD["stateful.init"]) == 1  # only the task whose state is whole initialised
    with sqlite3.connect(tmp_path / "state" / DB_FILE) as db:  # and nothing filled the gap
        assert sum(db.execute("SELECT count(*) FROM committed WHERE ns = ?", (ns,)).fetchone()[0]
                   for ns in TASK0) == 0


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
    nothing_counted(acked)
    assert sum(m.startswith("InconsistentStateError") for m in messages) > 10  # at every retry
    assert RECORD["stateful.init"] == []  # neither task started on states the record disowns


def test_d11_a_healthy_store_recovers_without_errors(tmp_path):
    c = conf(local(tmp_path))
    first_run(c)
    with LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "d11", c, topology(SENTENCES))
        tracked.wait_idle(timeout=60, trees=True)
        assert tracked.info()["errors"] == []
        cluster.kill_topology("d11")
    assert committed_counts(c, "d11") == expected(SENTENCES * 5)
