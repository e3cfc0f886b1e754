"""windowed_wordcount: the word count beside windowed word counts (squall only).

Three variants on the same topology and settings: ``plain`` (the dict-counting bolt),
``tumbling`` and ``sliding`` (both ``SlidingWordCount``, a ``WindowedBolt`` counting the
last ``WINDOW`` words of each count task incrementally from each window's new and expired
tuples; ``tumbling`` evaluates every ``WINDOW`` words, ``sliding`` every ``SLIDE`` words).
So sliding against tumbling is the cost of sliding, for the same window length and rate.
A windowed bolt acks a tuple when it leaves the window, so a sentence completes only
once its words have been pushed out by ``WINDOW`` later words: the spouts need more in
flight than the plain count does (``MAX_SPOUT_PENDING`` for every variant; it is also
Storm's submit check, window + slide <= max spout pending). The difference in
throughput is the cost of keeping the window, anchoring every emit to it and acking on
expiry; latencies include the time a tuple spends in its window.
"""

from __future__ import annotations

from typing import Any

from squall import Config, Count

NAME = "windowed_wordcount"
SYSTEMS = ("squall-local", "squall-spark")
VARIANTS = ("plain", "tumbling", "sliding")
WINDOW, SLIDE = 500, 50
MAX_SPOUT_PENDING = 2000


def cases(profile: Any, system: str) -> list[dict]:
    from benchmarks.workloads import make_case

    return [make_case(NAME, v, system, profile, acking=True, max_spout_pending=MAX_SPOUT_PENDING,
                      window=WINDOW, slide=SLIDE)
            for v in VARIANTS]


def build(case: dict, probe_dir: str) -> tuple[Any, Config]:
    from benchmarks.workloads.components import SlidingWordCount
    from benchmarks.workloads.wordcount import squall_conf, topology

    conf = squall_conf(case, max_spout_pending=MAX_SPOUT_PENDING)
    if case["variant"] == "plain":
        return topology(probe_dir, case["workers"]), conf
    params = case["params"]
    slide = params["window"] if case["variant"] == "tumbling" else params["slide"]
    counter = SlidingWordCount(probe_dir).with_window(Count(params["window"]), Count(slide))
    return topology(probe_dir, case["workers"], count_bolt=counter), conf
