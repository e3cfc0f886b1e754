"""The autoscaler's policy (DS2) on recorded figures and on a simulated topology.

The simulated topology: a spout offering ``load`` sentences/s, a split bolt (selectivity 5,
cheap) and a count bolt ten times as costly per tuple. Its steady state for a parallelism:
the whole topology runs at the share ``f`` of the offered load that its slowest component
can carry, the spout held back the rest of the time (what backpressure does).
"""

from __future__ import annotations

import random

import pytest

from squall.runtime.autoscale import (
    Decision,
    Limits,
    Observed,
    check_limits,
    decide,
    offered_rate,
    target_rates,
)

# per task, tuples per second of useful time
SPLIT_RATE, COUNT_RATE = 50_000.0, 5_000.0
SELECTIVITY = 5.0


def simulate(parallelism: dict[str, int], load: float, noise: float = 0.0,
             rng: random.Random | None = None) -> dict[str, Observed]:
    """The figures one window of the simulated topology shows at ``parallelism``."""
    demand = {"split": load, "count": load * SELECTIVITY}
    capacity = {"split": parallelism["split"] * SPLIT_RATE, "count": parallelism["count"] * COUNT_RATE}
    f = min(1.0, *(capacity[c] / demand[c] for c in demand))

    def jitter(x: float) -> float:
        return x * (1.0 + (rng.uniform(-noise, noise) if rng else 0.0))

    sentences = load * f
    words = sentences * SELECTIVITY
    return {
        "spout": Observed(parallelism=2, processed=sentences, emitted=sentences, useful=0.2,
                          spout=True, backpressure=1.0 - f),
        "split": Observed(parallelism["split"], processed=sentences, emitted=words,
                          useful=jitter(sentences / SPLIT_RATE), inputs={"spout": sentences}),
        "count": Observed(parallelism["count"], processed=words, emitted=words,
                          useful=jitter(words / COUNT_RATE), inputs={"split": words}),
    }


def settle(parallelism: dict[str, int], load: float, rounds: int = 6, **kw) -> list[dict]:
    """Decide and apply ``rounds`` times; the parallelism after each decision."""
    history = []
    for _ in range(rounds):
        decision = decide(simulate(parallelism, load, **kw))
        for c, (_, new) in decision.changes.items():
            parallelism[c] = new
        history.append(dict(parallelism))
    return history


def carries(parallelism: dict[str, int], load: float) -> bool:
    """Whether the topology keeps up with ``load`` (no backpressure at the spout)."""
    return simulate(parallelism, load)["spout"].backpressure == 0.0


def test_a_worked_example_from_recorded_figures() -> None:
    # docs/autoscale.md's example: a window of an under-provisioned word count
    observed = {
        "spout": Observed(2, processed=4_000, emitted=4_000, useful=0.1, spout=True, backpressure=0.6),
        "split": Observed(1, processed=4_000, emitted=20_000, useful=0.08, inputs={"spout": 4_000}),
        "count": Observed(4, processed=20_000, emitted=20_000, useful=4.0, inputs={"split": 20_000}),
    }
    assert offered_rate(observed["spout"]) == pytest.approx(10_000)
    assert target_rates(observed) == pytest.approx({"spout": 10_000, "split": 10_000, "count": 50_000})
    decision = decide(observed)
    # count: true rate 5,000/s per task; 50,000/s need 10 busy tasks, 15 at 0.7, capped at 2x
    assert decision.changes == {"count": (4, 8)}
    assert decision.needed["count"] == pytest.approx(10.0)
    assert "count 4->8" in decision.reason and "capped from 15" in decision.reason
    # split needs 0.2 busy tasks: utilisation 0.2 against 0.7, but 1 is its least
    assert "split" not in decision.changes


def test_a_load_step_is_carried_within_two_decisions() -> None:
    parallelism = {"split": 1, "count": 2}
    settle(parallelism, 5_000)
    assert carries(parallelism, 5_000)
    history = settle(parallelism, 10_000, rounds=2)
    assert carries(history[-1], 10_000), history
    assert not carries({"split": 1, "count": 2}, 10_000)  # the step is one the start cannot carry


def test_halving_the_load_scales_down_within_two_decisions() -> None:
    parallelism = {"split": 1, "count": 2}
    settle(parallelism, 20_000)
    high = dict(parallelism)
    history = settle(parallelism, 10_000, rounds=2)
    assert history[-1]["count"] < high["count"]
    assert carries(history[-1], 10_000)
    # and at the target utilisation, give or take the tolerance
    count = simulate(history[-1], 10_000)["count"]
    assert count.utilization <= 0.7 * 1.2


def test_steady_load_with_noisy_figures_makes_no_decision() -> None:
    parallelism = {"split": 1, "count": 2}
    settle(parallelism, 10_000)
    rng = random.Random(7)
    for _ in range(20):  # ten minutes of 30 s decisions
        decision = decide(simulate(parallelism, 10_000, noise=0.05, rng=rng))
        assert decision.changes == {}, decision.reason


