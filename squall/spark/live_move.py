"""A live rescale of stateless bolts on Spark, driven from the topology master.

The steps of ``squall.runtime.live`` run in the running worker processes, each by a
``rescale`` command on the coordination channel (``spark.worker_rescale`` runs it on the
worker's loop thread and answers ``rescaled``), in LocalCluster's order: every worker learns
the new plan, the workers given new tasks prepare them, the tasks feeding the rescaled
components switch routes (``pause_ms`` is the longest switch), the removed tasks retire.
New tasks go into the running workers; no worker process restarts.

A worker process lost during the move: the master's plan and code are the new ones from the
first step on (``begin``), so a worker relaunched from then on starts under the new plan,
but the other workers may be half-way through: the move ends in a restart of the topology
under the new plan (``WorkerLost``; the record says so), as on LocalCluster. A step failing
before the switch (a new task's ``prepare`` raising, ``StepError``) is undone: the new
tasks are cleaned up, every worker goes back to the old plan, and the old routing stays.

A keyed stateful component (``rescale_keyed``) moves its key groups riding one checkpoint
``T``, as on LocalCluster (``runtime.live_keyed``): the master holds the checkpoint spout by
command until nothing is in flight (COMMITTED ``T - 1``), the workers learn the plan, make
and open the new tasks, ``arm`` the component's tasks and the barriers downstream, then the
``$checkpoint`` routes feeding it, and the spout goes on. ``rebalance`` waits for the move:
it polls each worker's ``status`` until every task has done its part (the record says
``running`` meanwhile), then the moves come off, the removed tasks retire and the routes go
plain. ``T`` rolled back: the new tasks retire, the old plan and routing stay, the record
says ``failed`` (``StepError``). A worker lost, or no free barrier within ``SETTLE_SECS``,
or the move not over within ``MOVE_SECS``: a restart under the new plan, as for the rest.

An exactly-once spout (``rescale_spout``) hands over to new tasks riding one checkpoint
``T`` the same way (``runtime.live_spout``): hold and settle, ``learn`` (``spout_plan``:
every task of the spout replaced), ``add`` the new tasks, ``spout_arm`` every worker, release;
``rebalance`` waits until every old task committed ``T`` and closed and every new one took
its merged position (``spout_status``), then ``spout_finish`` retires the old tasks. ``T``
rolled back: the new tasks are removed, the old ones go on (``StepError``).

An at-least-once spout (``drain_spout``) drains instead, as on LocalCluster: ``learn`` and
``add`` (the new tasks stay inactive), ``spout_stop`` (the old tasks stop calling
``next_tuple``), then the master polls ``spout_drained`` until every old task on every worker
has no tree pending (or twice ``topology.message.timeout.secs`` passed) and closed, and only
then ``spout_start`` starts the new tasks. A step failing once the old tasks stopped, a worker
lost, or the drain not over in time: a restart under the new plan.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from squall.api.topology import StormTopology
from squall.runtime.checkpoint import CHECKPOINT_SPOUT
from squall.runtime.exactly_once import is_exactly_once
from squall.runtime.keygroups import default_table, moved, num_key_groups
from squall.runtime.live_plan import live_plan, upstream_components
from squall.runtime.live_spout import spout_plan
from squall.runtime.plan import TaskPlan
from squall.spark import coordination as co

STEP_TIMEOUT = 30.0
SETTLE_SECS = 10.0  # at least: the master waits this long (or 5 checkpoint intervals) for a free barrier
MOVE_SECS = 60.0  # at least: a keyed move not over by then (or 20 intervals) ends in a restart


class WorkerLost(Exception):
    """A worker's process changed, or did not answer, during a live rescale."""


class StepError(Exception):
    """A worker ran a step and it failed (the message is the worker's one-line error)."""


def live_record(changes: dict[str, tuple[int, int]]) -> dict:
    """A ``rescale`` record (API.md, Rescaling) for a live rescale that starts now."""
    return {"status": "running", "components": {c: [o, n] for c, (o, n) in changes.items()},
            "live": True, "moved_key_groups": 0, "moved_bytes": 0, "pause_ms": 0.0,
            "reason": None}


