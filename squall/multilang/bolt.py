"""``ShellBolt``: a bolt whose ``execute`` runs in a subprocess (Storm's multilang bolt)."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from random import getrandbits
from typing import Any

from squall.api.components import Bolt
from squall.api.context import TopologyContext
from squall.api.tuple import Tuple
from squall.multilang.errors import MultilangError
from squall.multilang.shell import ShellComponent

MAX_PENDING_KEY = "topology.shellbolt.max.pending"
DEFAULT_MAX_PENDING = 100
HEARTBEAT_STREAM = "__heartbeat"
SYSTEM_TASK_ID = -1  # what multilang libraries expect as the task of ticks and heartbeats


class ShellBolt(ShellComponent, Bolt):
    """A bolt run by ``command`` (a list, or a string split as a shell would) over multilang.

    ``resources`` is a directory packed with the topology and used as the subprocess's
    working directory; ``outputs`` maps stream names to their fields (or subclass and
    override ``declare_output_fields``); ``env`` adds environment variables.

    Every input tuple is written to the subprocess, which acks, fails and emits through
    the protocol. The bolt holds at most ``topology.shellbolt.max.pending`` tuples (Storm's
    default 100) not yet acked or failed, in the subprocess or waiting to be written to it
    in order (they wait only while it starts or restarts). ``execute`` never waits for the
    subprocess: while the bolt holds that many, its task takes no more input
    (``input_room``), which stays in the task's receive queue, so backpressure throttles
    the spouts as Storm's blocked ``execute`` does; what it holds counts for backpressure
    and for the load the load-aware shuffle reads (``held_input``). If it dies or stops
    answering heartbeats for ``topology.subprocess.timeout.secs``, the tuples it had are
    failed (so the spouts replay them) and a new subprocess takes over.
    """

    def __init__(self, command: str | Sequence[str], resources: str | None = None,
                 outputs: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
                 ) -> None:
        ShellComponent.__init__(self, command, resources=resources, outputs=outputs, env=env)

    def prepare(self, conf: dict, context: TopologyContext, collector: Any) -> None:
        """Launch the subprocess and complete the handshake."""
        self._collector = collector
        self._max_pending = int(conf.get(MAX_PENDING_KEY) or DEFAULT_MAX_PENDING)
        self._inputs: dict[str, Tuple] = {}  # id sent -> input, until acked or failed
        self._backlog: deque[Tuple] = deque()
        self._heartbeat: tuple[float, int, float] | None = None  # the question outstanding
        self._start_shell(conf, context, collector)

    def execute(self, tup: Tuple) -> None:
        """Queue ``tup`` for the subprocess and hand it over if there is room."""
        self._backlog.append(tup)
        self._drain()
        self._pump()

    def cleanup(self) -> None:
        """Kill the subprocess."""
        self._stop_shell()

    @property
    def pending(self) -> int:
        """Tuples in the subprocess, not yet acked or failed."""
        return len(self._inputs)

    def held_input(self) -> int:
        """Input taken from the task's queue and not yet acked or failed (written or not).

        Read by the runtime on the task's thread (backpressure, the load-aware shuffle).
        """
        return len(self._inputs) + len(self._backlog)

    def input_room(self) -> int:
        """How many more tuples the task may hand to ``execute`` now (0: leave them queued)."""
        return self._max_pending - len(self._inputs) - len(self._backlog)

    # ---- to the subprocess -----------------------------------------------------------

    def _pump(self) -> None:
        backlog, inputs = self._backlog, self._inputs
        while backlog and self._state == "running" and len(inputs) < self._max_pending:
            tup = backlog.popleft()
            tid = str(getrandbits(63))
            tick = tup.is_tick()
            message = {"id": tid, "comp": tup.component, "stream": tup.stream,
                       "task": SYSTEM_TASK_ID if tick else tup.task, "tuple": list(tup.values)}
            try:
                self._send(message)
            except TypeError as e:
                self._report(MultilangError(f"{self._name}: cannot send a tuple from "
                                            f"{tup.component!r} on {tup.stream!r}: {e}"))
                self._collector.fail(tup)
                continue
            inputs[tid] = tup

    def _send(self, message: Any) -> None:
        assert self._proc is not None
        self._proc.send(message)

    def _on_running(self) -> None:
        self._heartbeat = None
        self._pump()

    def _on_died(self) -> None:
        self._heartbeat = None
        inputs, self._inputs = self._inputs, {}
        for tup in inputs.values():
            self._collector.fail(tup)

    def _check_heartbeat(self, now: float) -> None:
        # one heartbeat outstanding at a time; anything heard since answers it (as Storm's)
        outstanding = self._heartbeat
        if outstanding is not None and self._heard == outstanding[1]:
            silent = self._silent_since(outstanding, now)
            if silent > self._timeout:
                self._die(f"answered no heartbeat and sent nothing for {silent:g} s "
                          f"(topology.subprocess.timeout.secs={self._timeout:g})")
            return  # still waiting for the answer
        self._heartbeat = self._mark()
        self._send({"id": str(getrandbits(63)), "comp": None, "stream": HEARTBEAT_STREAM,
                    "task": SYSTEM_TASK_ID, "tuple": []})

    # ---- from the subprocess ---------------------------------------------------------

    def _handle(self, message: Any) -> None:
        if not isinstance(message, dict) or not isinstance(message.get("command"), str):
            raise MultilangError(f"expected a command, got {message!r:.200}")
        command = message["command"]
        if command == "ack" or command == "fail":
            tup = self._inputs.pop(str(message.get("id")), None)
            if tup is None:
                raise MultilangError(f"{command}ed a non-existent or already acked/failed "
                                     f"id {message.get('id')!r}")
            if command == "ack":
                self._collector.ack(tup)
            else:
                self._collector.fail(tup)
            self._pump()
        elif command == "emit":
            self._emit(message)
        elif command == "sync":
            pass  # the answer to a heartbeat: hearing it was the point
        elif not self._handle_common(command, message):
            self._log.warning("%s: ignoring unknown command %r", self._name, command)

    def _emit(self, message: dict) -> None:
        anchors = message.get("anchors") or []
        if isinstance(anchors, str):
            anchors = [anchors]
        tuples = []
        for a in anchors:
            tup = self._inputs.get(str(a))
            if tup is None:
                raise MultilangError(f"anchored onto {a!r} after ack/fail")
            tuples.append(tup)
        values = message.get("tuple")
        stream = message.get("stream") or "default"
        task = message.get("task")
        if task:
            self._collector.emit_direct(int(task), values, anchors=tuples, stream=stream)
            return
        targets = self._collector.emit(values, anchors=tuples, stream=stream)
        if message.get("need_task_ids", True):
            self._send(targets)
