"""What ``ShellBolt`` and ``ShellSpout`` share: the subprocess's life on the task's thread.

Threading: the reader thread of the subprocess appends each message to ``_inbox`` and
asks the worker (``context.call_soon``) to run ``_drain`` on the task's thread; a ticker
thread does the same with ``_heartbeat_round`` once a second. Under simulated time the
thread that advances the clock queues the rounds instead, so simulated time drives
heartbeats in tests. Everything else runs on the task's thread,
which never waits for the subprocess.

Failure: a subprocess that exits, breaks the protocol, or stays silent for longer than
``topology.subprocess.timeout.secs`` while it owes an answer is killed, reported as an
error of the component with the tail of its stderr, and started again (at once the first
time, then after 1, 2, 4 ... 30 s while it keeps dying young). Subclasses fail what it
had in flight, so the spouts replay it.
"""

from __future__ import annotations

import logging
import shlex
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from squall.api.components import OutputFieldsDeclarer
from squall.api.context import TopologyContext
from squall.api.fields import Fields
from squall.multilang.errors import MultilangError, SubprocessDiedError
from squall.multilang.process import EOF_MESSAGE, ShellProcess
from squall.multilang.resources import pack, unpack
from squall.multilang.serializer import make_codec
from squall.multilang.setup import setup_info
from squall.runtime import clock

TIMEOUT_KEY = "topology.subprocess.timeout.secs"
DEFAULT_TIMEOUT_SECS = 30.0
HEARTBEAT_PERIOD_SECS = 1.0
MAX_BACKOFF_SECS = 30.0
# A subprocess lives in real time: under simulated time, which may jump faster than it can
# answer, a question counts as unanswered only once this many real seconds passed too.
ANSWER_GRACE_REAL_SECS = 1.0
# Storm's log levels in "log" messages (trace, debug, info, warn, error)
_LOG_LEVELS = {0: logging.DEBUG, 1: logging.DEBUG, 2: logging.INFO, 3: logging.WARNING,
               4: logging.ERROR}


def _command(command: str | Sequence[str]) -> list[str]:
    if isinstance(command, str):
        command = shlex.split(command)
    out = [str(c) for c in command]
    if not out:
        raise ValueError("a multilang component needs a command, for example "
                         "['python3', 'splitsentence.py']")
    return out


def _outputs(outputs: Mapping[str, Any] | None) -> dict[str, Fields]:
    out: dict[str, Fields] = {}
    for stream, fields in (outputs or {}).items():
        out[str(stream)] = fields if isinstance(fields, Fields) else Fields(fields)
    return out


