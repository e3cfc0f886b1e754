"""``stateful_wordcount``: sized as docs/state.md says, and each row printed beside its cap."""

from __future__ import annotations

from benchmarks import report
from benchmarks.workloads import QUICK
from benchmarks.workloads import stateful_wordcount as sw

# squall-spark's plain (unheld) word count on an idle 2-core machine (issue 40): 169,941/s
PLAIN_IDLE_TPS = 170_000


def _rows() -> list[dict]:
    rows = []
    for case, tps in zip(sw.cases(QUICK, "squall-spark"), (170_000, 110_000, 90_000, 100_000, 95_000),
                         strict=True):
        rows.append({**case, "system": "squall-spark", "throughput_tps": tps,
                     "latency_p50_ms": 200.0})
    return rows


def _cap(row: dict) -> tuple[float, str]:
    made = sw.cap(row)
    assert made is not None
    return made


def test_the_cap_is_spout_tasks_times_pending_over_the_interval():
    params = {"max_spout_pending": 10_000, "checkpoint_interval_ms": 250, "spout_tasks": 2}
    row = {"variant": "memory", "workers": 2, "params": params}
    tps, how = _cap(row)
    assert tps == 80_000  # the cap issue 40 found every store at
    assert how == "2 spout tasks x 10,000 pending (topology.max.spout.pending) / 0.25 s"
    assert sw.cap({**row, "variant": "plain"}) is None  # no held acks
    unset = {**row, "variant": sw.EXACTLY_ONCE, "params": {**params, "max_spout_pending": None}}
    tps, how = _cap(unset)
    assert tps == 2 * 100_000 / 0.25 and "squall.exactly_once.max.spout.pending" in how


def test_the_workload_is_sized_so_held_acks_do_not_cap_it():
    # docs/state.md: pending above what a spout task emits in an interval plus the crossing
    for case in sw.cases(QUICK, "squall-spark"):
        per_task = PLAIN_IDLE_TPS / case["params"]["spout_tasks"]
        interval_s = case["params"]["checkpoint_interval_ms"] / 1000
        assert case["params"]["max_spout_pending"] > per_task * (interval_s + 0.1)
        if case["variant"] != "plain":
            assert _cap(case)[0] >= 1.4 * PLAIN_IDLE_TPS


def test_the_table_prints_each_stateful_row_beside_its_cap_and_the_same_run_ratios():
    text = report.table(report.complete(_rows()))
    lines = text.splitlines()
    memory = next(line for line in lines if line.startswith("squall-spark stateful_wordcount memory:"))
    assert "110,000/s, cap 240,000/s (2 spout tasks x 30,000 pending" in memory
    assert "= 0.46 of it; p50 200 ms = 0.80 intervals" in memory
    assert any(line.startswith(f"squall-spark stateful_wordcount {sw.EXACTLY_ONCE}: 95,000/s, cap")
               for line in lines)
    assert not any(line.startswith("squall-spark stateful_wordcount plain:") for line in lines)
    assert "squall-spark stateful_wordcount: memory ÷ plain 0.65; redis-exactly-once ÷ redis 0.95" in lines