def spark_refusal(master: Any, topology: StormTopology, changes: dict[str, tuple[int, int]],
                  num_workers: int | None) -> str | None:
    """Why a change ``live_refusal`` allows still restarts on Spark, or None."""
    if num_workers not in (None, master.plan.num_workers):
        return (f"a change of worker count ({master.plan.num_workers} -> {num_workers}) restarts "
                f"the workers on Spark")
    keyed = [c for c in changes if topology.components[c].stateful]
    spouts = [c for c in changes if topology.components[c].kind == "spout"]
    checkpointed = keyed or (spouts and is_exactly_once(master.conf))
    if checkpointed and not getattr(master, "active", True):
        return "the topology is inactive: no checkpoint runs to carry the move"
    if master.worker_code:
        return "workers run two code versions (a gray upgrade): a rescale restarts them on the base"
    return None


def attempt_live(master: Any, topology: StormTopology, conf: dict, parallelism: dict[str, int],
                 changes: dict[str, tuple[int, int]], rebalancing: str = "REBALANCING") -> str | None:
    """Rescale ``master`` live; None when done, else why the caller restarts instead.

    A failed step that was undone raises ``StepError`` (the record says ``failed``, the old
    routing stays); anything else that stops the move half-way asks for the restart.
    """
    record = master.rescale = live_record(changes)
    was = master.status
    master.status = rebalancing
    keyed = [c for c in changes if topology.components[c].stateful]
    spouts = [c for c in changes if topology.components[c].kind == "spout"]
    try:
        if spouts and not is_exactly_once(conf):
            drain_spout(master, topology, conf, parallelism, changes, record, spouts[0])
        elif spouts:
            rescale_spout(master, topology, conf, parallelism, changes, record, spouts[0])
        elif keyed:
            rescale_keyed(master, topology, conf, parallelism, changes, record, keyed[0])
        else:
            rescale_live(master, topology, conf, parallelism, changes, record)
        return None
    except StepError as e:
        record.update(status="failed", reason=str(e))
        raise
    except WorkerLost as e:
        return f"{e}: the topology restarted under the new plan"
    except Exception as e:  # noqa: BLE001 - the workers may be half-way: a restart settles them
        return f"{type(e).__name__}: {e}: the topology restarted under the new plan"
    finally:
        master.status = was


def _by_worker(plan: TaskPlan, tasks: set[int]) -> dict[int, list[int]]:
    where = plan.task_worker()
    out: dict[int, list[int]] = {}
    for t in sorted(tasks):
        out.setdefault(where[t], []).append(t)
    return out


def rescale_live(master: Any, topology: StormTopology, conf: dict, parallelism: dict[str, int],
                 changes: dict[str, tuple[int, int]], record: dict) -> None:
    """Apply ``changes`` to ``master``'s running workers; fills ``record``.

    Raises ``WorkerLost`` (the caller restarts the topology under the new plan) or
    ``StepError`` (undone: the old routing stays).
    """
    old: TaskPlan = master.plan
    saved = (master.plan, master.topology, master.conf, master.base)
    new = live_plan(old, changes)
    old_tasks, new_tasks = set(old.task_component), set(new.task_component)
    added, removed = _by_worker(new, new_tasks - old_tasks), _by_worker(old, old_tasks - new_tasks)
    feeding = {t for c in changes for u in upstream_components(topology, c)
               for t in new.component_tasks[u]}
    feeding |= {t for c in changes for t in old.component_tasks[c] if t in new_tasks
                and c in upstream_components(topology, c)}  # a component feeding itself
    incs = master.calls.call(lambda: _begin(master, new, topology, conf))
    everyone = range(new.num_workers)
    learn = {"parallelism": dict(parallelism), "changes": {c: [o, n] for c, (o, n) in changes.items()},
             "tasks": [[t, c] for t, c in sorted(new.task_component.items())]}
    try:
        _step(master, incs, "learn", dict.fromkeys(everyone, learn))
        _step(master, incs, "add", {w: {"ids": ids} for w, ids in added.items()})
    except StepError:
        _step(master, incs, "unadd", {w: {"ids": ids} for w, ids in added.items()})
        _step(master, incs, "unlearn", dict.fromkeys(everyone, {}))
        master.calls.call(lambda: _end(master, incs, saved))
        raise
    pauses = _step(master, incs, "switch", {w: {"ids": ids} for w, ids in _by_worker(new, feeding).items()})
    _step(master, incs, "retire", {w: {"ids": ids} for w, ids in removed.items()})
    master.calls.call(lambda: _end(master, incs, None, added))
    record["pause_ms"] = round(max(pauses.values(), default=0.0) * 1000.0, 3)
    record["status"] = "done"