def test_one_decision_changes_a_parallelism_by_at_most_the_factor() -> None:
    observed = simulate({"split": 1, "count": 1}, 100_000)
    decision = decide(observed, {"count": Limits(max_factor=3.0)})
    assert decision.changes["count"] == (1, 3)
    down = decide(simulate({"split": 1, "count": 64}, 100), {"count": Limits(max_factor=2.0)})
    assert down.changes["count"] == (64, 32)


def test_bounds_are_kept() -> None:
    observed = simulate({"split": 1, "count": 4}, 100_000)
    decision = decide(observed, {"count": Limits(max_parallelism=6)})
    assert decision.changes["count"] == (4, 6)
    down = decide(simulate({"split": 1, "count": 4}, 10), {"count": Limits(min_parallelism=3)})
    assert down.changes["count"] == (4, 3)


def test_a_component_that_cannot_move_is_named_and_left() -> None:
    observed = simulate({"split": 1, "count": 2}, 10_000)
    decision = decide(observed, {"count": Limits(fixed="windowed state cannot move")})
    assert "count" not in decision.changes
    assert decision.left == {"count": "windowed state cannot move"}


def test_a_component_with_no_work_measured_is_left_and_named() -> None:
    # its tasks' capacity window has not closed yet: tuples counted, no useful time
    observed = dict(simulate({"split": 1, "count": 2}, 10_000))
    observed["count"] = Observed(2, processed=50_000, emitted=50_000, useful=0.0, inputs={"split": 50_000})
    decision = decide(observed)
    assert decision.left == {"count": "no useful time measured yet"}


def test_a_kafka_spouts_lag_is_caught_up() -> None:
    spout = Observed(3, processed=1_000, emitted=1_000, useful=0.3, spout=True, lag=60_000)
    assert offered_rate(spout, catch_up_secs=60) == pytest.approx(2_000)


@pytest.mark.parametrize(("limits", "message"), [
    (Limits(min_parallelism=5, max_parallelism=3), "max parallelism 3 is below min parallelism 5"),
    (Limits(target_utilization=1.5), "target utilization 1.5 is not in (0, 1]"),
    (Limits(max_factor=1.0), "max factor 1.0 is not above 1"),
    (Limits(min_parallelism=0), "min parallelism 0 is below 1"),
    (Limits(max_parallelism=5000), "max parallelism 5000 is above topology.key.groups (4096)"),
])
def test_contradicting_bounds_are_refused_in_one_line(limits: Limits, message: str) -> None:
    with pytest.raises(ValueError, match="for 'count'") as e:
        check_limits({"count": limits}, 4096)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_the_decision_record_is_plain_data() -> None:
    import json
    record = decide(simulate({"split": 1, "count": 1}, 10_000)).as_record()
    assert json.loads(json.dumps(record))["changes"] == {"count": [1, 2]}


def test_the_controller_asks_for_figures_only_when_a_window_ends():
    from squall.runtime.autoscale_control import Autoscaler, autoscale_step

    scaler = Autoscaler({"topology.autoscale.interval.secs": 30}, ["spout"], {})
    asked = []
    info = {"components": {}, "workers": []}
    clock = [0.0]

    def get_info():
        asked.append(clock[0])
        return info

    for t in range(0, 95):
        clock[0] = float(t)
        autoscale_step(scaler, "t", lambda: clock[0], get_info, lambda p: None)
    assert asked == [0.0, 30.0, 60.0, 90.0]  # the first opens a window, each later one ends it


def test_a_change_that_cannot_be_made_live_is_left_and_named():
    from squall.runtime.autoscale_control import Autoscaler

    scaler = Autoscaler({"topology.autoscale.interval.secs": 1}, ["spout"], {})
    refusals = {"count": "component 'count': runs on a thread of its own"}
    scaler.refusal = lambda counts: next((refusals[c] for c in counts if c in refusals), None)
    decision = decide(simulate({"split": 1, "count": 1}, 100_000))
    assert set(decision.changes) == {"count"}
    narrowed = scaler._only_live(decision)
    assert narrowed.changes == {}
    why = "cannot be rescaled live (component 'count': runs on a thread of its own)"
    assert why in narrowed.left["count"]
    assert narrowed.reason == "no change that can be made live"


def test_changes_that_cannot_move_live_together_keep_the_largest():
    from squall.runtime.autoscale_control import Autoscaler

    scaler = Autoscaler({}, ["spout"], {})
    alone = "a keyed stateful component rescales live alone"
    scaler.refusal = lambda counts: alone if len(counts) > 1 else None
    both = Decision({"split": (1, 2), "count": (1, 4)}, "split 1->2: a; count 1->4: b", {}, {}, {}, {})
    narrowed = scaler._only_live(both)
    assert narrowed.changes == {"count": (1, 4)}  # the larger change moves first
    assert narrowed.left == {"split": "1->2 waits for the next decision: it cannot move live with 'count'"}
    assert narrowed.reason == "count 1->4: b"
