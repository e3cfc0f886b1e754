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