class ShellComponent:
    """The subprocess side of a shell spout or bolt (see the module's docstring)."""

    def __init__(self, command: str | Sequence[str], resources: str | None = None,
                 outputs: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
                 ) -> None:
        self.command = _command(command)
        self.resources = resources
        self.outputs = _outputs(outputs)
        self.env = {str(k): str(v) for k, v in (env or {}).items()}
        # packed now, on the client, so the directory travels with the topology
        self._resources_blob = pack(resources) if resources is not None else None

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """Declare the streams given as ``outputs``."""
        for stream, fields in self.outputs.items():
            declarer.declare(fields, stream=stream)

    # ---- start and stop (task thread) ------------------------------------------------

    def _start_shell(self, conf: dict, context: TopologyContext, collector: Any) -> None:
        """Launch the subprocess and wait for its handshake (open/prepare may block)."""
        self._conf = conf
        self._context = context
        self._report = collector.report_error
        self._timeout = float(conf.get(TIMEOUT_KEY) or DEFAULT_TIMEOUT_SECS)
        make_codec(conf)  # a bad serializer name fails prepare, with the key named
        self._name = f"{context.component_id}[{context.task_id}]"
        self._log = logging.getLogger(f"squall.multilang.{context.component_id}")
        self._cwd = unpack(self._resources_blob) if self._resources_blob is not None else None
        self._inbox: deque[tuple[int, Any]] = deque()
        self._inbox_lock = threading.Lock()
        self._drain_scheduled = False
        self._heartbeat_scheduled = False
        self._gen = 0
        self._proc: ShellProcess | None = None
        self._state = "down"  # down -> starting -> running -> down ...
        self._started_at = 0.0
        self._heard = 0  # messages received so far, from any of its subprocesses
        self._restart_at = 0.0
        self._backoff = 0.0
        self._death: str | None = None
        self._sim: clock.SimulatedClock | None = None
        self._stopping = threading.Event()
        self.restarts = 0
        self.shell_metrics: dict[str, Any] = {}
        self._preparing = True
        self._launch()
        self._await_handshake()
        self._preparing = False
        self._sim = clock.simulated()
        if self._sim is not None:
            # simulated time: heartbeat rounds are queued by the thread that advances the
            # clock, before ``advance`` returns, so a test that then waits for the workers'
            # next round sees them
            self._next_beat = self._sim.monotonic() + HEARTBEAT_PERIOD_SECS
            self._sim.add_listener(self._on_advance)
        else:
            threading.Thread(target=self._tick, name=f"{self._name}-heartbeat", daemon=True).start()

    def _stop_shell(self) -> None:
        stopping = getattr(self, "_stopping", None)
        if stopping is None:
            return
        stopping.set()
        if self._sim is not None:
            self._sim.remove_listener(self._on_advance)
        if self._proc is not None:
            self._proc.kill()
            self._proc = None
        self._state = "down"

    def _launch(self) -> None:
        self._gen += 1
        gen = self._gen
        now = clock.monotonic()
        try:
            proc = ShellProcess(self.command, cwd=self._cwd, env=self.env, codec=make_codec(self._conf),
                                on_message=lambda m: self._enqueue(gen, m), name=self._name)
            proc.send(setup_info(self._conf, self._context, proc.pid_dir))
        except (OSError, TypeError) as e:
            self._state = "down"
            self._schedule_restart(now)
            raise MultilangError(f"{self._name}: {e}") from e
        self._proc = proc
        self._state = "starting"
        self._started_at = now
        self._launch_mark = self._heard

    def _await_handshake(self) -> None:
        # Storm's prepare reads the pid before returning, so a broken command fails the
        # start. Bounded on the real clock: simulated time may stand still meanwhile.
        deadline = time.monotonic() + self._timeout
        while self._state == "starting" and time.monotonic() < deadline:
            self._drain()
            if self._state == "starting":
                time.sleep(0.005)
        if self._state != "running":
            proc, self._proc = self._proc, None
            reason = self._death or f"sent no pid within {self._timeout:g} s"
            if proc is not None:
                proc.kill()
                reason = self._describe(proc, reason, then="killed")
            self._stopping.set()
            raise SubprocessDiedError(reason)

    # ---- messages (reader thread -> task thread) -------------------------------------

    def _enqueue(self, gen: int, message: Any) -> None:
        """Reader thread: queue ``message`` and have the task drain the queue."""
        with self._inbox_lock:
            self._heard += 1
            self._inbox.append((gen, message))
            if self._drain_scheduled:
                return
            self._drain_scheduled = True
        try:
            self._context.call_soon(self._drain)
        except RuntimeError:
            pass  # outside a worker (open/prepare waits by polling)

    def _drain(self) -> None:
        """Task thread: handle everything the subprocess wrote so far."""
        with self._inbox_lock:
            self._drain_scheduled = False
        inbox = self._inbox
        while inbox:
            gen, message = inbox.popleft()
            if gen != self._gen or self._proc is None:
                continue  # from a subprocess that was killed since
            if message is EOF_MESSAGE:
                self._proc.wait_exit(1.0)
                self._die("exited")
                continue
            if isinstance(message, Exception):
                self._die(f"broke the protocol: {message}")
                continue
            try:
                if self._state == "starting":
                    self._handshake(message)
                else:
                    self._handle(message)
            except (MultilangError, ValueError, TypeError, KeyError) as e:
                self._die(f"broke the protocol: {type(e).__name__}: {e}")

    def _handshake(self, message: Any) -> None:
        if not isinstance(message, dict) or "pid" not in message:
            raise MultilangError(f"expected {{'pid': ...}} first, got {message!r:.200}")
        assert self._proc is not None
        self._proc.protocol_pid = int(message["pid"])
        self._state = "running"
        self._log.info("%s: subprocess %s running with pid %s", self._name, self.command,
                       message["pid"])
        self._on_running()

    def _handle_common(self, command: str, message: dict) -> bool:
        """``log``, ``error`` and ``metrics``, the same for spouts and bolts; True if handled."""
        if command == "log":
            level = message.get("level", 2)
            self._log.log(_LOG_LEVELS.get(level, logging.INFO) if isinstance(level, int)
                          else logging.INFO, "%s: %s", self._name, message.get("msg"))
            return True
        if command == "error":
            self._report(MultilangError(f"Shell Process Exception: {message.get('msg')}"))
            return True
        if command == "metrics":
            name = message.get("name")
            if not isinstance(name, str) or not name:
                raise MultilangError("metrics message without a name")
            self.shell_metrics[name] = message.get("params")
            return True
        return False

    # ---- heartbeats and deaths (task thread) -----------------------------------------

    def _tick(self) -> None:
        """Ticker thread (real time): a heartbeat round once a second."""
        while not self._stopping.wait(HEARTBEAT_PERIOD_SECS):
            self._schedule_heartbeat()

    def _on_advance(self) -> None:
        """Simulated time moved (on the advancing thread): a heartbeat round if one is due."""
        now = clock.monotonic()
        if self._stopping.is_set() or now < self._next_beat:
            return
        self._next_beat = now + HEARTBEAT_PERIOD_SECS
        self._schedule_heartbeat()

    def _schedule_heartbeat(self) -> None:
        with self._inbox_lock:
            if self._heartbeat_scheduled:
                return
            self._heartbeat_scheduled = True
        try:
            self._context.call_soon(self._heartbeat_round)
        except RuntimeError:
            pass

    def _heartbeat_round(self) -> None:
        with self._inbox_lock:
            self._heartbeat_scheduled = False
        if self._stopping.is_set():
            return
        self._drain()
        now = clock.monotonic()
        if self._state == "down":
            if now >= self._restart_at:
                self._restart()
        elif self._state == "starting":
            if self._heard == self._launch_mark and now - self._started_at > self._timeout:
                self._die(f"sent no pid within {self._timeout:g} s")
        else:
            if self._backoff and now - self._started_at > self._timeout:
                self._backoff = 0.0  # it lived: the next death restarts at once again
            self._check_heartbeat(now)

    def _die(self, reason: str) -> None:
        """Kill the subprocess, report why with its stderr tail, fail its work, restart it."""
        proc, self._proc = self._proc, None
        self._state = "down"
        self._gen += 1  # anything still queued from it is ignored
        self._death = reason
        if proc is None:
            return
        proc.kill()
        if self._preparing:  # prepare raises it; the runtime reports and restarts the worker
            self._death = self._describe(proc, reason, then="killed")
            return
        message = self._describe(proc, reason)
        self._log.error("%s", message)
        self._report(SubprocessDiedError(message))
        self._on_died()
        now = clock.monotonic()
        self._schedule_restart(now)
        if self._restart_at <= now and not self._stopping.is_set():
            self._restart()

    def _describe(self, proc: ShellProcess, reason: str, then: str = "killed and restarted") -> str:
        tail = proc.stderr_tail()
        return (f"{self._name}: subprocess {self.command} (pid {proc.os_pid}) {reason}; "
                f"{proc.exit_info()}; {then}; stderr tail: "
                + (f"\n{tail}" if tail else "(empty)"))

    def _schedule_restart(self, now: float) -> None:
        self._restart_at = now + self._backoff
        self._backoff = min(MAX_BACKOFF_SECS, max(1.0, self._backoff * 2))

    def _restart(self) -> None:
        self.restarts += 1
        try:
            self._launch()
        except MultilangError as e:
            self._report(e)

    # ---- what spouts and bolts fill in -----------------------------------------------

    def _handle(self, message: Any) -> None:
        raise NotImplementedError

    def _on_running(self) -> None:
        """The handshake completed: start sending work."""

    def _on_died(self) -> None:
        """The subprocess was killed: fail what it held."""

    def _check_heartbeat(self, now: float) -> None:
        """Once a second while running: die if silent for too long."""

    def _mark(self) -> tuple[float, int, float]:
        """A question sent now: (runtime clock, messages heard so far, real clock)."""
        return (clock.monotonic(), self._heard, time.monotonic())

    def _silent_since(self, mark: tuple[float, int, float] | None, now: float) -> float:
        """Seconds since ``mark`` if nothing was heard since, else 0.

        Counting messages rather than comparing times keeps a healthy subprocess alive
        when simulated time jumps: only a question left unanswered across the jump counts,
        and only after ``ANSWER_GRACE_REAL_SECS`` of real time (it answers in real time).
        """
        if mark is None or self._heard != mark[1]:
            return 0.0
        if time.monotonic() - mark[2] < min(ANSWER_GRACE_REAL_SECS, self._timeout):
            return 0.0
        return now - mark[0]
