"""The Nimbus suite's word count sends words to every one of its count tasks.

Tests here wait for a given worker's count task to record something (a gray upgrade's
first batch, picked at random, must count on the new code). With the words and sentences
the suite used before, the fields grouping gave count task index 3 of 4 no word at all,
so one pick in four waited for nothing: ``test_gray_batches`` failed in CI so.
"""

from __future__ import annotations

import ast

import pytest

from squall import Fields
from squall.runtime.routing import FieldsRouter
from tests.nimbus import results as R
from tests.nimbus import topology_source


def _used_words() -> set[str]:
    return {w for i in range(1000) for w in R.sentence(i).split()}


@pytest.mark.parametrize("parallelism", range(1, 7))
def test_every_count_task_gets_words(parallelism):
    # the router the split bolt's fields grouping on "word" builds, over the count tasks
    router = FieldsRouter(list(range(parallelism)), Fields(["word"]), Fields(["word"]))
    owners = {t for w in _used_words() for t in router.route([w])}
    missing = set(range(parallelism)) - owners
    assert not missing, f"count tasks without a word: {missing}"


def test_the_topology_and_the_reader_agree_on_the_sentences():
    """``results`` computes the expected counts from its own copy of the topology's words."""
    template = topology_source.SOURCE
    words_line = next(line for line in template.splitlines() if line.startswith("WORDS = "))
    assert ast.literal_eval(words_line.split("=", 1)[1].strip()) == R.WORDS
    assert "WORDS[(i + k * 3) % len(WORDS)] for k in range(n)" in template
    assert set(R.WORDS) == _used_words()