def _begin(master: Any, new: TaskPlan, topology: StormTopology, conf: dict) -> dict[int, bytes]:
    """On the loop: every worker's current process, and the new plan and code from now on."""
    for slot in master.registry.slots:
        if slot.current is None or not slot.current.started or slot.relaunch_at is not None:
            raise WorkerLost(f"worker {slot.index} was not running")
    master.plan, master.topology, master.conf = new, topology, conf
    master.base = replace(master.base, topology=topology, conf=conf)
    return {s.index: s.current.identity for s in master.registry.slots}


def _end(master: Any, incs: dict[int, bytes], saved: tuple | None,
         added: dict[int, list[int]] | None = None) -> None:
    """On the loop: the move is over (``saved``: undone, the old plan and code back)."""
    _check(master, incs)
    if saved is not None:
        master.plan, master.topology, master.conf, master.base = saved
        return
    for index, ids in (added or {}).items():
        inc = master.registry.slots[index].current
        master.liveness.started(index, inc.pid, {t: master.plan.task_component[t] for t in ids})


def _check(master: Any, incs: dict[int, bytes], indices: Any = None) -> None:
    for index in incs if indices is None else indices:
        cur = master.registry.slots[index].current
        if cur is None or cur.identity != incs[index]:
            raise WorkerLost(f"worker {index}'s process stopped during the move")


def _step(master: Any, incs: dict[int, bytes], step: str, fields: dict[int, dict],
          timeout: float = STEP_TIMEOUT) -> dict[int, Any]:
    """Run ``step`` on the workers ``fields`` names (each with its fields); their values."""
    if not fields:
        return {}

    def send() -> dict[int, int]:
        _check(master, incs, fields)
        seqs = {}
        for index, f in sorted(fields.items()):
            master.rescale_seq += 1
            seqs[master.rescale_seq] = index
            master.links.send(incs[index], co.RESCALE, seq=master.rescale_seq, step=step, **f)
        return seqs

    def collect() -> dict[int, dict]:
        got = {s: master.rescale_replies.pop(s)[1] for s in list(waiting) if s in master.rescale_replies}
        if len(got) < len(waiting):
            _check(master, incs, fields)
        return got

    waiting = master.calls.call(send)
    answers: dict[int, dict] = {}
    deadline = time.monotonic() + timeout
    while waiting:
        for seq, msg in master.calls.call(collect).items():
            answers[waiting.pop(seq)] = msg
        if waiting and time.monotonic() >= deadline:
            raise WorkerLost(f"worker {min(waiting.values())} did not {step} within {timeout:.0f}s")
        if waiting:
            time.sleep(0.002)
    errors = [f"{m['error']}" for _, m in sorted(answers.items()) if m.get("error")]
    if errors:
        raise StepError(errors[0])
    return {i: m.get("value") for i, m in answers.items()}


def _interval(conf: dict) -> float:
    return float(conf.get("topology.state.checkpoint.interval.ms") or 1000) / 1000.0


