"""``benchmarks.opcodes --floor``: the same components driven with no engine.

The API's own instructions are counted on ``drive_free``, so it must make exactly the calls
the engine's run makes: one emit per sentence and one per word (or per map step), every
sentence acked by the spout, and the counter's counts right.
"""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks import opcodes
from benchmarks.opcodes import SENTENCES, drive_free


@pytest.mark.parametrize("workload,emits", [("wordcount", 10 + 2 * 32), ("pipeline", 10 * 4)])
def test_drive_free_makes_the_emits_of_the_workload(workload, emits):
    assert drive_free(10, workload) == emits


def test_drive_free_counts_every_word_and_acks_every_sentence(monkeypatch):
    made: list[Any] = []
    acked: list[Any] = []
    real = opcodes.Count.prepare

    def prepare(self: Any, conf: dict, context: Any, collector: Any) -> None:
        real(self, conf, context, collector)
        made.append(self)

    monkeypatch.setattr(opcodes.Count, "prepare", prepare)
    monkeypatch.setattr(opcodes.CountedSpout, "ack", lambda self, msg_id: acked.append(msg_id),
                        raising=False)
    drive_free(5, "wordcount")
    words: dict[str, int] = {}
    for sentence in SENTENCES:
        for word in sentence.split():
            words[word] = words.get(word, 0) + 1
    assert made[0].counts == words
    assert acked == list(range(5))
