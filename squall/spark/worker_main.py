"""What runs inside a worker's Spark task: one squall ``Worker`` plus its link to the master.

The topology master launches each worker as a single-partition Spark job whose only task
calls ``run_worker``. The task lives as long as the worker: it binds the worker's
receive socket, registers with the master, opens the tasks, then heartbeats and obeys
control messages until told to stop. If the process dies, Spark (or the master) runs
the task again and the new process registers under the same worker index.

Two threads: the Spark task's thread (this module: coordination with the master) and
the worker's loop thread (all user code and the data path).
"""

from __future__ import annotations

import gc
import hashlib
import logging
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cloudpickle
import zmq

from squall.api.errors import TopologyStartError
from squall.api.topology import StormTopology
from squall.runtime.errors import ErrorLog
from squall.runtime.plan import TaskPlan
from squall.runtime.private_dirs import private_directory
from squall.runtime.process_usage import ProcessUsage
from squall.runtime.sampling import TupleSampler
from squall.runtime.worker import Worker
from squall.spark import affinity, memory, worker_rescale
from squall.spark import coordination as co
from squall.spark.placement import worker_host
from squall.spark.transport import ZmqTransport

log = logging.getLogger("squall.spark.worker")
STOP_TIMEOUT = 30.0
# errors per heartbeat; more wait for the next one (each is cut to about 5 KB: runtime/errors.py)
ERRORS_PER_HEARTBEAT = 100


@dataclass(frozen=True)
class WorkerCode:
    """One version of a topology's code: what a worker runs (a gray upgrade mixes two)."""

    version: int
    topology: StormTopology
    conf: dict
    code_path: str | None = None  # a zip of the user's modules, put first on sys.path


@dataclass(frozen=True)
class WorkerSpec:
    """Everything a worker's Spark task needs, shipped in its closure."""

    topology_name: str
    topology: StormTopology
    conf: dict
    plan: TaskPlan
    index: int
    launch: int
    master_address: str
    bind_host: str = "127.0.0.1"
    port: Any = 0  # squall.spark.worker.port: 0, a port, or "LOW-HIGH"
    heartbeat_secs: float = 1.0
    master_timeout_secs: float = 30.0
    code_path: str | None = None
    secret: bytes | None = None  # the topology's secret: peers without it are ignored
    memory_limit_mb: float | None = None  # RSS over it ends the process (squall.spark.memory)
    core: int | None = None  # every thread of the process runs there (squall.spark.affinity)


def spark_task(spec: WorkerSpec) -> Any:
    """The ``mapPartitions`` function of worker ``spec.index``'s Spark job.

    With a ``code_path`` the spec travels as bytes, unpickled only after the code is on
    ``sys.path``: a custom grouping in the topology may be a class of the user's modules.
    """
    if spec.code_path is None:
        def run(_partition: Any) -> Any:
            yield run_worker(spec)
        return run
    path, blob = spec.code_path, cloudpickle.dumps(spec)
    code = Path(path).read_bytes()  # for executors on hosts without the blob directory

    def run_shipped(_partition: Any) -> Any:
        use_code(local_code(path, code))
        yield run_worker(cloudpickle.loads(blob))
    return run_shipped


def local_code(path: str, code: bytes) -> str:
    """``path`` where this host has it with that content, else a copy of ``code`` here.

    Nimbus's topology master names the zip in its own blob directory, which an executor
    on another machine does not have: the zip travels in the task, and is written once per
    content under the temporary directory (a restarted worker reuses it).
    """
    try:
        if Path(path).read_bytes() == code:
            return path
    except OSError:
        pass
    digest = hashlib.sha256(code).hexdigest()[:32]
    directory = private_directory(Path(tempfile.gettempdir()) / f"squall-code-{os.getuid()}",
                                  "the topology's code")
    target = directory / f"{digest}.zip"
    try:
        if target.read_bytes() == code:
            return str(target)
    except OSError:
        pass
    fd, tmp = tempfile.mkstemp(dir=directory, suffix=".zip")
    with os.fdopen(fd, "wb") as f:
        f.write(code)
    os.replace(tmp, target)
    return str(target)


