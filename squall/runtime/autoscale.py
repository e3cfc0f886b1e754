"""The autoscaler's policy: DS2's model, one decision for every component at once (pure).

DS2 (Kalavri et al., OSDI 2018) measures each operator's *true* rates: what it processes and
emits per second of *useful* time (time spent in its own code, not waiting on input or on a
full output queue). A task that is busy 30% of the time at 3,000 tuples/s has a true rate of
10,000 tuples/s. From the rate the sources offer, the target rate propagates through the
topology edge by edge (each edge carries its observed share of the upstream's output, each
component multiplies by its own selectivity), and each component gets the parallelism whose
true rate carries its target input at the target utilisation. Since true rates do not
depend on the current parallelism, one decision sets every component, where Dhalion's
scale-up-one-bottleneck-per-round needs several.

This module holds no clock, thread or cluster: ``decide`` is a function of the figures of
one window, unit-tested on recorded figures and on a simulated topology
(tests/unit/test_autoscale_policy.py). ``squall.runtime``'s controller feeds it and applies
what it returns.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

# One decision's cap when nothing says otherwise (API.md: topology.autoscale.max.factor).
DEFAULT_MAX_FACTOR = 2.0
DEFAULT_TARGET_UTILIZATION = 0.7
# No change while the utilisation the target rate needs at the current parallelism is within
# this share of the target: a rate that wavers around a boundary of ceil() must not flip the
# parallelism at every decision.
DEFAULT_TOLERANCE = 0.2
# A Kafka spout's lag is to be caught up within this many seconds, on top of the offered rate.
DEFAULT_CATCH_UP_SECS = 60.0


@dataclass(frozen=True)
class Observed:
    """What one component did over the last window, summed over its tasks, per second.

    ``processed``: tuples taken in (a bolt's executed tuples; a spout's emitted ones).
    ``emitted``: tuples emitted on every stream. ``useful``: seconds of useful time per
    second summed over the tasks (the sum of the tasks' capacities: 2.0 means two tasks busy
    all the time). ``inputs``: for a bolt, tuples per second received from each upstream
    component. For a spout: ``offered``, the rate its source offers (None: what it emitted,
    inflated by the share of the window ``backpressure`` held it back), and ``lag``, the
    records its source holds that it has not read yet (a Kafka consumer group's lag).
    """

    parallelism: int
    processed: float = 0.0
    emitted: float = 0.0
    useful: float = 0.0
    inputs: Mapping[str, float] = field(default_factory=dict)
    spout: bool = False
    offered: float | None = None
    backpressure: float = 0.0
    lag: float = 0.0

    @property
    def true_rate(self) -> float | None:
        """Tuples one task processes per second of useful time; None when it did no work."""
        if self.processed <= 0.0 or self.useful <= 0.0:
            return None
        return self.processed / self.useful

    @property
    def utilization(self) -> float:
        """The mean share of its time a task spends working."""
        return self.useful / self.parallelism if self.parallelism else 0.0


@dataclass(frozen=True)
class Limits:
    """What one component's decisions may do (API.md's ``topology.autoscale.*`` keys)."""

    min_parallelism: int = 1
    max_parallelism: int = 4096
    target_utilization: float = DEFAULT_TARGET_UTILIZATION
    max_factor: float = DEFAULT_MAX_FACTOR
    # None: it can be rescaled; else why not (direct grouping, windowed state, ...)
    fixed: str | None = None

    def problem(self) -> str | None:
        """Why these limits contradict each other, or None."""
        if self.min_parallelism < 1:
            return f"min parallelism {self.min_parallelism} is below 1"
        if self.max_parallelism < self.min_parallelism:
            return f"max parallelism {self.max_parallelism} is below min parallelism {self.min_parallelism}"
        if not 0.0 < self.target_utilization <= 1.0:
            return f"target utilization {self.target_utilization} is not in (0, 1]"
        if not self.max_factor > 1.0:
            return f"max factor {self.max_factor} is not above 1"
        return None


@dataclass(frozen=True)
class Decision:
    """One decision: the changes, why, and the figures it used (shown as they are)."""

    changes: dict[str, tuple[int, int]]
    reason: str
    target_rates: dict[str, float]
    true_rates: dict[str, float | None]
    needed: dict[str, float]
    left: dict[str, str]

    def as_record(self) -> dict:
        """Plain data for ``get_topology_info(name)["autoscale"]["decisions"]``."""
        return {"changes": {c: list(v) for c, v in self.changes.items()}, "reason": self.reason,
                "target_rates": {c: round(r, 3) for c, r in self.target_rates.items()},
                "true_rates": {c: None if r is None else round(r, 3) for c, r in self.true_rates.items()},
                "needed": {c: round(n, 3) for c, n in self.needed.items()}, "left": dict(self.left)}


def offered_rate(o: Observed, catch_up_secs: float = DEFAULT_CATCH_UP_SECS) -> float:
    """The rate a spout's source offers, plus its lag spread over ``catch_up_secs``.

    Given (``offered``), or what it emitted inflated by the share backpressure held it back.
    """
    if o.offered is not None:
        base = o.offered
    else:
        # held back a share b of the window, it emitted (1 - b) of what it would have
        held = min(max(o.backpressure, 0.0), 0.95)
        base = o.emitted / (1.0 - held)
    return base + max(o.lag, 0.0) / catch_up_secs


def order(observed: Mapping[str, Observed]) -> list[str]:
    """The components upstream first (spouts, then bolts whose inputs are all placed)."""
    placed: list[str] = []
    seen: set[str] = set()
    todo = dict(observed)
    while todo:
        ready = [c for c, o in todo.items()
                 if o.spout or all(u in seen or u not in observed for u in o.inputs)]
        if not ready:  # a cycle (Storm allows one through a bolt's own stream): take the rest as is
            ready = sorted(todo)
        for c in sorted(ready):
            placed.append(c)
            seen.add(c)
            del todo[c]
    return placed


def target_rates(observed: Mapping[str, Observed],
                 catch_up_secs: float = DEFAULT_CATCH_UP_SECS) -> dict[str, float]:
    """Each component's target input rate: the sources' offer carried down every edge."""
    target_in: dict[str, float] = {}
    target_out: dict[str, float] = {}
    for c in order(observed):
        o = observed[c]
        if o.spout:
            target_in[c] = offered_rate(o, catch_up_secs)
            target_out[c] = target_in[c]  # a spout's processed tuples are what it emits
            continue
        total = 0.0
        for u, rate in o.inputs.items():
            up = observed.get(u)
            if up is None or up.emitted <= 0.0:
                total += rate  # an input the policy does not model keeps its observed rate
            else:
                total += rate * target_out.get(u, up.emitted) / up.emitted
        target_in[c] = total
        selectivity = o.emitted / o.processed if o.processed > 0 else 0.0
        target_out[c] = total * selectivity
    return target_in


def decide(observed: Mapping[str, Observed], limits: Mapping[str, Limits] | None = None,
           catch_up_secs: float = DEFAULT_CATCH_UP_SECS, tolerance: float = DEFAULT_TOLERANCE,
           scale_spouts: bool = False) -> Decision:
    """Every component's parallelism for the figures of one window (DS2).

    A component changes only when the utilisation its target rate needs at the current
    parallelism is off the target by more than ``tolerance`` (of the target); then it gets
    ``ceil(needed / target utilisation)`` tasks, within its limits and at most
    ``max_factor`` times (or 1/``max_factor`` of) its current parallelism. Spouts are left as
    they are unless ``scale_spouts`` (a source's parallelism is usually its partitions').
    """
    limits = limits or {}
    targets = target_rates(observed, catch_up_secs)
    changes: dict[str, tuple[int, int]] = {}
    left: dict[str, str] = {}
    needed: dict[str, float] = {}
    rates: dict[str, float | None] = {}
    reasons: list[str] = []
    for c in order(observed):
        o = observed[c]
        lim = limits.get(c, Limits())
        rate = o.true_rate
        rates[c] = rate
        if o.spout and not scale_spouts:
            continue
        if rate is None:
            if targets[c] > 0.0:
                left[c] = "no useful time measured yet"
            continue
        need = targets[c] / rate  # tasks fully busy
        needed[c] = need
        current = o.parallelism
        utilization = need / current
        if abs(utilization - lim.target_utilization) <= tolerance * lim.target_utilization:
            continue
        want = max(1, math.ceil(need / lim.target_utilization - 1e-9))
        want = min(max(want, lim.min_parallelism), lim.max_parallelism)
        up_to = max(current + 1, math.floor(current * lim.max_factor))
        down_to = min(current - 1, math.ceil(current / lim.max_factor))
        capped = min(max(want, down_to), up_to)
        if capped == current:
            continue
        if lim.fixed is not None:
            left[c] = lim.fixed
            continue
        changes[c] = (current, capped)
        cap_note = f", capped from {want}" if capped != want else ""
        reasons.append(f"{c} {current}->{capped}: target {targets[c]:.0f}/s at a true rate of "
                       f"{rate:.0f}/s per task needs {need:.2f} busy tasks (utilisation "
                       f"{utilization:.2f} at {current}, target {lim.target_utilization:.2f}){cap_note}")
    reason = "; ".join(reasons) if reasons else "every component within its target utilisation"
    return Decision(changes, reason, targets, rates, needed, left)


def check_limits(limits: Mapping[str, Limits], key_groups: int) -> None:
    """Raise ``ValueError`` naming the first component whose limits contradict each other."""
    for component, lim in sorted(limits.items()):
        problem = lim.problem()
        if problem is None and lim.max_parallelism > key_groups:
            problem = (f"max parallelism {lim.max_parallelism} is above topology.key.groups "
                       f"({key_groups})")
        if problem is not None:
            raise ValueError(f"topology.autoscale for {component!r}: {problem}")
