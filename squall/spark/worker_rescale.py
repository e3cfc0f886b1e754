"""A worker's end of a live rescale on Spark: the master's ``rescale`` steps, on the loop thread.

Each ``rescale`` message names a step of ``squall.runtime.live``; ``start_step`` hands it to
the worker's loop thread and returns at once (the coordination thread keeps heartbeating),
and the answer (``rescaled``: the step's value or its error in one line) is sent once the
loop ran it. The new plan is not shipped: the worker derives it from its own plan and the
``changes`` (``live_plan`` is deterministic) and checks it against the master's task map, so
nothing is unpickled from the channel.

A keyed stateful component's move (``runtime.live_keyed``) adds steps: ``hold`` / ``idle`` /
``release`` the checkpoint spout (on its worker), ``check`` that the component's tasks here
have their keyed state open, ``add`` with ``keyed`` (the new tasks' state opened with no key
group), ``arm`` and ``switches`` {component, txid} (each worker derives what its tasks give
and take from the plan it had before ``learn`` and the one ``learn`` derived), ``status``
(each task's part: done, failed, pause, bytes) and ``finish`` {failed, ids} (the moves come
off, ``ids`` retire, the routes go plain under the new plan, or the old one if ``failed``).

An exactly-once spout's move (``runtime.live_spout``) uses ``hold`` / ``idle`` / ``release``
too; ``learn`` with ``spout`` derives ``spout_plan`` (every task of the spout replaced) and
keeps the old tasks' view, ``add`` with ``spout`` activates the new tasks (each emits once it
took its merged position), ``spout_arm`` {component, txid} hooks the old and new tasks, the
barriers downstream and the checkpoint spout's route, ``spout_status`` gives each hooked
task's (done, failed, stop or start, wall time) and ``spout_finish`` {failed, ids} takes the
hooks off: the old tasks retire, or (``failed``) the new ``ids`` are removed and the old plan
comes back.

An at-least-once spout's move (no checkpoint carries it) uses ``learn`` and ``add`` with
``drain`` (the new tasks stay inactive), then ``spout_stop`` {component} (the old tasks here
stop emitting), ``spout_drained`` (polled by the master: the drained old tasks here close and
retire; how many are left), ``spout_start`` once none is left on any worker (the new tasks
here start) and ``spout_finish``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from squall.runtime import live, live_keyed, live_spout
from squall.runtime.live_plan import live_plan
from squall.runtime.live_spout import spout_plan
from squall.runtime.submission import with_parallelism

Step = Callable[[Any, dict], Any]


def _learn(worker: Any, msg: dict) -> int:
    topology = with_parallelism(worker.topology, msg["parallelism"])
    changes = {c: (o, n) for c, (o, n) in msg["changes"].items()}
    spout = msg.get("spout")
    plan = (spout_plan(worker.plan, str(spout), changes[str(spout)][1]) if spout
            else live_plan(worker.plan, changes))
    mine = [[t, c] for t, c in sorted(plan.task_component.items())]
    if mine != msg["tasks"]:
        raise RuntimeError("the plan derived here differs from the master's (a worker on an older plan)")
    worker.live_undo = (worker.topology, worker.plan)
    worker.topology = topology
    live.reindex(worker, plan)
    if spout:  # a retiring spout task keeps its view: its index and task count
        live_spout.pin_views(worker, str(spout), worker.live_undo[1])
    return len(plan.task_component)


def _unlearn(worker: Any, msg: dict) -> None:
    undo = getattr(worker, "live_undo", None)
    if undo is not None:
        worker.topology = undo[0]
        live.reindex(worker, undo[1])
        worker.live_undo = None


def _add(worker: Any, msg: dict) -> int:
    ids = list(msg["ids"])
    made: list[Any] = live.add_tasks(worker, ids)
    if msg.get("spout") and not msg.get("drain") and worker.active:  # emits once it took its position
        for task in made:
            task.activate()
    if msg.get("keyed"):
        try:
            live_keyed.open_new(worker, ids)
        except BaseException:
            live.remove_new_tasks(worker, ids)
            raise
    return len(made)


def _unadd(worker: Any, msg: dict) -> None:
    live.remove_new_tasks(worker, list(msg["ids"]))


def _switch(worker: Any, msg: dict) -> float:
    return live.switch_routes(worker, list(msg["ids"]))


def _retire(worker: Any, msg: dict) -> int:
    worker.live_undo = None
    return live.retire_tasks(worker, list(msg["ids"]))


def _hold(worker: Any, msg: dict) -> None:
    live_keyed.hold_checkpoints(worker)


def _idle(worker: Any, msg: dict) -> list:
    return list(live_keyed.checkpoints_idle(worker))


def _release(worker: Any, msg: dict) -> None:
    live_keyed.release_checkpoints(worker)


def _plans(worker: Any) -> tuple[Any, Any]:
    undo = getattr(worker, "live_undo", None)
    if undo is None:
        raise RuntimeError("a move step came before this worker learned the plan")
    return undo[1], worker.plan


def _check(worker: Any, msg: dict) -> None:
    old, _ = _plans(worker)
    live_keyed.check_keyed(worker, [t for t in old.component_tasks[str(msg["component"])]
                                    if t in worker.tasks])


def _arm(worker: Any, msg: dict) -> int:
    old, new = _plans(worker)
    part = live_keyed.arm(worker, str(msg["component"]), old, new, worker.topology, int(msg["txid"]))
    return len(part.moves)


def _switches(worker: Any, msg: dict) -> int:
    old, new = _plans(worker)
    return len(live_keyed.arm_switches(worker, old, new, worker.topology, int(msg["txid"])))


def _status(worker: Any, msg: dict) -> list:
    return [list(s) for s in live_keyed.statuses(worker)]


def _finish(worker: Any, msg: dict) -> None:
    failed = msg.get("failed")
    live_keyed.end(worker, failed)
    ids = [t for t in msg.get("ids") or [] if t in worker.tasks]
    if ids:
        live.retire_tasks(worker, ids, failed is None)
    undo = getattr(worker, "live_undo", None)
    topology, plan = undo if failed is not None and undo is not None else (worker.topology, worker.plan)
    live_keyed.reroute(worker, plan, topology)
    worker.live_undo = None


def _spout_arm(worker: Any, msg: dict) -> int:
    old, new = _plans(worker)
    part = live_spout.arm_spout(worker, str(msg["component"]), old, new, worker.topology, int(msg["txid"]))
    return len(part.handovers) + len(part.takeovers)


def _spout_status(worker: Any, msg: dict) -> list:
    return [list(s) for s in live_spout.spout_statuses(worker)]


def _spout_finish(worker: Any, msg: dict) -> None:
    failed = msg.get("failed")
    undo = getattr(worker, "live_undo", None)
    topology, plan = undo if failed is not None and undo is not None else (worker.topology, worker.plan)
    live_spout.end_spout(worker, failed, list(msg.get("ids") or []), plan, topology)
    worker.live_undo = None


def _spout_stop(worker: Any, msg: dict) -> float:
    old, new = _plans(worker)
    return live_spout.stop_spout(worker, str(msg["component"]), old, new)


def _spout_drained(worker: Any, msg: dict) -> int:
    return live_spout.drain_step(worker)


def _spout_start(worker: Any, msg: dict) -> float | None:
    return live_spout.start_spout(worker)


STEPS: dict[str, Step] = {"learn": _learn, "unlearn": _unlearn, "add": _add, "unadd": _unadd,
                          "switch": _switch, "retire": _retire, "hold": _hold, "idle": _idle,
                          "release": _release, "check": _check, "arm": _arm,
                          "switches": _switches, "status": _status, "finish": _finish,
                          "spout_arm": _spout_arm, "spout_status": _spout_status,
                          "spout_finish": _spout_finish, "spout_stop": _spout_stop,
                          "spout_drained": _spout_drained, "spout_start": _spout_start}


def start_step(worker: Any, msg: dict) -> tuple[threading.Event, dict]:
    """Queue ``msg``'s step on ``worker``'s loop; (set once it ran, {"value"} or {"error"})."""
    box: dict[str, Any] = {}
    step = STEPS.get(str(msg.get("step")))

    def run() -> None:
        try:
            if step is None:
                raise ValueError(f"unknown rescale step {msg.get('step')!r}")
            box["value"] = step(worker, msg)
        except BaseException as e:  # noqa: BLE001 - answered to the master
            box["error"] = f"{type(e).__name__}: {e}"
    return worker.call(run), box


def answer(box: dict) -> dict:
    """The ``rescaled`` message's fields for a step that ran (or never ran: the loop ended)."""
    if not box:
        return {"error": "the worker's loop ended before the step ran", "value": None}
    return {"error": box.get("error"), "value": box.get("value")}