def rescale_keyed(master: Any, topology: StormTopology, conf: dict, parallelism: dict[str, int],
                  changes: dict[str, tuple[int, int]], record: dict, comp: str) -> None:
    """Move ``comp``'s key groups to its new tasks riding one checkpoint; fills ``record``.

    Returns once the move is over (see the module). Raises ``StepError`` (undone, or ``T``
    rolled back: the old routing stays) or anything else (the caller restarts under the new
    plan).
    """
    old: TaskPlan = master.plan
    saved = (master.plan, master.topology, master.conf, master.base)
    new = live_plan(old, changes)
    old_tasks, new_tasks = old.component_tasks[comp], new.component_tasks[comp]
    k = num_key_groups(conf)
    record["moved_key_groups"] = len(moved(default_table(len(old_tasks), k),
                                           default_table(len(new_tasks), k)))
    added = _by_worker(new, set(new_tasks) - set(old_tasks))
    removed = _by_worker(old, set(old_tasks) - set(new_tasks))
    spout_worker = old.task_worker()[old.component_tasks[CHECKPOINT_SPOUT][0]]
    interval = _interval(conf)
    incs = master.calls.call(lambda: _begin(master, new, topology, conf))
    everyone = range(new.num_workers)
    learn = {"parallelism": dict(parallelism), "changes": {c: [o, n] for c, (o, n) in changes.items()},
             "tasks": [[t, c] for t, c in sorted(new.task_component.items())]}

    def prepare(txid: int) -> None:
        _step(master, incs, "learn", dict.fromkeys(everyone, learn))
        _step(master, incs, "check", {w: {"component": comp} for w in _by_worker(old, set(old_tasks))})
        _step(master, incs, "add", {w: {"ids": ids, "keyed": True} for w, ids in added.items()})

    def arm(txid: int) -> None:
        step = {"component": comp, "txid": txid}
        _step(master, incs, "arm", dict.fromkeys(everyone, step))
        _step(master, incs, "switches", dict.fromkeys(everyone, step))

    _ride_checkpoint(master, incs, spout_worker, interval, saved, added, prepare, arm)
    # every task of the component, old or new, carries a move where it runs
    carrying = _counts(_by_worker(old, set(old_tasks) - set(new_tasks)), _by_worker(new, set(new_tasks)))
    states, failed = _await_move(master, incs, max(MOVE_SECS, 20 * interval), "status", carrying)
    if failed is not None:
        _step(master, incs, "finish", {w: {"failed": failed, "ids": added.get(w, [])} for w in everyone})
        master.calls.call(lambda: _end(master, incs, saved))
        record["moved_key_groups"] = 0
        raise StepError(f"{failed}: the old routing stays")
    _step(master, incs, "finish", {w: {"failed": None, "ids": removed.get(w, [])} for w in everyone})
    master.calls.call(lambda: _end(master, incs, None, added))
    record.update(status="done", pause_ms=max((float(p) for *_, p, _ in states), default=0.0),
                  moved_bytes=sum(int(b) for *_, b in states))


