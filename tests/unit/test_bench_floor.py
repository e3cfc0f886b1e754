"""``benchmarks.floor``: the drivers make every call Storm's API asks per sentence."""

from __future__ import annotations

import pytest

from benchmarks import floor
from benchmarks.peers._common import SENTENCES, WORDS_PER_SENTENCE


def test_pipeline_driver_emits_once_per_hop(tmp_path):
    _, emits = floor.pipeline_api(10, str(tmp_path))
    assert emits == 10 * 4  # the spout and three map steps


def test_wordcount_driver_emits_a_sentence_its_words_and_their_counts(tmp_path):
    n = len(SENTENCES) * 2
    _, emits = floor.wordcount_api(n, str(tmp_path))
    assert emits == n + 2 * round(n * WORDS_PER_SENTENCE)  # sentence, words, [word, count]


def test_main_prints_each_workload_both_ways(capsys):
    assert floor.main(["--sentences", "50", "--repeat", "1", "--cores", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "ceiling on 3 cores" in lines[0]
    assert [line.split()[0] for line in lines[1:]] == ["pipeline", "pipeline", "wordcount", "wordcount"]
    assert all(float(line.split()[-2]) > 0 for line in lines[1:])


def test_bad_arguments_are_refused(capsys):
    with pytest.raises(SystemExit):
        floor.main(["--sentences", "0"])
    assert "must be at least 1" in capsys.readouterr().err


def test_the_bench_plans_a_floor_row_per_workload_and_prints_squalls_share_of_it(monkeypatch):
    from benchmarks import report
    from benchmarks.__main__ import plan
    from benchmarks.workloads import QUICK

    cases = plan("floor", ["wordcount", "pipeline", "latency"], QUICK)
    assert [(c["workload"], c["acking"]) for c in cases] == [("wordcount", True), ("pipeline", True)]
    monkeypatch.setattr(floor, "CASE_SENTENCES", 50)
    monkeypatch.setattr(floor, "REPEAT", 1)
    row = floor.run_case(cases[0])
    assert row["system"] == "floor" and row["throughput_tps"] > 0 and row["us_per_sentence"] > 0
    spark = {"workload": "wordcount", "variant": cases[0]["variant"], "system": "squall-spark",
             "acking": True, "throughput_tps": row["throughput_tps"] / 4}
    rows = report.complete([spark, row])
    assert rows[1]["squall_ratio"]["squall-spark"] == pytest.approx(0.25)
    assert "wordcount (acked)" in report.table(rows) and "÷ its ceiling (floor)" in report.table(rows)


def test_the_kafka_word_count_is_compared_with_the_in_memory_one_of_the_same_run():
    from benchmarks import report

    def r(workload, system, tps, acking=True):
        return {"workload": workload, "variant": "max rate", "system": system, "acking": acking,
                "throughput_tps": tps}

    text = report.table(report.complete([r("wordcount", "squall-spark", 100_000),
                                         r("kafka-wordcount", "squall-spark", 75_000),
                                         r("kafka-wordcount", "bytewax", 50_000, acking=False)]))
    assert "kafka-wordcount 75,000/s ÷ its wordcount (acked) 100,000/s = 0.75" in text
    assert "Bytewax's KafkaSource word count 50,000/s = 1.50" in text


def test_the_floor_counts_its_own_cpu_not_the_time_a_busy_neighbour_takes_on_its_core(tmp_path):
    """A process busy on the floor's core (as a stopping cluster's) must not halve the ceiling."""
    import multiprocessing as mp
    import os

    core = min(os.sched_getaffinity(0))
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {core})
    try:
        def best(n: int = 20_000) -> float:
            return min(floor.pipeline_api(n, str(tmp_path))[0] for _ in range(3))

        alone = best()
        stop = mp.Event()
        neighbour = mp.get_context("fork").Process(target=_spin, args=(core, stop), daemon=True)
        neighbour.start()
        try:
            shared = best()
        finally:
            stop.set()
            neighbour.join(5)
    finally:
        os.sched_setaffinity(0, before)
    # wall time on a core shared half and half would be about 2x; the process's CPU about 1x
    assert shared < 1.5 * alone, (alone, shared)


def _spin(core: int, stop) -> None:
    import os

    os.sched_setaffinity(0, {core})
    while not stop.is_set():
        pass
