"""The autoscaler's controller: figures of two info snapshots in, a decision out (no thread).

A cluster (``LocalCluster``, the topology master on Spark) calls ``Autoscaler.observe(now,
info)`` on its own clock, often (every info it builds will do). The controller keeps the
snapshot of the start of the window, and once ``topology.autoscale.interval.secs`` has passed
since then (and since the last change applied), turns the two snapshots' counters into
rates per second (``Observed``) and asks the policy (``runtime.autoscale.decide``). In
``recommend`` mode the decision is only kept and shown; in ``apply`` mode the cluster
rescales what it says and calls ``applied``. The history it keeps is what
``get_topology_info(name)["autoscale"]`` shows (API.md).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from squall.api.errors import InvalidTopologyError
from squall.runtime.autoscale import (
    DEFAULT_MAX_FACTOR,
    DEFAULT_TARGET_UTILIZATION,
    Decision,
    Limits,
    Observed,
    check_limits,
    decide,
)
from squall.runtime.keygroups import num_key_groups

log = logging.getLogger("squall.autoscale")
AUTOSCALE = "topology.autoscale"
MODE = "topology.autoscale.mode"
TARGET = "topology.autoscale.target.utilization"
INTERVAL = "topology.autoscale.interval.secs"
MAX_FACTOR = "topology.autoscale.max.factor"
MIN_PARALLELISM = "topology.autoscale.min.parallelism"
MAX_PARALLELISM = "topology.autoscale.max.parallelism"
MODES = ("apply", "recommend")
# decisions kept for info, newest last
HISTORY = 50


def is_on(conf: Mapping[str, Any]) -> bool:
    """Whether ``topology.autoscale`` is on."""
    return conf.get(AUTOSCALE) is True


def component_limits(conf: Mapping[str, Any], component_conf: Mapping[str, Any],
                     fixed: str | None = None) -> Limits:
    """One component's limits: its own configuration over the topology's."""
    def pick(key: str, default: Any) -> Any:
        value = component_conf.get(key, conf.get(key))
        return default if value is None else value

    key_groups = num_key_groups(conf)
    return Limits(min_parallelism=int(pick(MIN_PARALLELISM, 1)),
                  max_parallelism=int(pick(MAX_PARALLELISM, key_groups)),
                  target_utilization=float(pick(TARGET, DEFAULT_TARGET_UTILIZATION)),
                  max_factor=float(pick(MAX_FACTOR, DEFAULT_MAX_FACTOR)), fixed=fixed)


def check_autoscale(conf: Mapping[str, Any], components: Mapping[str, Mapping[str, Any]]) -> None:
    """At submit: refuse, in one line, bounds that contradict each other (``components``: id -> conf)."""
    if not is_on(conf):
        return
    mode = conf.get(MODE, "apply")
    if mode not in MODES:
        raise InvalidTopologyError(f"config {MODE} must be 'apply' or 'recommend', got {mode!r}")
    key_groups = num_key_groups(conf)
    try:
        check_limits({c: component_limits(conf, cc) for c, cc in components.items()}, key_groups)
    except (TypeError, ValueError) as e:
        raise InvalidTopologyError(str(e)) from None


def _system(component: str) -> bool:
    return component.startswith(("__", "$"))


class Autoscaler:
    """Decisions for one topology from the info snapshots it is shown (see the module docs)."""

    def __init__(self, conf: Mapping[str, Any], spouts: Iterable[str],
                 limits: Mapping[str, Limits], sources: Mapping[str, Iterable[str]] | None = None) -> None:
        self.mode = str(conf.get(MODE, "apply"))
        self.interval = float(conf.get(INTERVAL, 30))
        self.spouts = frozenset(spouts)
        self.limits = dict(limits)
        # bolt -> its upstream components (when info has no per-input figures)
        self.sources = {c: list(s) for c, s in (sources or {}).items()}
        self.decisions: deque[dict] = deque(maxlen=HISTORY)
        self._start: tuple[float, dict] | None = None
        self.in_progress = False
        self.windows = 0  # windows looked at: a decision that changes nothing is not kept
        self.last_window: dict | None = None  # the last window's decision, kept or not
        # set by the cluster: why a change of parallelism ({component: n}) cannot be made live
        self.refusal: Callable[[dict[str, int]], str | None] | None = None

    def observe(self, now: float, info: Mapping[str, Any]) -> Decision | None:
        """A decision if a window of ``interval`` seconds has ended with ``info``, else None.

        Nothing is decided while a rescale is in progress (``in_progress``, or the
        topology's ``rescale`` record says ``running``: a live move); the window starts
        again after one, so a decision never reads figures from before the change it follows.
        """
        if self.in_progress or (info.get("rescale") or {}).get("status") == "running":
            self._start = None  # the next window starts after the move
            return None
        snap = snapshot(info)
        if self._start is None:
            self._start = (now, snap)
            return None
        begun, first = self._start
        if now - begun < self.interval:
            return None
        self._start = (now, snap)
        observed = observed_between(first, snap, now - begun, self.spouts, self.sources)
        if not observed:
            return None
        limits = {c: self.limits.get(c, Limits()) for c in observed}
        decision = self._only_live(decide(observed, limits))
        self.windows += 1
        self.last_window = {"time": now, **decision.as_record()}
        if decision.changes or decision.left:
            self.decisions.append({"time": now, **decision.as_record(), "mode": self.mode,
                                   "applied": False})
        return decision

    def _only_live(self, decision: Decision) -> Decision:
        """``decision`` with the changes that cannot be made live moved to ``left``, with why.

        A decision never restarts the topology (issue 39): a component the live rescale does
        not cover keeps its parallelism and is named. Changes that are each live but not
        together (a keyed bolt moves alone) keep the largest; the others wait for the next.
        """
        if self.refusal is None or not decision.changes:
            return decision
        keep: dict[str, tuple[int, int]] = {}
        left = dict(decision.left)
        for c, (old, new) in sorted(decision.changes.items()):
            why = self.refusal({c: new})
            if why is None:
                keep[c] = (old, new)
            else:
                left[c] = f"{old}->{new} not made: it cannot be rescaled live ({why})"
        if len(keep) > 1 and self.refusal({c: new for c, (_, new) in keep.items()}) is not None:
            first = max(sorted(keep), key=lambda c: abs(keep[c][1] - keep[c][0]) / keep[c][0])
            for c in [c for c in keep if c != first]:
                old, new = keep.pop(c)
                left[c] = f"{old}->{new} waits for the next decision: it cannot move live with {first!r}"
        parts = [p for p in decision.reason.split("; ") if p.split(" ", 1)[0] in keep]
        reason = "; ".join(parts) if parts else "no change that can be made live"
        return replace(decision, changes=keep, left=left, reason=reason)

    def due(self, now: float) -> bool:
        """Whether ``observe`` would look at figures now (the caller may skip building an info)."""
        return not self.in_progress and (self._start is None or now - self._start[0] >= self.interval)

    def applied(self, now: float, decision: Decision, ok: bool, note: str = "",
                live: bool | None = None) -> None:
        """The cluster applied ``decision`` (or failed to: ``note`` says why); a new window starts.

        ``live``: whether the rescale ran live (the topology's ``rescale`` record), else
        ``note`` says why it restarted.
        """
        self.in_progress = False
        self._start = None
        for record in reversed(self.decisions):
            if record["changes"] == {c: list(v) for c, v in decision.changes.items()}:
                record["applied"] = ok
                if live is not None:
                    record["live"] = live
                if note:
                    record["note"] = note
                break

    def record(self) -> dict:
        """``get_topology_info(name)["autoscale"]``: the mode and the decisions, newest last.

        Only decisions that change something (or would, but cannot: ``left``) are kept;
        ``windows`` counts every window looked at; ``last_window`` is the last one's decision
        with the figures it used, also when it changed nothing (why a load did not scale).
        """
        return {"mode": self.mode, "windows": self.windows,
                "last_window": None if self.last_window is None else dict(self.last_window),
                "decisions": [dict(d) for d in self.decisions]}


def snapshot(info: Mapping[str, Any]) -> dict:
    """The counters a window needs from one info dict."""
    comps = {}
    for c, figures in (info.get("components") or {}).items():
        if _system(c):
            continue
        by_task = figures.get("by_task") or {}
        inputs: dict[str, float] = {}
        for row in (figures.get("streams") or {}).get("inputs") or []:
            if not _system(row.get("component", "")) and row.get("executed") is not None:
                inputs[row["component"]] = inputs.get(row["component"], 0.0) + float(row["executed"])
        comps[c] = {"executed": float(figures.get("executed") or 0),
                    "emitted": float(figures.get("emitted") or 0),
                    "useful": sum(float(t.get("capacity") or 0.0) for t in by_task.values()),
                    "tasks": len(figures.get("tasks") or by_task), "inputs": inputs}
    rounds = throttled = 0
    for w in info.get("workers") or []:
        transfer = w.get("transfer") or {}
        rounds += int(transfer.get("rounds") or 0)
        throttled += int(transfer.get("throttled_rounds") or 0)
    return {"components": comps, "rounds": rounds, "throttled": throttled}


def observed_between(first: dict, last: dict, secs: float, spouts: frozenset[str],
                     sources: Mapping[str, list[str]]) -> dict[str, Observed]:
    """Each component's ``Observed`` over the window between two snapshots."""
    rounds = last["rounds"] - first["rounds"]
    held = (last["throttled"] - first["throttled"]) / rounds if rounds > 0 else 0.0
    out: dict[str, Observed] = {}
    for c, now in last["components"].items():
        before = first["components"].get(c)
        if before is None or secs <= 0:
            continue
        emitted = max(0.0, now["emitted"] - before["emitted"]) / secs
        if c in spouts:
            out[c] = Observed(now["tasks"], processed=emitted, emitted=emitted, useful=now["useful"],
                              spout=True, backpressure=held)
            continue
        executed = max(0.0, now["executed"] - before["executed"]) / secs
        inputs = {u: max(0.0, n - before["inputs"].get(u, 0.0)) / secs for u, n in now["inputs"].items()}
        if not inputs and sources.get(c):
            ups = [u for u in sources[c] if not _system(u)]
            inputs = {u: executed / len(ups) for u in ups}
        out[c] = Observed(now["tasks"], processed=executed, emitted=emitted, useful=now["useful"],
                          inputs=inputs)
    return out


WINDOW_KEYS = ("topology.bolts.window.length.count", "topology.bolts.window.length.duration.ms",
               "squall.bolts.window.session.gap.ms")
# groupings whose routing is bound to task ids or one task: such a component keeps its parallelism
FIXED_GROUPINGS = {"direct": "direct grouping", "global": "global grouping",
                   "custom": "a custom grouping over task ids"}


def why_fixed(spec: Any) -> str | None:
    """Why the autoscaler leaves ``spec`` (a ``ComponentSpec``) as it is, or None."""
    for i in spec.inputs:
        reason = FIXED_GROUPINGS.get(i.grouping.kind)
        if reason is not None:
            return f"{spec.id} reads {i.component}/{i.stream} by {reason}"
    if any(k in spec.conf for k in WINDOW_KEYS):
        return f"{spec.id} is windowed: its window state cannot move"
    return None


def make_autoscaler(topology: Any, conf: Mapping[str, Any]) -> Autoscaler | None:
    """The controller of ``topology`` (a ``StormTopology``) under ``conf``; None when off."""
    if not is_on(conf):
        return None
    comps = {c: s for c, s in topology.components.items() if not _system(c)}
    spouts = [c for c, s in comps.items() if s.kind == "spout"]
    limits = {c: component_limits(conf, s.conf, why_fixed(s)) for c, s in comps.items()}
    sources = {c: [i.component for i in s.inputs] for c, s in comps.items()}
    return Autoscaler(conf, spouts, limits, sources)


def autoscale_step(scaler: Autoscaler, name: str, now: Callable[[], float],
                   info: Callable[[], Mapping[str, Any]],
                   rescale: Callable[[dict[str, int]], object]) -> dict | None:
    """One look of ``scaler`` at topology ``name``: its decision record if it made one.

    In ``apply`` mode a decision with changes is applied by ``rescale`` (the cluster's
    ``rebalance`` with the new parallelism) before this returns; a failure to apply is kept
    in the record with its one-line cause, and the old parallelism stays.
    """
    if not scaler.due(now()):  # an info costs a fold of every task: build one only when needed
        return None
    decision = scaler.observe(now(), info())
    if decision is None:
        return None
    if decision.changes and scaler.mode == "apply":
        scaler.in_progress = True
        try:
            rescale({c: new for c, (_, new) in decision.changes.items()})
        except Exception as e:  # noqa: BLE001 - the decision stays in the record, with why it failed
            scaler.applied(now(), decision, ok=False, note=f"{type(e).__name__}: {e}")
            log.error("autoscale of %r failed: %s: %s", name, type(e).__name__, e)
        else:
            moved = info().get("rescale") or {}
            live = moved.get("live")
            note = "" if live or not moved.get("reason") else f"applied by a restart: {moved['reason']}"
            scaler.applied(now(), decision, ok=True, note=note, live=live)
            log.info("autoscale of %r: %s", name, decision.reason)
    return scaler.decisions[-1] if scaler.decisions else None


class AutoscaleThread(threading.Thread):
    """Calls ``autoscale_step`` every ``period`` seconds of real time until ``stop``."""

    def __init__(self, scaler: Autoscaler, name: str, info: Callable[[], Mapping[str, Any]],
                 rescale: Callable[[dict[str, int]], object], period: float = 1.0) -> None:
        super().__init__(name=f"squall-autoscale-{name}", daemon=True)
        self.scaler, self.topology, self.get_info, self.rescale = scaler, name, info, rescale
        self.period = period
        self._stop_event = threading.Event()

    def run(self) -> None:
        """The loop; an error of one look is logged and the next look comes as usual."""
        while not self._stop_event.wait(self.period):
            try:
                autoscale_step(self.scaler, self.topology, time.monotonic, self.get_info, self.rescale)
            except Exception:  # noqa: BLE001 - a look that failed (a topology restarting) is retried
                log.exception("autoscale of %r: the figures could not be read", self.topology)

    def stop(self) -> None:
        """End the loop (returns at once)."""
        self._stop_event.set()
