"""The topology master: on the Spark driver, it launches, watches and relaunches workers.

One ``TopologyMaster`` per running topology. It plans nothing itself (the plan is given),
launches each worker as a single-partition Spark job in a driver thread of its own (job
group ``squall/<topology>/<worker>/<launch>``, FAIR pool ``squall-<topology>``), and runs
the coordination endpoint, a ZeroMQ ROUTER socket: registrations, the address map,
heartbeats with metrics and errors, and the control commands.

Threads: one loop thread owns the ROUTER socket and the ``WorkerRegistry``; every change
of state happens there (API calls and job threads post closures to it). Each launch has
a job thread blocked in ``collect()`` until its worker ends.

Intake: each pass reads every queued message off the socket first (up to ``INTAKE``) and
records each worker's sign of life as it arrives, so a loop that is behind on handling
heartbeats still judges silence on time. Control messages (registrations, ``started``,
``applied``, ``rescaled``) are handled as they are read, in order. A heartbeat (told by
its tail) has only its tag, sequence number, errors and samples read then
(``Link.scan_heartbeat``); it waits in ``_beats``, one per worker process (a newer one
supersedes it, keeping its errors and samples), and a pass decodes and handles them for at
most ``BEATS_SLICE`` seconds. Reading is then cheap enough to keep up with 1,000 workers on
a starved process: the decoding of metrics, most of a heartbeat's cost, is what waits. The socket queues at
most ``RECEIVE_HWM`` messages per worker process before ZeroMQ stops reading that worker's
connection (back-pressure, nothing dropped), so the master's memory for what it has not
read is bounded by the number of workers.

Parts: the socket and the sealed link to each worker are ``worker_links.WorkerLinks``, the
Spark jobs ``jobs.SparkJobs``, the closures posted to the loop ``loop_calls.LoopCalls``;
this class decides (registrations, heartbeats, failures, relaunches, versions).

Failure handling: a worker whose job ends (its process died beyond Spark's own task
retries) or that stays silent past the heartbeat timeout is declared dead: its job group
is cancelled and the worker is launched again after a backoff (0.5 s doubling to 10 s).
Tuples it held are replayed by the spouts' message timeouts. A worker over its memory limit
says so before it ends its process (``squall.spark.memory``): the same relaunch, with that
reason recorded and counted.

Versions: each worker runs one version of the topology's code (``WorkerCode``). A gray
upgrade restarts chosen workers with another version while the others run on, so the
topology briefly runs two versions side by side (same plan required, checked by Nimbus).
"""

from __future__ import annotations

import functools
import logging
import secrets
import threading
import time
from collections import OrderedDict, deque
from typing import TYPE_CHECKING, Any

from squall.api.errors import TopologyStartError
from squall.api.topology import StormTopology
from squall.runtime import clock
from squall.runtime.errors import cut_entry
from squall.runtime.plan import TaskPlan
from squall.spark import coordination as co
from squall.spark import settings as S
from squall.spark.affinity import worker_core
from squall.spark.jobs import SparkJobs
from squall.spark.liveness import TaskLiveness, report_of
from squall.spark.loop_calls import CALL_TIMEOUT, LoopCalls
from squall.spark.master_info import Pages, beat_fold, fold, snapshot
from squall.spark.memory import reason as memory_reason
from squall.spark.memory import worker_limit_mb
from squall.spark.placement import PlacementCheck, executors, pins, worker_cpus
from squall.spark.registry import Incarnation, WorkerRegistry
from squall.spark.settings import setting
from squall.spark.worker_links import WorkerLinks
from squall.spark.worker_main import WorkerCode, WorkerSpec

if TYPE_CHECKING:
    from pyspark import SparkContext