def rescale_spout(master: Any, topology: StormTopology, conf: dict, parallelism: dict[str, int],
                  changes: dict[str, tuple[int, int]], record: dict, comp: str) -> None:
    """Hand the exactly-once spout ``comp`` over to new tasks riding one checkpoint; fills ``record``.

    As ``rescale_keyed``, with ``runtime.live_spout``'s hooks: every task of the spout is
    replaced, the old ones close once ``COMMIT(T)`` committed their positions, the new ones
    take the merged position at the next barrier. Returns once the move is over.
    """
    old: TaskPlan = master.plan
    saved = (master.plan, master.topology, master.conf, master.base)
    new = spout_plan(old, comp, changes[comp][1])
    added = _by_worker(new, set(new.component_tasks[comp]))
    spout_worker = old.task_worker()[old.component_tasks[CHECKPOINT_SPOUT][0]]
    interval = _interval(conf)
    incs = master.calls.call(lambda: _begin(master, new, topology, conf))
    everyone = range(new.num_workers)
    learn = {"parallelism": dict(parallelism), "changes": {c: [o, n] for c, (o, n) in changes.items()},
             "tasks": [[t, c] for t, c in sorted(new.task_component.items())], "spout": comp}

    def prepare(txid: int) -> None:
        _step(master, incs, "learn", dict.fromkeys(everyone, learn))
        _step(master, incs, "add", {w: {"ids": ids, "spout": True} for w, ids in added.items()})

    def arm(txid: int) -> None:
        _step(master, incs, "spout_arm", dict.fromkeys(everyone, {"component": comp, "txid": txid}))

    _ride_checkpoint(master, incs, spout_worker, interval, saved, added, prepare, arm)
    # every old task hands over, every new one takes over, each where it runs
    carrying = _counts(_by_worker(old, set(old.component_tasks[comp])), added)
    states, failed = _await_move(master, incs, max(MOVE_SECS, 20 * interval), "spout_status", carrying)
    if failed is not None:
        _step(master, incs, "spout_finish",
              {w: {"failed": failed, "ids": added.get(w, [])} for w in everyone})
        master.calls.call(lambda: _end(master, incs, saved))
        raise StepError(f"{failed}: the old spout tasks go on")
    _step(master, incs, "spout_finish", {w: {"failed": None, "ids": []} for w in everyone})
    master.calls.call(lambda: _end(master, incs, None, added))
    stops = [float(at) for _, _, kind, at in states if kind == "stop" and at is not None]
    starts = [float(at) for _, _, kind, at in states if kind == "start" and at is not None]
    pause = (max(starts) - min(stops)) * 1000.0 if stops and starts else 0.0
    record.update(status="done", pause_ms=round(max(pause, 0.0), 3))


def _ride_checkpoint(master: Any, incs: dict[int, bytes], spout_worker: int, interval: float,
                     saved: tuple, added: dict[int, list[int]], prepare: Callable[[int], None],
                     arm: Callable[[int], None]) -> None:
    """Hold the checkpoint spout, settle on the move's txid, ``prepare`` and ``arm`` the move at it, release.

    A step failing before ``arm`` is undone (the new tasks removed, the old plan back); one
    failing in ``arm`` leaves tasks that may carry the move, so it becomes a ``RuntimeError``
    (the caller restarts under the new plan). The checkpoint spout is released in every case.
    """
    everyone = range(len(incs))
    held = False
    armed = False
    try:
        _step(master, incs, "hold", {spout_worker: {}})
        held = True
        txid = _settle(master, incs, spout_worker, max(SETTLE_SECS, 5 * interval))
        prepare(txid)
        armed = True
        try:
            arm(txid)
        except StepError as e:  # some tasks may carry the move: a restart settles them
            raise RuntimeError(str(e)) from None
        _step(master, incs, "release", {spout_worker: {}})
        held = False
    except StepError:
        if not armed:  # nothing routes by the new plan yet: undo
            _step(master, incs, "unadd", {w: {"ids": ids} for w, ids in added.items()})
            _step(master, incs, "unlearn", dict.fromkeys(everyone, {}))
            master.calls.call(lambda: _end(master, incs, saved))
        raise
    finally:
        if held:
            try:
                _step(master, incs, "release", {spout_worker: {}})
            except Exception:  # noqa: BLE001 - what stopped the move is the error to report
                pass


