"""Issue 43 part 5: an exactly-once (or stateful) topology can be watched. The checkpoint
spout reports the last committed transaction, how long since, how long prepares and commits
take (the barrier's trip through every task, alignment waits included) and how many times
the topology rolled back; they reach ``get_topology_info``, ``squall info`` and ``/metrics``."""

from __future__ import annotations

from squall import LocalCluster
from squall.nimbus.prometheus import render
from squall.runtime.checkpoint import CHECKPOINT_SPOUT
from squall.state import memory
from squall.testing import simulated_time
from tests.integration import test_exactly_once as eo
from tests.integration.components import RECORD
from tests.integration.eo_components import Faults, sentences


def run_eo(faults: dict) -> dict:
    memory.clear()
    RECORD.clear()
    texts = sentences(1, 100)
    Faults.plan = faults
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology(eo.NAME, eo.conf("exactly_once"), eo.build(texts))
        for _ in range(60):
            cluster.advance_time(eo.STEP, increment=eo.STEP, quiet_timeout=0.5)
        info = cluster.get_topology_info(eo.NAME)
        record, _ = eo.coordinator(cluster)
        cluster.kill_topology(eo.NAME)
    Faults.plan = {}
    return {"info": info, "record": record}


def test_the_checkpoint_spout_reports_commits_durations_and_rollbacks():
    out = run_eo({("split", 5): "raise"})
    metrics = out["info"]["components"][CHECKPOINT_SPOUT]["metrics"]
    last = metrics["checkpoint/lastCommittedTxid"]["max"]
    record = out["record"]
    assert last == (record.txid if record.phase.value == "COMMITTED" else record.txid - 1)
    assert metrics["checkpoint/commitMs"]["count"] >= 5
    assert metrics["checkpoint/prepareMs"]["count"] >= 5
    assert metrics["checkpoint/rollbacks"]["count"] >= 1  # the exception in split failed a PREPARE
    assert 0 <= metrics["checkpoint/secsSinceCommit"]["max"] < 1.0  # interval 0.2 s, all settled


def test_the_checkpoint_figures_are_on_the_metrics_page():
    info = run_eo({})["info"]
    spouts = ("source", CHECKPOINT_SPOUT)
    info["kinds"] = {c: ("spout" if c in spouts else "bolt") for c in info["components"]}
    page = render([info], {"leader": True})
    line = next(ln for ln in page.splitlines() if 'metric="checkpoint/lastCommittedTxid"' in ln)
    assert 'component="$checkpointspout"' in line and float(line.rsplit(" ", 1)[1]) > 0
    assert any('metric="checkpoint/rollbacks"' in ln and ln.endswith(" 0") for ln in page.splitlines())


def test_squall_info_prints_the_checkpoint_figures():
    from squall.cli.commands.info import metric_summary

    out = run_eo({})
    metrics = out["info"]["components"][CHECKPOINT_SPOUT]["metrics"]
    assert metric_summary(metrics["checkpoint/lastCommittedTxid"]) == str(out["record"].txid)
    assert metric_summary(metrics["checkpoint/rollbacks"]) == "0"
    assert metric_summary(metrics["checkpoint/commitMs"]).startswith("count=")