log = logging.getLogger("squall.spark.master")
LOOP_POLL_MS = 20
BATCH = 500  # heartbeats handled per loop pass at most, before the posted calls run
BEATS_SLICE = 0.2  # seconds of heartbeat handling per pass at most (then calls, silence, intake)
INTAKE = 5000  # messages read off the socket per pass at most (5 per worker at 1,000 workers)
ANNOUNCE_WITHIN = 0.5  # seconds a registration waits at most to be announced to the others
START_FAILURES = 3  # job failures of one worker during submit before giving up
STOP_TIMEOUT = 30.0
SAMPLES_KEPT = 2000  # sampled tuples kept for the UI and squall samples
ACK_EVERY = 5.0  # seconds between the ACKs of one worker's heartbeats (at most)
BEAT_ERRORS_KEPT = 1000  # errors of superseded heartbeats kept (the master keeps 1,000 in all)
# seconds between two looks for silent workers: a look reads every worker's slot (0.6 ms at
# 1,000 workers), and the loop makes about 100 passes a second under load
JUDGE_EVERY = 0.1
# heartbeat intervals between two folds of the pages' figures that no request asked for
# (``master_info.Pages``): what bounds the age of the topology page's figures for a reader
# who asks seldom; 0.5 s of CPU at 1,000 workers, so 0.05 of a core at 1 s heartbeats
PAGES_EVERY = 10