def use_code(path: str) -> None:
    """Put the code zip ``path`` first on ``sys.path`` (each worker is a fresh process)."""
    if path not in sys.path:
        sys.path.insert(0, path)


def _attempt() -> int:
    try:
        from pyspark import TaskContext
    except ImportError:  # run outside Spark (tests of this module)
        return 0
    tc = TaskContext.get()
    return tc.attemptNumber() if tc is not None else 0


def _setup_logging() -> None:
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s squall worker pid {os.getpid()} %(levelname)s "
                                   f"%(name)s: %(message)s")


GC_YOUNG_THRESHOLD = 20_000


def _tune_gc() -> None:
    """Fit the cycle collector to a process that now only runs a worker loop.

    What the process holds once the tasks are open (Spark's and squall's modules, the
    topology) lives as long as it does: frozen, full collections stop walking it. A
    tuple's objects are freed by reference counting, so the young generation is collected
    less often than Python's default of every 700 allocations.
    """
    gc.freeze()
    young, middle, old = gc.get_threshold()
    gc.set_threshold(max(young, GC_YOUNG_THRESHOLD), middle, old)


def run_worker(spec: WorkerSpec) -> dict:
    """Host worker ``spec.index`` until the master stops it; returns how it ended.

    Raises when the worker cannot register or its loop dies, so that Spark retries the
    task (and, past Spark's retries, the master relaunches the job).
    """
    _setup_logging()
    unpin = affinity.pin_process(spec.core)  # before ZeroMQ starts its I/O thread, which inherits it
    ctx = zmq.Context()
    hwm = max(4, int(spec.conf["topology.executor.send.buffer.size"])
              // int(spec.conf["squall.transfer.batch.size"]))
    transport = ZmqTransport(ctx, spec.bind_host, hwm, secret=spec.secret, index=spec.index, port=spec.port)
    link = _MasterLink(ctx, spec, _attempt(), transport.address, transport.nonce)
    restore_rlimit = memory.backstop(spec.memory_limit_mb)
    try:
        welcome = link.register()
        if welcome is None:
            return {"worker": spec.index, "status": "rejected"}
        transport.set_peers(welcome["addresses"], welcome.get("nonces"))
        errors = ErrorLog.from_conf(spec.conf)
        worker = Worker(topology_name=spec.topology_name, topology=spec.topology, conf=spec.conf,
                        plan=spec.plan, index=spec.index, transport=transport, errors=errors,
                        active=bool(welcome["active"]))
        worker.start()
        worker.started.wait()
        if worker.start_error is not None:
            e = worker.start_error
            reason = str(e) if isinstance(e, TopologyStartError) else f"{type(e).__name__}: {e}"
            link.send(co.STARTED, error=reason, errors=errors.list()[-ERRORS_PER_HEARTBEAT:])
            return {"worker": spec.index, "status": "start_failed"}
        link.send(co.STARTED, error=None, errors=[])
        _tune_gc()
        return link.serve(worker, transport, errors)
    finally:
        restore_rlimit()  # Spark may run its next task in this process
        unpin()
        link.close()
        ctx.destroy(linger=0)


def set_tap(worker: Worker, tap: TupleSampler | None) -> None:
    """Install (or remove) the sampling tap, also where a task off the loop thread emits."""
    worker.tap = tap
    for task in list(worker.tasks.values()):
        if task.host is not worker:  # a threaded or async task emits through a host of its own
            task.host.tap = tap


class _MasterLink:
    """The worker's DEALER socket to the topology master."""

    def __init__(self, ctx: zmq.Context, spec: WorkerSpec, attempt: int, address: str,
                 nonce: bytes) -> None:
        if not spec.secret:
            raise ValueError(f"squall worker {spec.index}: no topology secret to talk to the master with")
        self.spec = spec
        self.attempt = attempt
        self.address = address
        self.nonce = nonce
        self.sock = ctx.socket(zmq.DEALER)
        self.identity = co.identity(spec.topology_name, spec.index, spec.launch, attempt, os.getpid())
        self.link = co.Link(spec.secret, self.identity, co.TO_MASTER)
        self.sock.setsockopt(zmq.IDENTITY, self.identity)
        self.sock.setsockopt(zmq.LINGER, 2000)  # let the last message reach the master
        self.sock.setsockopt(zmq.MAXMSGSIZE, co.MAX_MESSAGE_BYTES)
        self.sock.connect(spec.master_address)
        self.last_heard = time.monotonic()

    def send(self, t: str, **fields: Any) -> None:
        fields.update(worker=self.spec.index, launch=self.spec.launch)
        self.sock.send_multipart(self.link.seal(t, **fields), zmq.NOBLOCK)

    def recv(self, timeout: float) -> dict | None:
        """The next authentic message from the master within ``timeout``, else None."""
        deadline = time.monotonic() + timeout
        while self.sock.poll(max(0, int((deadline - time.monotonic()) * 1000))):
            msg = self.link.open(self.sock.recv_multipart())
            if msg is not None:
                self.last_heard = time.monotonic()
                return msg
            if self.link.refused in (1, 10, 100) or self.link.refused % 1000 == 0:
                log.warning("worker %d dropped %d message(s) not from its master (or replayed)",
                            self.spec.index, self.link.refused)
        return None

    def register(self) -> dict | None:
        """Register; the welcome message, or None if the master refused this process."""
        self.send(co.REGISTER, attempt=self.attempt, pid=os.getpid(), host=worker_host(),
                  address=self.address, nonce=self.nonce)
        deadline = time.monotonic() + self.spec.master_timeout_secs
        while time.monotonic() < deadline:
            msg = self.recv(deadline - time.monotonic())
            if msg is None:
                break
            if msg["t"] == co.WELCOME:
                return msg
            if msg["t"] in (co.REJECT, co.STOP):
                log.warning("worker %d launch %d: master refused registration: %s", self.spec.index,
                            self.spec.launch, msg.get("reason", "stop"))
                return None
        raise RuntimeError(f"squall worker {self.spec.index}: topology master at "
                           f"{self.spec.master_address} did not answer within "
                           f"{self.spec.master_timeout_secs:.0f}s")

    def serve(self, worker: Worker, transport: ZmqTransport, errors: ErrorLog) -> dict:
        """Heartbeat and obey the master until told to stop."""
        spec = self.spec
        sent_errors = 0  # ErrorLog's cursor: the errors sent so far
        next_beat = 0.0
        usage = ProcessUsage()  # this process's RSS and CPU, in every heartbeat
        # complete latencies per spout task: fewer the more tasks its component has (coordination)
        latencies = {c: co.latency_samples(len(ts)) for c, ts in spec.plan.component_tasks.items()}
        steps: list[tuple[int, Any, dict]] = []  # live rescale steps queued on the loop thread
        limit = spec.memory_limit_mb
        watch = memory.MemoryWatch(limit) if limit is not None else None
        while True:
            if watch is not None and (rss := watch.over()) is not None:
                self.over_memory(rss, watch.limit_mb)
            if steps:
                ran = [s[1].is_set() for s in steps]
                for (seq, _, box), done in zip(steps, ran, strict=True):
                    if done:
                        self.send(co.RESCALED, seq=seq, **worker_rescale.answer(box))
                steps = [s for s, done in zip(steps, ran, strict=True) if not done]
            now = time.monotonic()
            if now >= next_beat:
                stuck = [dict(s) for s in list(worker.stuck.values())]  # before the errors: see stuck.py
                new, sent_errors = errors.since(sent_errors, ERRORS_PER_HEARTBEAT)
                metrics = [
                    co.metrics_to_dict(t.metrics, latencies.get(t.metrics.component, co.LATENCY_SAMPLES))
                    for t in list(worker.tasks.values())]
                tap = worker.tap
                samples = tap.drain() if isinstance(tap, TupleSampler) else []
                self.send(co.HEARTBEAT, metrics=metrics, errors=new,
                          rejected_frames=transport.rejected_frames,
                          stuck=stuck,
                          corrupt_frames=worker.corrupt_frames, samples=samples,
                          transfer=worker.transfer_stats(), usage=usage.sample())
                next_beat = now + spec.heartbeat_secs
            wait = max(0.0, next_beat - time.monotonic())
            if watch is not None:
                wait = min(wait, memory.CHECK_SECS)
            msg = self.recv(min(wait, 0.002) if steps else wait)
            if msg is not None:
                t = msg["t"]
                if t == co.RESCALE:
                    steps.append((int(msg.get("seq") or 0), *worker_rescale.start_step(worker, msg)))
                elif t == co.ADDRESSES:
                    transport.set_peers(msg["addresses"], msg.get("nonces"))
                elif t in (co.ACTIVATE, co.DEACTIVATE):
                    # confirmed only once applied: the master's deactivate returns then, and
                    # no next_tuple starts after it (at most one spout call away)
                    if worker.set_active(t == co.ACTIVATE).wait(STOP_TIMEOUT):
                        self.send(co.APPLIED, seq=int(msg.get("seq") or 0))
                elif t == co.DEBUG:  # the tap is read on every emit: off, it is None and costs nothing
                    rate = float(msg.get("rate") or 0.0)
                    components = msg.get("components")
                    set_tap(worker, TupleSampler(rate, components, spec.index) if rate > 0 else None)
                elif t in (co.STOP, co.REJECT):
                    worker.stop(graceful=bool(msg.get("graceful", True)))
                    if not worker.join(STOP_TIMEOUT):
                        log.error("worker %d did not stop within %.0fs", spec.index, STOP_TIMEOUT)
                    return {"worker": spec.index, "status": "stopped"}
            if worker.stopped.is_set():
                raise RuntimeError(f"squall worker {spec.index}: its loop thread ended unexpectedly")
            if time.monotonic() - self.last_heard > spec.master_timeout_secs:
                # the master is gone (driver died): do not run on as an orphan
                log.error("worker %d: no word from the topology master for %.0fs; stopping",
                          spec.index, spec.master_timeout_secs)
                worker.stop(graceful=False)
                worker.join(STOP_TIMEOUT)
                return {"worker": spec.index, "status": "orphaned"}

    def over_memory(self, rss_mb: float, limit_mb: float) -> None:
        """End this process: its RSS is over its memory limit (``squall.spark.memory``); never returns.

        Not a graceful stop: that waits on the loop thread, which may be the one allocating.
        The master's ``stop`` proves it has the reason; without it, the master still sees
        the worker's Spark job end.
        """
        log.error("worker %d: RSS %.0f MB is over its memory limit of %.0f MB; ending the process "
                  "(exit status %d), the master relaunches it", self.spec.index, rss_mb, limit_mb,
                  memory.EXIT_CODE)
        try:
            self.send(co.MEMORY, rss_mb=rss_mb, limit_mb=limit_mb)
            deadline = time.monotonic() + memory.REASON_WAIT
            while (left := deadline - time.monotonic()) > 0:
                msg = self.recv(left)
                if msg is None or msg["t"] in (co.STOP, co.REJECT):
                    break
        except Exception:  # noqa: BLE001 - the process ends whatever happens here
            log.exception("worker %d: the memory stop could not be reported", self.spec.index)
        finally:
            logging.shutdown()  # flush the log lines above: os._exit skips it
            os._exit(memory.EXIT_CODE)

    def close(self) -> None:
        self.sock.close()
