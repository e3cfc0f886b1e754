"""A worker: hosts a set of tasks and runs them from one loop thread (the wiring).

The worker puts together a pure core and its thin shells; each part lives in its own module:

- ``round.Round``, the core: what a round does and decides (bolt passes and budgets, the
  batch time, backpressure marks, spout gating). No socket, thread or clock inside.
- ``transfer.Transfer``, the transport shell and the ``TaskHost`` of the tasks on the loop:
  local queues, batches and frames to and from peers. ``Worker`` is one.
- ``timers.Timers``: timeouts, ticks and metric windows on the topology's clock.
- ``commands.Commands``: functions other threads (the master, tests) run on the loop thread.
- ``threads.TaskThread`` (a thread per task), ``async_tasks`` (the asyncio loop of
  ``AsyncBolt`` tasks) and ``stuck.Watchdog`` (stuck tasks, backpressure cycles).

A loop iteration (``run_once``) runs the queued commands, fires due timers and runs one round;
when a round did nothing, the loop waits on the transport until a frame, a command or the
next due timer or spout wakes it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from squall.api.errors import TopologyStartError
from squall.api.topology import StormTopology
from squall.runtime import clock as runtime_clock
from squall.runtime import round_trace
from squall.runtime.assembly import make_tasks
from squall.runtime.commands import Commands
from squall.runtime.errors import ErrorLog
from squall.runtime.host import Task
from squall.runtime.plan import SYSTEM, TaskPlan
from squall.runtime.round import Round, RoundConfig
from squall.runtime.stuck import start_watchdog
from squall.runtime.tasks import SpoutTask
from squall.runtime.threads import TaskThread
from squall.runtime.timers import Timers, worker_timers
from squall.runtime.transfer import Transfer
from squall.runtime.transport import Transport

THREADED = "squall.task.threaded"  # a thread per task: a component's or the whole topology's
THREAD_STOP_TIMEOUT = 30.0


class Worker(Transfer):
    """Hosts the tasks the plan gives worker ``index``; knows nothing of Spark."""

    def __init__(self, *, topology_name: str, topology: StormTopology, conf: dict,
                 plan: TaskPlan, index: int, transport: Transport, errors: ErrorLog | None = None,
                 clock: Callable[[], float] | None = None,
                 tap: Callable[[str, str, list, int], None] | None = None, active: bool = True) -> None:
        # the clock is simulated while a test runs under squall.testing.simulated_time()
        super().__init__(plan=plan, index=index, transport=transport, conf=conf,
                         clock=clock or runtime_clock.current(), errors=errors or ErrorLog(),
                         tap=tap)
        self.topology_name = topology_name
        self.topology = topology
        self.conf = conf
        self.active = active
        self.round = Round(RoundConfig(conf), self)
        self.round.trace = round_trace.from_environment(index)  # benchmarks.rounds: off unless asked
        self.spouts: list[SpoutTask] = self.round.spouts
        self.processors: list[Task] = self.round.processors
        self.timers = Timers()
        self.started = threading.Event()
        self.stopped = threading.Event()
        self.commands = Commands(transport.wake, self.stopped)
        self.threads: list[TaskThread] = []  # a TaskThread per task with a thread of its own
        self.asyncs: list[Any] = []  # AsyncBoltTask of each AsyncBolt task
        self.aio: Any = None  # the event loop of the async tasks, made on first use
        self.stuck: dict[int, dict] = {}  # task id -> the call it is stuck in (the watchdog's)
        self._watchdog: Any = None
        self._running = False
        self._graceful = True
        self._thread: threading.Thread | None = None
        self.start_error: BaseException | None = None
        self.idle_rounds = 0

    @property
    def throttled(self) -> bool:
        """True while backpressure keeps the spouts from emitting."""
        return self.round.throttled

    @property
    def work_done(self) -> int:
        """Tuples handled, emitted and taken, and timers fired, since the start."""
        return self.round.work_done

    def build(self) -> None:
        """Unpickle and wire this worker's tasks (does not open or prepare them)."""
        self.tasks = {}  # filled in place: routers' load awareness reads it once emits start
        fields = make_tasks(self, self, self.tasks)
        self.wire(self.tasks, fields)
        everyone = bool(self.conf.get(THREADED))  # the topology's: every spout and bolt
        # a component's setting overrides the topology's; the system's own components (the
        # checkpoint spout, ackers) stay on the loop
        self.threads = [TaskThread(self, t) for t in self.tasks.values()
                        if t.kind in ("spout", "bolt") and not hasattr(t, "pump")
                        and t.conf.get(THREADED, everyone)
                        and not t.component.startswith(("$", "__"))]
        self.asyncs = [t for t in self.tasks.values() if hasattr(t, "pump")]
        self.round.place(self.tasks.values(), self.threads, self.asyncs, self.plan.sources)

    # ---- lifecycle ---------------------------------------------------------------------

    def open_tasks(self) -> None:
        """Build, then open spouts and prepare bolts; raises ``TopologyStartError``.

        A task with a thread of its own is opened on that thread.
        """
        if not self.tasks:
            self.build()
        own = {th.task.task_id: th for th in self.threads}
        for th in self.threads:
            th.start()
        for task in self.tasks.values():
            runner = own.get(task.task_id)
            try:
                if runner is None:
                    task.start()
                else:
                    runner.started.wait()
                    if runner.start_error is not None:
                        raise runner.start_error
            except Exception as e:  # noqa: BLE001 - user code: report and stop the start
                self.errors.report(task.component, task.task_id, e)
                raise TopologyStartError(
                    f"component {task.component!r} task {task.task_id} failed to "
                    f"{'open' if task.kind == 'spout' else 'prepare'}: {type(e).__name__}: {e}"
                ) from e
        worker_timers(self.timers, self.clock(), self.conf, bool(self.plan.acker_tasks),
                      self.tasks.values(), self.threads,
                      self.plan.component_tasks[SYSTEM][self.index])
        if self.active:
            self._apply_active(True)

    def _apply_active(self, active: bool) -> None:
        """Tell every spout (on its own thread where it has one, waiting until it was told)."""
        self.active = active
        for spout in self.spouts:
            spout.activate() if active else spout.deactivate()
        told = [th.post(th.spout.activate if active else th.spout.deactivate)
                for th in self.threads if th.spout is not None]
        for done in told:
            done.wait()  # at most one call of that spout away

    def start(self) -> None:
        """Open the tasks and run the loop on a thread of its own."""
        self._running = True
        self._thread = threading.Thread(target=self._main, name=f"squall-worker-{self.index}",
                                        daemon=True)
        self._thread.start()

    def _main(self) -> None:
        try:
            self.build()
            me = threading.get_ident()
            for task in self.tasks.values():
                task.owner = me  # threaded and async tasks set their own thread
            self.open_tasks()
        except BaseException as e:  # noqa: BLE001 - handed to whoever waits for the start
            for th in self.threads:
                th.stop(True, THREAD_STOP_TIMEOUT)  # the tasks that did open are closed
            self.start_error = e
            self._running = False
            self.started.set()
            self.stopped.set()
            self.commands.release()
            return
        self._watchdog = start_watchdog(self)
        self.started.set()
        try:
            self.loop()
        finally:
            self._shut_down()

    def _shut_down(self) -> None:
        own = {th.task.task_id for th in self.threads}
        for th in self.threads:
            th.stop(self._graceful, THREAD_STOP_TIMEOUT)
        if self._graceful:
            for task in self.tasks.values():
                if task.task_id not in own:
                    task.stop()
        if self.aio is not None:  # cancel the async calls in flight, stop their loop
            self.aio.close()
            self.aio = None
        if self._watchdog is not None:
            self._watchdog.stop()
        if self.round.trace is not None:
            self.round.trace.write()
        self.transport.close()
        self.stopped.set()
        self.commands.release()

    # ---- the loop ----------------------------------------------------------------------

    def loop(self) -> None:
        """Run rounds until stopped."""
        while self._running:
            try:
                work = self.run_once()
            except Exception as e:  # noqa: BLE001 - a runtime fault must not end the worker silently
                self.errors.report(SYSTEM, self.plan.component_tasks[SYSTEM][self.index], e)
                work = 0
            if work == 0:
                self.idle_rounds += 1
                self.transport.wait(self._wait_time())

    def run_once(self) -> int:
        """One iteration of the loop: commands, due timers, a round; the work done (0: idle).

        Commands are not counted as work: a test asking whether the cluster is quiet must
        not make it busy by asking.
        """
        if self.commands.queue:
            self.commands.run()
        fired = self.timers.fire(self.clock())
        self.round.work_done += fired
        return fired + self.round.run(self.active)

    def _wait_time(self) -> float:
        """How long the loop may sleep: until a timer is due or a spout wants asking."""
        return self.timers.next_due(self.clock(), self.round.spout_wait(self.active))

    # ---- commands from other threads ---------------------------------------------------

    def call(self, fn: Callable[[], None]) -> threading.Event:
        """Run ``fn`` on the loop thread at the start of the next round.

        The returned event is set once ``fn`` has run, or once the loop has ended without
        running it (a stopped worker calls no user code any more).
        """
        return self.commands.call(fn)

    def query(self, fn: Callable[[], Any], timeout: float | None = None) -> Any:
        """``fn()`` computed on the loop thread between rounds; ``TimeoutError`` if it did not run."""
        return self.commands.query(fn, timeout, f"worker {self.index}")

    def set_active(self, active: bool) -> threading.Event:
        """Activate or deactivate the spouts (on the loop thread).

        Returns an event set once it is done: from then on no ``next_tuple`` call starts
        (deactivate), and each spout's ``activate``/``deactivate`` has been called.
        """
        return self.call(lambda: self._apply_active(active))

    def stop(self, graceful: bool = True) -> threading.Event:
        """Stop the loop; on a graceful stop spouts are closed and bolts cleaned up."""
        def halt() -> None:
            self._graceful = graceful
            self._running = False
        return self.call(halt)

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the loop thread to end; True if it did."""
        if not self.stopped.wait(timeout):
            return False
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return True
        thread.join(timeout)  # it returns right after setting ``stopped``
        return not thread.is_alive()

    # ---- what others read --------------------------------------------------------------

    def snapshot(self) -> tuple[int, bool, int, tuple[int, ...]]:
        """What a quiet check compares, read on the loop thread between rounds.

        (work done so far, idle, spout trees pending, next_tuple calls of each spout that
        may emit, -1 for one that may not). Spouts waiting after an empty call are asked
        again in the coming round, so a quiet check never mistakes a waiting spout with
        something to emit for an idle one.
        """
        calls = []
        spouts = self.spouts + [th.spout for th in self.threads if th.spout is not None]
        for spout in spouts:
            spout.idle_until = 0.0
            calls.append(spout.calls if self.active and spout.can_emit() else -1)
        for th in self.threads:
            th.poke()
        # a frame another worker sent after this worker's last poll is work to come: the
        # snapshot runs before this round's poll, so only the transport's queue shows it
        waiting = getattr(self.transport, "waiting", None)
        idle = self.is_idle() and not (waiting is not None and waiting())
        return (self.work_done, idle, sum(len(s.pending) for s in spouts), tuple(calls))

    def is_idle(self) -> bool:
        """True when no task has queued tuples and nothing waits to be sent."""
        return (not any(t.inbox for t in self.tasks.values())
                and self.is_empty()
                and all(th.idle() for th in self.threads)
                and all(at.idle() for at in self.asyncs))

    def transfer_stats(self) -> dict[str, Any]:
        """What this worker sent to others since it started, and how the loop sent it.

        ``tuples``: tuples of the topology's streams that crossed to another worker;
        ``acker``: acker messages that did (inits, combined acks, verdicts); ``frames`` and
        ``bytes``: the frames carrying both (packed, without the transport's link header);
        ``early_sends``: sends made mid-round because ``squall.transfer.batch.time.ms`` ran
        out; ``rounds``: loop rounds; ``throttled_rounds``: rounds whose spouts backpressure held back.
        The send buffer (``topology.executor.send.buffer.size``): ``send_bound``, the frames it
        holds per peer; ``unsent``, the most waiting for one peer now; ``unsent_peak``, the
        most ever; ``held_rounds``, rounds whose bolts waited at the bound; ``overflow_rounds``,
        rounds whose bolts ran past it, their queues full; ``pressured_by``: the peers
        held at their bound now (this worker's spouts wait for them).
        """
        return {"frames": self.sent_frames, "bytes": self.sent_bytes, "tuples": self.sent_tuples,
                "acker": self.sent_acker, "early_sends": self.round.early_sends,
                "rounds": self.round.rounds, "throttled_rounds": self.round.throttled_rounds,
                "send_bound": self.send_bound,
                "unsent": max((len(u) for u in self._unsent.values()), default=0),
                "unsent_peak": self.unsent_peak, "held_rounds": self.round.held_rounds,
                "overflow_rounds": self.round.overflow_rounds,
                "pressured_by": self.pressured()}