class TopologyMaster:
    """Runs one topology's workers on Spark; see the module docstring."""

    def __init__(self, name: str, topology: StormTopology, conf: dict, plan: TaskPlan,
                 sc: SparkContext, *, active: bool = True, code_path: str | None = None,
                 version: int = 1, secret: bytes | None = None) -> None:
        self.name = name
        self.topology = topology
        self.conf = conf
        self.plan = plan
        self.sc = sc
        self.active = active
        self._active_seq = 0  # activate/deactivate commands sent, for the confirmations
        self.base = WorkerCode(version, topology, conf, code_path)
        self.worker_code: dict[int, WorkerCode] = {}  # workers not running ``base``
        # workers prove they have it when they register, and tag every frame with it
        self.secret = secret if secret is not None else secrets.token_bytes(32)
        self.status = "ACTIVE" if active else "INACTIVE"
        # cut again here, whatever a worker sends (runtime/errors.py): at most about 5 MB
        self.errors: deque[dict] = deque(maxlen=1000)
        self.liveness = TaskLiveness()  # each task's last heartbeat and progress
        self.debug: dict = {"rate": 0.0, "components": None}  # tuple sampling, sent to every worker
        self.samples: deque[dict] = deque(maxlen=SAMPLES_KEPT)
        self._sample_seq = 0
        self.started_at = time.monotonic()
        self.registry = WorkerRegistry(
            plan.num_workers,
            heartbeat_timeout=float(setting(conf, S.HEARTBEAT_TIMEOUT)),
            start_timeout=float(setting(conf, S.START_TIMEOUT)),
        )
        self._heartbeat = float(setting(conf, S.HEARTBEAT))
        # the pages' figures, folded ahead on a thread of their own (never on a request's)
        self.pages = Pages(lambda: self.calls.call(self._snapshot_brief)[0], self._heartbeat,
                           PAGES_EVERY * self._heartbeat, name)
        # a worker stops itself after MASTER_TIMEOUT without word from the master: it hears at
        # least 6 times per timeout, and at 1,000 workers the master sends 200 ACKs a second, not 1,000
        self._ack_every = min(ACK_EVERY, float(setting(conf, S.MASTER_TIMEOUT)) / 6)
        for i in range(plan.num_workers):  # a bad memory ask fails the submit, not a launch
            worker_limit_mb(topology, conf, plan, i)
        self.links = WorkerLinks(name, self.secret, conf, self.registry)
        self.address = self.links.address
        self._running = True
        self._stopping = False
        self._starting = True
        # "started" messages seen while starting: every slot is checked only once there are as
        # many as workers (checking at each one is N x N at a start, 0.6 s of CPU at 1,000)
        self._start_reports = 0
        self._start_done = threading.Event()
        self._start_error: str | None = None
        self._thread = threading.Thread(target=self._loop, name=f"squall-master-{name}", daemon=True)
        self.calls = LoopCalls(self._thread)
        # the host each worker's job asks Spark for, and what came of it (squall.scheduler)
        self._pins = pins(sc, plan)
        # a job's end is reported on its job thread: the loop thread handles it
        self.jobs = SparkJobs(name, sc, self._pins, worker_cpus(sc, plan, conf),
                              lambda *end: self.calls.post(functools.partial(self._job_ended, *end)))
        self.placement = PlacementCheck(self._pins)
        self.placement_notes: list[str] = []  # the scheduler's notes on asks it could not honour
        self.rescale: dict | None = None  # the last rescale's record (API.md, Rescaling)
        self._registered: set[int] = set()  # workers registered since the last ``_announce``
        self._registered_at: float | None = None  # when the first of them was seen unannounced
        self._confirming: list[Confirmation] = []  # activates/deactivates not yet confirmed by all
        # a retired process (dead, replaced, restarted) is not waited for
        self.registry.on_retire = lambda inc: self._confirm(inc, None) if self._confirming else None
        self.rescale_seq = 0  # live rescale steps sent (``live_move``)
        self.rescale_replies: dict[int, tuple[bytes, dict]] = {}  # step seq -> (identity, answer)
        # heartbeats read but not yet handled: the latest of each worker process (module docstring)
        self._beats: OrderedDict[bytes, tuple[Incarnation, bytes, list, list]] = OrderedDict()
        self._judged_at = float("-inf")  # the last look for silent workers (``_supervise``)

    # ---- API (any thread) ------------------------------------------------------------

    def start(self, timeout: float | None = None) -> None:
        """Launch every worker; return once all have opened their tasks, else raise."""
        timeout = timeout or float(setting(self.conf, S.START_TIMEOUT))
        self._thread.start()
        self.pages.start()
        for i in range(self.plan.num_workers):
            self.calls.post(functools.partial(self._launch, i))
        if not self._start_done.wait(timeout):
            self._start_error = f"workers did not start within {timeout:.0f}s: {start_state(self.registry)}"
        if self._start_error is not None:
            self.stop(wait_secs=0)
            raise TopologyStartError(f"topology {self.name!r} failed to start on Spark: {self._start_error}")
        self.started_at = time.monotonic()
        log.info("topology %r: %d workers running on %s", self.name, self.plan.num_workers, self.sc.master)

    def set_active(self, active: bool, timeout: float = STOP_TIMEOUT) -> None:
        """Activate or deactivate the spouts of every worker (and of later relaunches).

        Returns once every running worker confirmed it: after a deactivate no
        ``next_tuple`` call starts anywhere (Storm's contract). A worker that does not
        confirm within ``timeout`` is logged; it will not run its spouts once it does.
        """
        self.status = "ACTIVE" if active else "INACTIVE"
        self._confirmed(active, timeout)

    def _confirmed(self, active: bool, timeout: float) -> None:
        """Tell every running worker, and wait until each confirmed (or ``timeout``).

        The loop thread keeps the workers still to confirm (``_confirming``) and sets the
        event when the last one does or is retired: O(1) per confirmation, no polling.
        """
        def apply() -> Confirmation:
            self.active = active
            self._active_seq += 1
            wait = Confirmation(self._active_seq, {inc.worker: inc for inc in self.registry.current()})
            for inc in wait.waiting.values():
                self.links.send(inc.identity, co.ACTIVATE if active else co.DEACTIVATE,
                                seq=self._active_seq)
            if wait.waiting:
                self._confirming.append(wait)
            else:
                wait.done.set()
            return wait
        wait = self.calls.call(apply)
        if wait.done.wait(timeout):
            return

        def give_up() -> list[int]:
            if wait in self._confirming:
                self._confirming.remove(wait)
            return sorted(wait.waiting)
        waiting = self.calls.call(give_up)
        if waiting:
            log.error("topology %r: workers %s did not confirm %s within %.0fs", self.name,
                      waiting, "activate" if active else "deactivate", timeout)

    def _confirm(self, inc: Incarnation, seq: int | None) -> None:
        """``inc`` confirmed command ``seq`` (None: it was retired and confirms nothing more)."""
        for wait in list(self._confirming):
            if (seq is None or seq >= wait.seq) and wait.waiting.get(inc.worker) is inc:
                del wait.waiting[inc.worker]
                if not wait.waiting:
                    self._confirming.remove(wait)
                    wait.done.set()

    def set_debug(self, rate: float, components: list[str] | None) -> None:
        """Sample emitted tuples at ``rate`` (0: off) in every worker (and later relaunches)."""
        def apply() -> None:
            self.debug = {"rate": rate, "components": components}
            self.links.broadcast(co.DEBUG, **self.debug)
        self.calls.call(apply)

    def recent_samples(self, since: int = 0) -> list[dict]:
        """The kept samples numbered above ``since``, oldest first (any thread)."""
        for _ in range(5):  # the loop thread may append meanwhile: copying then fails, try again
            try:
                kept = list(self.samples)
                break
            except RuntimeError:
                continue
        else:
            kept = []
        return [s for s in kept if s["seq"] > since]

    def stop(self, wait_secs: float = 0) -> None:
        """Deactivate, wait ``wait_secs``, stop every worker and end their Spark jobs."""
        if not self._thread.is_alive():
            self._close()
            return
        self._confirmed(False, STOP_TIMEOUT)
        if wait_secs > 0:
            time.sleep(wait_secs)
        self.calls.call(self._stop_all)
        deadline = time.monotonic() + STOP_TIMEOUT
        for (index, launch), thread in self.jobs.threads():
            thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                log.warning("worker %d of %r did not stop; cancelling its Spark job", index, self.name)
                self.jobs.cancel(index, launch)
                thread.join(10.0)
        self._running = False
        self._thread.join(5.0)
        self._close()

    def info(self, per_task: bool = True) -> dict:
        """``get_topology_info`` for this topology (without per-task detail: ``master_info.fold``).

        The loop thread only takes a snapshot (references: no fold). The components' figures
        are the last ones the pages' thread published (``master_info.Pages``): a request
        never folds every task's metrics itself. The status, workers and errors are always
        this call's.
        """
        snap, entries, notes = self.calls.call(self._snapshot_for_info if per_task else self._snapshot_brief)
        figures = self.pages.figures(snap, per_task, CALL_TIMEOUT)
        info = fold(snap, per_task=per_task, figures=figures)
        if per_task:
            info["tasks"] = report_of(entries)
        info["placement_notes"] = notes
        info["rescale"] = None if self.rescale is None else dict(self.rescale)  # API.md, Rescaling
        return info

    def beat_info(self, tasks: bool = True) -> dict:
        """What the application's store heartbeat needs of ``info`` (``master_info.beat_info``), cheaply.

        ``tasks=False``: without each task's report (``tasks`` is None), which the store needs
        only every few beats.
        """
        # the loop takes references and copies (``snapshot``, ``entries``); the sums run here
        snap, entries, _ = self.calls.call(self._snapshot_for_info if tasks else self._snapshot_brief)
        info = beat_fold(snap)
        info["tasks"] = report_of(entries) if tasks else None
        return info

    def run_version(self, indices: list[int], code: WorkerCode, timeout: float) -> None:
        """Restart workers ``indices`` on ``code``; return once they run it, else raise.

        The other workers run on untouched. Tuples the restarted workers held are
        replayed by the spouts' timeouts, and their stateful tasks recover from the last
        checkpoint, as after any worker failure.
        """
        def restart() -> dict[int, int]:
            launches = {}
            for index in indices:
                if code.version == self.base.version:
                    self.worker_code.pop(index, None)
                else:
                    self.worker_code[index] = code
                current = self.registry.slots[index].current
                if current is not None:
                    self.links.send(current.identity, co.STOP, graceful=True)
                launches[index] = self.registry.slots[index].launch
                self.registry.restart(index)
            return launches
        before = self.calls.call(restart)
        deadline = time.monotonic() + timeout
        while True:
            waiting = self.calls.call(lambda: [
                i for i in indices
                if not ((s := self.registry.slots[i]).launch > before[i] and s.current is not None
                        and s.current.started)])
            if not waiting:
                return
            if time.monotonic() >= deadline:
                errors = "; ".join(f"worker {i}: {self.registry.slots[i].last_error or 'not started'}"
                                   for i in waiting)
                raise TopologyStartError(f"topology {self.name!r}: workers {waiting} did not start "
                                         f"version {code.version} within {timeout:.0f}s ({errors})")
            time.sleep(0.1)

    def set_base(self, code: WorkerCode) -> None:
        """Make ``code`` the version of every worker not told otherwise (after an upgrade)."""
        def apply() -> None:
            self.base = code
            self.worker_code = {i: c for i, c in self.worker_code.items() if c.version != code.version}
        self.calls.call(apply)

    def worker_versions(self) -> dict[int, int]:
        """Worker index -> the code version it runs (or is being launched with)."""
        return {i: self.worker_code.get(i, self.base).version for i in range(self.plan.num_workers)}

    # ---- loop thread -----------------------------------------------------------------

    def _loop(self) -> None:
        while self._running:
            try:
                # everything queued is read first: each worker's sign of life is its arrival, not
                # the moment its heartbeat is handled (which may be behind, see ``_handle_beats``)
                for ident, parts in self.links.receive(0 if self._beats else LOOP_POLL_MS, INTAKE):
                    if self.links.is_heartbeat(ident, parts):
                        self._heartbeat_arrived(ident, parts)
                    else:
                        self._handle(ident, parts)
                # a bounded slice: calls (a deactivate, an info's snapshot) wait for one slice,
                # not for a backlog of heartbeats that grows with the number of workers
                self._handle_beats()
                self.calls.run_pending()
                self._supervise(judge=self.links.drained)
                self._announce()
            except Exception:  # noqa: BLE001 - the master must outlive any one bad event
                log.exception("topology master %r: error in its loop", self.name)

    def _announce(self) -> None:
        """Tell every worker the addresses of the processes that registered lately, in one message.

        Only theirs: workers merge it into their map, and the address of a worker that
        died is never taken out (frames for it wait for its next process). Sent once a
        pass has read every queued message, or ``ANNOUNCE_WITHIN`` after the first of them
        registered: a loop that reads its backlog in batches would otherwise send a message
        to every worker per batch (N x batches at a start).
        """
        if not self._registered:
            return
        now = clock.monotonic()
        if self._registered_at is None:
            self._registered_at = now
        if self.links.drained or now - self._registered_at >= ANNOUNCE_WITHIN:
            workers, self._registered, self._registered_at = self._registered, set(), None
            self.links.broadcast_addresses(workers)

    def _supervise(self, judge: bool = True) -> None:
        """Relaunch what is due; declare silent workers dead only if ``judge``.

        ``judge`` is False while messages wait unread: a worker's heartbeat may be among them,
        and a backlog on the master's side must never be taken for a worker's silence.
        """
        if self._stopping:
            return
        if judge:  # at most every JUDGE_EVERY: a silent worker is noticed that much later at most
            now = self.registry.clock()
            judge = now - self._judged_at >= JUDGE_EVERY
            if judge:
                self._judged_at = now
        for index in self.registry.dead() if judge else ():
            slot = self.registry.slots[index]
            timeout = self.registry.heartbeat_timeout
            reason = f"no heartbeat for {timeout:.0f}s" if slot.current else "never registered"
            self.jobs.cancel(index, slot.launch)
            self._worker_failed(index, f"declared dead: {reason}")
        for index in self.registry.due():
            self._launch(index)

    def _launch(self, index: int) -> None:
        if self._stopping:
            return
        launch = self.registry.launched(index)
        code = self.worker_code.get(index, self.base)
        limit = worker_limit_mb(code.topology, code.conf, self.plan, index)
        self.registry.slots[index].memory_limit_mb = limit
        spec = WorkerSpec(
            topology_name=self.name, topology=code.topology, conf=code.conf, plan=self.plan,
            index=index, launch=launch, master_address=self.address,
            bind_host=setting(self.conf, S.WORKER_BIND_HOST),
            port=setting(self.conf, S.WORKER_PORT),
            heartbeat_secs=self._heartbeat,
            master_timeout_secs=float(setting(self.conf, S.MASTER_TIMEOUT)),
            code_path=code.code_path, secret=self.secret, memory_limit_mb=limit,
            core=worker_core(str(self.sc.master) if self.sc is not None else "", index,
                             bool(setting(self.conf, S.WORKER_CPU_PIN))),
        )
        self.jobs.start(spec)

    def _job_ended(self, index: int, launch: int, result: Any, error: str | None) -> None:
        slot = self.registry.slots[index]
        if self._stopping or launch != slot.launch or slot.relaunch_at is not None:
            return  # a worker we stopped, or one already declared dead (relaunch pending)
        status = result[0]["status"] if result else "failed"
        if status == "start_failed" and self._starting:
            return  # reported by its "started" message; the submit fails
        self._worker_failed(index, error or f"its Spark job ended ({status})")

    def _worker_failed(self, index: int, reason: str) -> None:
        delay = self.registry.failed(index, reason)
        slot = self.registry.slots[index]
        log.warning("topology %r worker %d (launch %d) failed: %s; relaunching in %.1fs",
                    self.name, index, slot.launch, reason, delay)
        if self._starting and slot.failures >= START_FAILURES:
            self._fail_start(f"worker {index} failed {slot.failures} times: {reason}")

    def _fail_start(self, reason: str) -> None:
        if self._start_error is None:
            self._start_error = reason
        self._start_done.set()

    def _handle(self, ident: bytes, parts: list[bytes]) -> None:
        msg = self.links.open(ident, parts)
        if msg is None:
            return
        t = msg["t"]
        if t == co.REGISTER:
            self._register(ident, msg)
            return
        inc = self.registry.seen(ident)
        if inc is None:
            self.links.send(ident, co.STOP, graceful=False)  # a process of an older launch
            return
        if t == co.APPLIED:
            inc.applied = max(inc.applied, int(msg.get("seq") or 0))
            if self._confirming:
                self._confirm(inc, inc.applied)
        elif t == co.RESCALED:
            self.rescale_replies[int(msg.get("seq") or 0)] = (inc.identity, msg)
        elif t == co.MEMORY:
            self._over_memory(inc, msg)
        elif t == co.HEARTBEAT:  # not told by its tail (``_heartbeat_arrived``): handled now
            self._ack(inc)
            self._beat(inc, msg)
        elif t == co.STARTED:
            self.errors.extend(cut_entry(e) for e in msg.get("errors") or ())
            if msg["error"] is not None:
                inc.start_error = msg["error"]
                if self._starting:
                    self._fail_start(msg["error"])
                return
            inc.started = True
            self.liveness.started(inc.worker, inc.pid, {t: self.plan.task_component[t]
                                                        for t in self.plan.worker_tasks(inc.worker)})
            if not self._starting:
                return
            self._start_reports += 1
            if self._start_reports >= len(self.registry.slots) and all(
                    s.current and s.current.started for s in self.registry.slots):
                self._starting = False
                self._start_done.set()

    def _over_memory(self, inc: Incarnation, msg: dict) -> None:
        """``inc`` went over its memory limit and ends its process: record why, relaunch it.

        The ``stop`` tells it the reason arrived; its Spark job is cancelled so that Spark
        does not retry the task on its own (the relaunch is the master's, with its backoff).
        """
        slot = self.registry.slots[inc.worker]
        why = memory_reason(float(msg.get("rss_mb") or 0.0), float(msg.get("limit_mb") or 0.0))
        slot.memory_stops += 1
        slot.memory_stop = why
        self.links.send(inc.identity, co.STOP, graceful=False)
        self.jobs.cancel(inc.worker, slot.launch)
        self._worker_failed(inc.worker, why)

    def _heartbeat_arrived(self, ident: bytes, parts: list[bytes]) -> None:
        """A heartbeat read off the socket: its worker's sign of life now, its handling later.

        Its tag, sequence number, errors and samples are read now; its metrics (most of it)
        are decoded when it is handled, unless a newer heartbeat of the same process
        supersedes it first (then its errors and samples are kept, its metrics dropped).
        """
        scanned = self.links.scan_heartbeat(ident, parts)
        if scanned is None:
            return
        inc = self.registry.seen(ident)
        if inc is None:
            self.links.send(ident, co.STOP, graceful=False)  # a process of an older launch
            return
        self._ack(inc)
        errors, samples = scanned
        waiting = self._beats.get(ident)
        if waiting is not None and (waiting[2] or waiting[3]):
            errors = [*waiting[2], *errors][-BEAT_ERRORS_KEPT:]
            samples = [*waiting[3], *samples][-SAMPLES_KEPT:]
        # in its place if one waits: handled in the order of the oldest unhandled arrival, so
        # that a worker that beats on is never passed over by those behind it
        self._beats[ident] = (inc, parts[1], errors, samples)

    def _ack(self, inc: Incarnation) -> None:
        now = clock.monotonic()
        if now - inc.acked_at >= self._ack_every:  # a sign of life, not an answer to each beat
            inc.acked_at = now
            self.links.send(inc.identity, co.ACK)

    def _handle_beats(self) -> None:
        """Handle the waiting heartbeats, oldest first, for at most ``BEATS_SLICE`` (``BATCH`` of them)."""
        if not self._beats:
            return
        deadline = clock.monotonic() + BEATS_SLICE
        for _ in range(BATCH):
            if not self._beats:
                return
            _, (inc, payload, errors, samples) = self._beats.popitem(last=False)
            msg = co.decode(payload)  # authentic and new: checked as it arrived
            msg["errors"], msg["samples"] = errors, samples
            self._beat(inc, msg)
            if clock.monotonic() >= deadline:
                return

    def _beat(self, inc: Incarnation, msg: dict) -> None:
        """One heartbeat of ``inc``: its tasks' metrics and state, its errors and samples."""
        self.errors.extend(cut_entry(e) for e in msg.get("errors") or ())
        for sample in msg.get("samples") or ():
            self._sample_seq += 1
            self.samples.append({**sample, "seq": self._sample_seq})
        if self.registry.slots[inc.worker].current is not inc:
            return  # retired since it arrived: its counters were folded in (``registry._retire``)
        inc.metrics = msg["metrics"]
        self.liveness.observe(inc.worker, inc.pid, inc.metrics)
        inc.stuck = list(msg.get("stuck") or [])
        inc.corrupt_frames = int(msg.get("corrupt_frames") or 0)
        inc.rejected_frames = int(msg.get("rejected_frames") or 0)
        inc.transfer = dict(msg.get("transfer") or {})
        inc.usage = dict(msg.get("usage") or {})

    def _register(self, ident: bytes, msg: dict) -> None:
        if self._stopping:
            self.links.send(ident, co.STOP, graceful=False)
            return
        # the sealed message is the proof; its fields must be the identity it was sealed for
        try:
            bound = (co.identity(self.name, msg["worker"], msg["launch"], msg["attempt"], msg["pid"]) == ident
                     and 0 <= msg["worker"] < self.plan.num_workers and isinstance(msg["address"], str)
                     and isinstance(msg.get("nonce"), bytes))
        except (KeyError, TypeError):
            bound = False
        if not bound:
            log.warning("topology %r refused a registration from %r: its fields are not its identity's",
                        self.name, ident[:80])
            self.links.send(ident, co.REJECT, reason="registration fields do not match the identity")
            return
        if not self._placed_well(ident, msg):
            return
        accepted, replaced = self.registry.register(msg, ident)
        if not accepted:
            self.links.send(ident, co.REJECT, reason="a newer launch of this worker exists")
            return
        if replaced is not None:
            self.links.send(replaced.identity, co.STOP, graceful=False)
        log.info("topology %r worker %d registered: pid %d at %s (launch %d, attempt %d)", self.name,
                 msg["worker"], msg["pid"], msg["address"], msg["launch"], msg["attempt"])
        self.links.send(ident, co.WELCOME, addresses=self.registry.addresses(), nonces=self.registry.nonces(),
                   active=self.active)
        if self.debug["rate"]:
            self.links.send(ident, co.DEBUG, **self.debug)
        self._registered.add(msg["worker"])  # the others learn its address soon (``_announce``)

    def _placed_well(self, ident: bytes, msg: dict) -> bool:
        """False (and a relaunch) for a worker that started away from its assigned host."""
        index, host = msg["worker"], msg["host"]
        if not 0 <= index < len(self._pins) or msg["launch"] != self.registry.slots[index].launch:
            return True  # the registry turns it away
        live = [h for h, _ in executors(self.sc, 0, 0.0)] if self._pins[index] else []
        verdict = self.placement.verdict(index, host, live)
        if verdict == "accept":
            log.warning("topology %r worker %d runs on %s, not its assigned host %s", self.name, index,
                        host, self._pins[index])
        if verdict != "relaunch":
            return True
        log.warning("topology %r worker %d started on %s, not its assigned host %s: relaunching it",
                    self.name, index, host, self._pins[index])
        self.links.send(ident, co.REJECT, reason=f"started on {host}, assigned to {self._pins[index]}")
        self.jobs.cancel(index, msg["launch"])
        self._launch(index)
        return False

    def _stop_all(self) -> None:
        self._stopping = True
        self.links.broadcast(co.STOP, graceful=True)

    def _info(self) -> dict:
        """The whole info, on the loop thread (tests compare it with ``_beat_info``)."""
        snap, entries, notes = self._snapshot_for_info()
        return {**fold(snap), "tasks": report_of(entries), "placement_notes": notes,
                "rescale": None if self.rescale is None else dict(self.rescale)}

    def _snapshot_for_info(self) -> tuple[dict, list[dict], list[str]]:
        snap, _, notes = self._snapshot_brief()
        return snap, self.liveness.entries(), notes

    def _snapshot_brief(self) -> tuple[dict, list[dict], list[str]]:
        versions = {i: self.worker_code.get(i, self.base).version for i in range(self.plan.num_workers)}
        snap = snapshot(self.name, self.status, self.plan, self.registry, list(self.errors), self.started_at,
                        versions)
        return snap, [], self.placement_notes + self.placement.notes()

    def _beat_info(self, tasks: bool = True) -> dict:
        """``beat_info`` on the loop thread (tests compare it with ``_info``)."""
        snap, entries, _ = self._snapshot_for_info() if tasks else self._snapshot_brief()
        info = beat_fold(snap)
        info["tasks"] = report_of(entries) if tasks else None
        return info

    def _close(self) -> None:
        self._running = False
        self.pages.close()
        self.links.close()


class Confirmation:
    """An activate or deactivate (``seq``) and the processes that have not confirmed it yet."""

    def __init__(self, seq: int, waiting: dict[int, Incarnation]) -> None:
        self.seq = seq
        self.waiting = waiting  # worker index -> the process told
        self.done = threading.Event()


def start_state(registry: WorkerRegistry) -> str:
    """Each worker's progress through its start, for the error of a submit that timed out."""
    parts = []
    for slot in registry.slots:
        state = "started" if slot.current and slot.current.started else (
            "registered" if slot.current else "not registered")
        error = f" ({slot.last_error})" if slot.last_error else ""
        parts.append(f"worker {slot.index} {state}{error}")
    return "; ".join(parts)
