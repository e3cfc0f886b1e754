"""benchmarks.rounds' analysis on made-up rounds: which stretch of a loop a slow sentence lived through."""

from __future__ import annotations

from benchmarks.rounds import analyse, label, stretches
from squall.runtime.round_trace import RoundRecord


def rnd(begun, length, *, frames=0.0, bolts=None, cpu=None, work=10):
    bolts = length / 2 if bolts is None else bolts
    return RoundRecord(begun, begun + frames, begun + frames + bolts, begun + length, 0.0,
                       length if cpu is None else cpu, 2, 5, work, 0, False)


def steady(start, end, step=0.001, length=0.0005):
    out, t = [], start
    while t < end:
        out.append(rnd(t, length))
        t += step
    return out


def test_each_round_and_the_gap_before_it_are_stretches_named_by_their_longest_part():
    rs = [rnd(1.0, 0.002, frames=0.0015, bolts=0.0002), rnd(1.010, 0.004, bolts=0.0005, cpu=0.001)]
    ss = stretches(0, rs)
    assert [(s.kind, round(s.end - s.start, 6)) for s in ss] == [
        ("frames", 0.002), ("gap", 0.008), ("spouts", 0.004)]
    assert [label(s) for s in ss] == ["round, mostly frames", "gap between rounds",
                                      "round, mostly spouts, off CPU"]


def test_a_slow_sentence_is_given_the_longest_stretch_of_any_worker_while_it_was_alive():
    w0 = steady(0.0, 1.0)
    w0 = [r for r in w0 if not 0.5 <= r.begun < 0.512] + [rnd(0.500, 0.012, bolts=0.010)]
    w0.sort(key=lambda r: r.begun)
    w1 = [r for r in steady(0.0, 1.0) if not 0.700 <= r.begun < 0.709]  # the loop waited 9 ms
    fast = [(t / 1000, 0.0008) for t in range(10, 990, 10)]
    slow = [(0.5115, 0.0100), (0.7085, 0.0090)]
    found = analyse(sorted(fast + slow), {0: w0, 1: w1}, 0.005, 0.0, 1.0, sample_every=1)
    rows = {k: (slow_share, median) for k, slow_share, _, median in found.rows}
    assert rows["round, mostly bolts"][0] == 0.5 and round(rows["round, mostly bolts"][1], 1) == 12.0
    assert rows["gap between rounds"][0] == 0.5 and round(rows["gap between rounds"][1], 1) == 9.5
    assert found.slow == 2 and found.sentences == 100
    assert "1 rounds of 5 ms or more" in found.workers[0] and "rounds of" not in found.workers[1]


def test_a_stretch_that_ended_before_a_sentence_was_born_is_not_its_own():
    from benchmarks.rounds import longest_stretch

    # a 20 ms round later on: the search reaches back 20 ms, past the 12 ms round's start
    rs = steady(0.0, 0.5) + [rnd(0.500, 0.012, bolts=0.010)] + steady(0.512, 0.8) \
        + [rnd(0.800, 0.020)] + steady(0.820, 1.0)
    ss = stretches(0, rs)
    index = [(ss, [s.start for s in ss], max(s.end - s.start for s in ss))]
    mine = longest_stretch(index, 0.5125, 0.5185)  # born just after the 12 ms round ended
    assert mine is not None and mine.end - mine.start < 0.001
    assert longest_stretch(index, 0.511, 0.5185).end - longest_stretch(index, 0.511, 0.5185).start > 0.011