def drain_spout(master: Any, topology: StormTopology, conf: dict, parallelism: dict[str, int],
                changes: dict[str, tuple[int, int]], record: dict, comp: str) -> None:
    """Replace the at-least-once spout ``comp``'s tasks: the old ones drain, then the new start.

    Returns once the move is over (see the module). Raises ``StepError`` (undone before any
    old task stopped: the old routing stays) or anything else (the caller restarts under the
    new plan).
    """
    old: TaskPlan = master.plan
    saved = (master.plan, master.topology, master.conf, master.base)
    new = spout_plan(old, comp, changes[comp][1])
    added = _by_worker(new, set(new.component_tasks[comp]))
    timeout = 2 * float(conf.get("topology.message.timeout.secs") or 30)
    incs = master.calls.call(lambda: _begin(master, new, topology, conf))
    everyone = range(new.num_workers)
    learn = {"parallelism": dict(parallelism), "changes": {c: [o, n] for c, (o, n) in changes.items()},
             "tasks": [[t, c] for t, c in sorted(new.task_component.items())], "spout": comp}
    try:
        _step(master, incs, "learn", dict.fromkeys(everyone, learn))
        add = {w: {"ids": ids, "spout": True, "drain": True} for w, ids in added.items()}
        _step(master, incs, "add", add)
    except StepError:
        _step(master, incs, "unadd", {w: {"ids": ids} for w, ids in added.items()})
        _step(master, incs, "unlearn", dict.fromkeys(everyone, {}))
        master.calls.call(lambda: _end(master, incs, saved))
        raise
    try:  # from here some tasks stopped: a failure is settled by a restart
        stops = _step(master, incs, "spout_stop", dict.fromkeys(everyone, {"component": comp}))
        # the workers close a task at their own deadline; this one only bounds a drain stuck
        deadline = time.monotonic() + max(MOVE_SECS, timeout + STEP_TIMEOUT)
        while any(_step(master, incs, "spout_drained", dict.fromkeys(everyone, {})).values()):
            if time.monotonic() >= deadline:
                raise RuntimeError(f"the old spout tasks did not drain within {timeout:.0f}s")
            time.sleep(0.02)
        starts = _step(master, incs, "spout_start", {w: {} for w in added})
        _step(master, incs, "spout_finish", {w: {"failed": None, "ids": []} for w in everyone})
    except StepError as e:
        raise RuntimeError(str(e)) from None
    master.calls.call(lambda: _end(master, incs, None, added))
    began = min((float(at) for at in stops.values() if at is not None), default=None)
    ended = max((float(at) for at in starts.values() if at is not None), default=None)
    pause = (ended - began) * 1000.0 if began is not None and ended is not None else 0.0
    record.update(status="done", pause_ms=round(max(pause, 0.0), 3))


def _settle(master: Any, incs: dict[int, bytes], spout_worker: int, timeout: float) -> int:
    """The txid of the move: one past the last commit, once no checkpoint is in flight."""
    deadline = time.monotonic() + timeout
    while True:
        idle, txid = _step(master, incs, "idle", {spout_worker: {}})[spout_worker]
        if idle:
            return int(txid) + 1
        if time.monotonic() >= deadline:
            raise RuntimeError(f"a checkpoint was in flight or recovering for {timeout:.0f}s, so no "
                               f"barrier was free to carry the move")
        time.sleep(0.005)


def _counts(*by_worker: dict[int, list[int]]) -> dict[int, int]:
    """Worker -> how many tasks the ``_by_worker`` maps put there, together."""
    out: dict[int, int] = {}
    for tasks in by_worker:
        for w, ids in tasks.items():
            out[w] = out.get(w, 0) + len(ids)
    return out


def _await_move(master: Any, incs: dict[int, bytes], timeout: float, step: str,
                carrying: dict[int, int]) -> tuple[list, str | None]:
    """Poll the workers' moves until each task's part is over or one saw ``T`` roll back.

    ``carrying``: how many task moves each worker must report. A worker reporting fewer
    never armed them (or lost them): the move cannot be over, and a ``RuntimeError`` has the
    caller restart under the new plan rather than take the old tasks' state for moved.
    """
    deadline = time.monotonic() + timeout
    everyone: dict[int, dict] = {i: {} for i in incs}
    while True:
        replies = _step(master, incs, step, everyone)
        short = {w: (len(replies.get(w) or []), n) for w, n in carrying.items()
                 if len(replies.get(w) or []) < n}
        if short:
            w, (got, n) = min(short.items())
            raise RuntimeError(f"worker {w} carries {got} of its {n} task moves: the move was not "
                               f"armed there")
        states = [s for v in replies.values() for s in v or []]
        failed = next((s[1] for s in states if s[1]), None)
        if failed is not None or all(done for done, *_ in states):
            return states, failed
        if time.monotonic() >= deadline:
            raise RuntimeError(f"the move was not over within {timeout:.0f}s")
        time.sleep(0.02)
