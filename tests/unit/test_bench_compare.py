"""benchmarks.report --compare: per-row ratios of two results files, regressions flagged."""

from __future__ import annotations

import json

import pytest

from benchmarks import report


def row(workload="wordcount", variant="max rate", system="squall-local", acking=True,
        tps=None, p99=None, error=None):
    out = {"workload": workload, "variant": variant, "system": system, "acking": acking,
           "throughput_tps": tps, "latency_p99_ms": p99}
    if error:
        out["error"] = error
    return out


def by_system(entries):
    return {(e["key"][2], e["key"][3]): e for e in entries}


def test_ratio_is_new_over_old_and_a_drop_beyond_the_threshold_is_flagged():
    old = [row(tps=20000, p99=50.0), row(system="raw", tps=100000)]
    new = [row(tps=16000, p99=40.0), row(system="raw", tps=90000)]
    entries = by_system(report.compare(old, new, threshold=0.15))
    local, raw = entries[("squall-local", True)], entries[("raw", True)]
    assert local["tps_ratio"] == pytest.approx(0.8)
    assert local["p99_ratio"] == pytest.approx(0.8)
    assert local["regressed"] and "20,000 -> 16,000" in local["why"]
    assert raw["tps_ratio"] == pytest.approx(0.9)
    assert not raw["regressed"]  # 10% down is inside 15%


def test_a_gain_is_never_a_regression_and_the_threshold_is_the_callers():
    old, new = [row(tps=10000)], [row(tps=30000)]
    assert not report.compare(old, new)[0]["regressed"]
    assert report.compare([row(tps=10000)], [row(tps=9400)], threshold=0.05)[0]["regressed"]
    assert not report.compare([row(tps=10000)], [row(tps=9400)], threshold=0.10)[0]["regressed"]


def test_acking_on_and_off_are_different_rows():
    old = [row(acking=True, tps=10000), row(acking=False, tps=30000)]
    new = [row(acking=True, tps=30000), row(acking=False, tps=10000)]
    entries = by_system(report.compare(old, new))
    assert not entries[("squall-local", True)]["regressed"]
    assert entries[("squall-local", False)]["regressed"]


def test_latency_rows_compare_the_p99_with_a_floor_in_ms():
    old = [row("latency", "50% of max", tps=9000, p99=2.0),
           row("latency", "10% of max", system="raw", tps=9000, p99=0.2)]
    new = [row("latency", "50% of max", tps=7000, p99=4.0),  # the offered rate is not the figure
           row("latency", "10% of max", system="raw", tps=9000, p99=0.9)]  # 4.5x, but +0.7 ms
    entries = by_system(report.compare(old, new))
    assert entries[("squall-local", True)]["regressed"]
    assert entries[("squall-local", True)]["why"] == "p99 2.0 -> 4.0 ms"
    assert entries[("raw", True)]["p99_ratio"] == pytest.approx(4.5)
    assert not entries[("raw", True)]["regressed"]


def test_errors_and_missing_rows():
    old = [row(tps=10000), row(system="raw", tps=5), row(system="bytewax", error="skipped: no env"),
           row(system="pyflink", tps=1000)]
    new = [row(error="error: worker died"), row(system="raw", tps=5),
           row(system="bytewax", tps=90000), row(system="spark-ss", tps=500000)]
    entries = by_system(report.compare(old, new))
    assert entries[("squall-local", True)]["regressed"]
    assert entries[("squall-local", True)]["why"] == "error in NEW"
    assert not entries[("bytewax", True)]["regressed"] and entries[("bytewax", True)]["why"] == "error in OLD"
    assert entries[("pyflink", True)]["regressed"] and entries[("pyflink", True)]["why"] == "only in OLD"
    assert not entries[("spark-ss", True)]["regressed"]
    assert entries[("spark-ss", True)]["why"] == "only in NEW"


def test_negative_threshold_is_refused():
    with pytest.raises(ValueError, match="threshold must be >= 0"):
        report.compare([], [], threshold=-0.1)


def test_command_prints_ratios_and_exits_1_on_a_regression(tmp_path, capsys):
    old, same, worse = tmp_path / "old.json", tmp_path / "same.json", tmp_path / "worse.json"
    old.write_text(json.dumps([row(tps=20000, p99=50.0), row(system="squall-spark", tps=40000)]))
    same.write_text(json.dumps([row(tps=21000, p99=45.0), row(system="squall-spark", tps=39000)]))
    worse.write_text(json.dumps([row(tps=21000, p99=45.0), row(system="squall-spark", tps=20000)]))

    assert report.main(["--compare", str(old), str(same)]) == 0
    text = capsys.readouterr().out
    assert "1.05" in text and "0.975" in text and "0 regression(s) beyond 15%" in text

    assert report.main(["--compare", str(old), str(worse), "--threshold", "0.6"]) == 0
    capsys.readouterr()
    assert report.main(["--compare", str(old), str(worse)]) == 1
    lines = capsys.readouterr().out.splitlines()
    spark = next(line for line in lines if "squall-spark" in line)
    assert "0.5" in spark and "REGRESSION 40,000 -> 20,000 sentences/s" in spark
    assert "1 regression(s) beyond 15%" in lines[-1]


def test_command_prints_one_files_table_and_names_a_bad_file(tmp_path, capsys):
    good = tmp_path / "latest.json"
    good.write_text(json.dumps([row(tps=20000, p99=50.0)]))
    assert report.main([str(good)]) == 0
    assert "20,000" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "rows"}')
    with pytest.raises(SystemExit, match="bad.json is not a results file"):
        report.main(["--compare", str(good), str(bad)])
    with pytest.raises(SystemExit, match="cannot read .*missing.json"):
        report.main(["--compare", str(good), str(tmp_path / "missing.json")])


def test_rows_whose_variant_is_their_outcome_are_matched_by_what_was_asked():
    old = [row("rescale", "live 264/227ms", system="squall-spark", tps=10080, p99=303.1),
           row("rescale", "restart 890/966ms", system="squall-spark", tps=14298, p99=209.9),
           row("autoscale", "1 dec, 15s", system="squall-spark", tps=295, p99=2961.2)]
    new = [row("rescale", "live 228/215ms", system="squall-spark", tps=10030, p99=284.1),
           row("rescale", "restart 1074/970ms", system="squall-spark", tps=6000, p99=209.8),
           row("autoscale", "2 dec, unsettled", system="squall-spark", tps=294, p99=2870.8)]
    entries = {e["key"][:2]: e for e in report.compare(old, new)}
    assert set(entries) == {("rescale", "live"), ("rescale", "restart"), ("autoscale", "2x step")}
    assert entries[("rescale", "live")]["tps_ratio"] == pytest.approx(10030 / 10080)
    assert not entries[("rescale", "live")]["regressed"]
    assert entries[("rescale", "restart")]["regressed"]  # a real drop is still flagged
    assert not entries[("autoscale", "2x step")]["regressed"]
