"""Simulated workers for the control-plane scale benchmark (``benchmarks.scale``).

A simulated worker speaks the real coordination protocol (``squall.spark.coordination``:
sealed ``register``, ``started``, ``heartbeat`` with realistic task metrics, ``applied``)
to a real ``TopologyMaster``, but runs no tasks and binds no data socket. Many of them
share one process (a ``_pool`` process: one thread, one ZeroMQ context, one DEALER per
worker process), so 1,000 workers fit in a few processes.

``SimJobs`` stands in for ``squall.spark.jobs.SparkJobs`` (the only part of the master
replaced): ``start`` launches a simulated worker in a pool instead of a Spark job,
``cancel`` closes it as ``cancelJobGroup`` would interrupt it.
"""

from __future__ import annotations

import heapq
import multiprocessing as mp
import os
import random
import socket
import time
from multiprocessing.connection import Connection
from typing import Any

import zmq

from squall import Bolt, Fields, Spout, TopologyBuilder
from squall.runtime.metrics import TaskMetrics, bucket_index
from squall.runtime.plan import TaskPlan, make_plan
from squall.runtime.submission import prepare_conf, prepare_topology
from squall.spark import coordination as co

SPOUTS_PER_WORKER = 2
BOLTS_PER_WORKER = 8  # 4 split + 4 count: 10 user tasks per worker, plus its acker


class WordSpout(Spout):
    """Never runs here: the plan only needs its shape."""

    def next_tuple(self) -> None:
        pass

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word"))


class CountBolt(Bolt):
    """Never runs here: the plan only needs its shape."""

    def execute(self, tup: Any) -> None:
        pass

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("word", "count"))


def word_count(workers: int, extra_conf: dict | None = None) -> tuple[Any, dict, TaskPlan]:
    """A word count of 10 user tasks (2 spouts, 8 bolts) and one acker per worker."""
    b = TopologyBuilder()
    b.set_spout("spout", WordSpout(), parallelism=SPOUTS_PER_WORKER * workers)
    b.set_bolt("split", CountBolt(), parallelism=BOLTS_PER_WORKER // 2 * workers).shuffle_grouping("spout")
    b.set_bolt("count", CountBolt(), parallelism=BOLTS_PER_WORKER // 2 * workers).fields_grouping(
        "split", Fields("word"))
    topology = b.create_topology()
    conf = prepare_conf({"topology.workers": workers, **(extra_conf or {})}, topology)
    topology = prepare_topology(topology, conf)
    return topology, conf, make_plan(topology, conf)


def task_metrics(plan: TaskPlan, worker: int, rng: random.Random) -> list[dict]:
    """What a busy worker's heartbeat carries for its tasks.

    Counters, histograms, streams and, for each spout task, ``LATENCY_SAMPLES`` recent
    complete latencies (as a worker ships them).
    """
    out = []
    for task in plan.worker_tasks(worker):
        component = plan.task_component[task]
        if component.startswith("__") and component != "__acker":
            continue
        big = [rng.randint(10**5, 10**7) for _ in range(4)]
        m = TaskMetrics(component, task, emitted=big[0], transferred=big[1], acked=big[2], executed=big[3],
                        exec_sampled_ms=1234.5, exec_samples=20_000, process_ms=2345.6,
                        process_samples=20_000, capacity=0.3)
        for _ in range(50):
            m.exec_hist[bucket_index(rng.expovariate(1.0))] += 1
        if component == "spout":  # a busy spout's ring holds more than a heartbeat ships
            for _ in range(co.LATENCY_SAMPLES):
                ms = rng.lognormvariate(1.5, 0.8)
                m.complete_recent.append(ms)
                m.complete_hist[bucket_index(ms)] += 1
            m.complete_ms, m.complete_samples = 9000.0, co.LATENCY_SAMPLES
        d = co.metrics_to_dict(m, co.latency_samples(len(plan.component_tasks[component])))
        d["streams"] = {"out": {"default": [m.emitted, m.transferred]}, "in": {}}
        out.append(d)
    return out


class _SimWorker:
    """One simulated worker process: its DEALER, its sealed link, its heartbeat."""

    def __init__(self, ctx: zmq.Context, spec: dict, metrics: list[dict]) -> None:
        self.index, self.launch = spec["index"], spec["launch"]
        self.pid = os.getpid()
        self.identity = co.identity(spec["name"], self.index, self.launch, 0, self.pid)
        self.link = co.Link(spec["secret"], self.identity, co.TO_MASTER)
        self.sock = ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.IDENTITY, self.identity)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.MAXMSGSIZE, co.MAX_MESSAGE_BYTES)
        self.sock.connect(spec["master"])
        self.metrics = metrics
        self.started = False
        self.silent = False
        self.asked_at = time.monotonic()
        self.send(co.REGISTER, attempt=0, pid=self.pid, host=socket.gethostname(),
                  address=f"tcp://127.0.0.1:{40000 + self.index}", nonce=os.urandom(8))

    def send(self, t: str, **fields: Any) -> int:
        fields.update(worker=self.index, launch=self.launch)
        parts = self.link.seal(t, **fields)
        self.sock.send_multipart(parts, zmq.NOBLOCK)
        return len(parts[1])

    def beat(self) -> int:
        """Send a heartbeat; its size in bytes."""
        for m in self.metrics:  # counters move, as in a busy worker
            m["emitted"] += 1000
            m["executed"] += 1000
        return self.send(co.HEARTBEAT, metrics=self.metrics, errors=[], rejected_frames=0, stuck=[],
                  corrupt_frames=0, samples=[], transfer={"sent": 1, "received": 1},
                  usage={"rss": 100 << 20, "cpu": 0.05})


def _pool(conn: Connection, heartbeat: float, plan: TaskPlan) -> None:
    """A process hosting many simulated workers; obeys ``(command, ...)`` tuples on ``conn``."""
    ctx = zmq.Context()
    ctx.set(zmq.MAX_SOCKETS, 8192)
    poller = zmq.Poller()
    poller.register(conn.fileno(), zmq.POLLIN)
    by_sock: dict[zmq.Socket, _SimWorker] = {}
    by_index: dict[int, _SimWorker] = {}
    beats: list[tuple[float, int, int]] = []  # (due, index, launch)
    rng = random.Random(os.getpid())
    metrics_cache: dict[int, list[dict]] = {}
    stats = {"register_wait_max": 0.0, "late_welcomes": 0, "welcomes": 0, "address_msgs": 0,
             "address_bytes": 0, "heartbeats": 0, "heartbeat_bytes": 0}
    master_timeout = 30.0
    w: _SimWorker | None

    def close(w: _SimWorker) -> None:
        poller.unregister(w.sock)
        by_sock.pop(w.sock, None)
        if by_index.get(w.index) is w:
            del by_index[w.index]
        w.sock.close(linger=0)

    while True:
        timeout = max(0.0, beats[0][0] - time.monotonic()) if beats else 1.0
        for sock, _ in poller.poll(int(timeout * 1000) + 1):
            if sock == conn.fileno():
                cmd = conn.recv()
                if cmd[0] == "launch":
                    spec = cmd[1]
                    old = by_index.get(spec["index"])
                    if old is not None:
                        close(old)
                    metrics = metrics_cache.get(spec["index"])
                    if metrics is None:
                        metrics = metrics_cache[spec["index"]] = task_metrics(plan, spec["index"], rng)
                    new = _SimWorker(ctx, spec, metrics)
                    by_sock[new.sock] = by_index[new.index] = new
                    poller.register(new.sock, zmq.POLLIN)
                elif cmd[0] == "cancel":
                    w2 = by_index.get(cmd[1])
                    if w2 is not None and w2.launch == cmd[2]:
                        close(w2)
                elif cmd[0] == "silence":
                    if cmd[1] in by_index:
                        by_index[cmd[1]].silent = True
                elif cmd[0] == "stats":
                    t = os.times()
                    conn.send({**stats, "cpu": t.user + t.system, "workers": len(by_index)})
                elif cmd[0] == "exit":
                    for w in list(by_sock.values()):
                        close(w)
                    ctx.term()
                    conn.send("bye")
                    return
                continue
            w = by_sock.get(sock)
            while w is not None:
                try:
                    parts = w.sock.recv_multipart(zmq.NOBLOCK)
                except zmq.Again:
                    break
                msg = w.link.open(parts)
                if msg is None or w.silent:
                    continue
                t = msg["t"]
                if t == co.WELCOME:
                    wait = time.monotonic() - w.asked_at
                    stats["welcomes"] += 1
                    stats["register_wait_max"] = max(stats["register_wait_max"], wait)
                    stats["late_welcomes"] += wait > master_timeout  # a real worker gives up at 30 s
                    w.started = True
                    w.send(co.STARTED, error=None, errors=[])
                    heapq.heappush(beats, (time.monotonic() + rng.random() * heartbeat, w.index, w.launch))
                elif t == co.ADDRESSES:
                    stats["address_msgs"] += 1
                    stats["address_bytes"] += len(parts[1])
                elif t in (co.ACTIVATE, co.DEACTIVATE):
                    w.send(co.APPLIED, seq=int(msg.get("seq") or 0))
                elif t in (co.STOP, co.REJECT):
                    close(w)
                    w = None
        now = time.monotonic()
        while beats and beats[0][0] <= now:
            _, index, launch = heapq.heappop(beats)
            w = by_index.get(index)
            if w is None or w.launch != launch:
                continue
            if not w.silent:
                stats["heartbeat_bytes"] += w.beat()
                stats["heartbeats"] += 1
            heapq.heappush(beats, (now + heartbeat, index, launch))


class SimJobs:
    """``SparkJobs``'s part the master uses, launching simulated workers in ``pools`` processes."""

    def __init__(self, name: str, secret: bytes, master: str, plan: TaskPlan, heartbeat: float,
                 pools: int = 4) -> None:
        self.name, self.secret, self.master, self.plan = name, secret, master, plan
        ctx = mp.get_context("spawn")
        self._conns: list[Connection] = []
        self._procs = []
        for _ in range(pools):
            ours, theirs = ctx.Pipe()
            p = ctx.Process(target=_pool, args=(theirs, heartbeat, plan), daemon=True)
            p.start()
            self._conns.append(ours)
            self._procs.append(p)
        self.launches: list[tuple[int, int, float]] = []  # (index, launch, when)

    def _to(self, index: int, *cmd: Any) -> None:
        self._conns[index % len(self._conns)].send(cmd)

    def start(self, spec: Any) -> None:
        """Launch worker ``spec.index``'s launch ``spec.launch`` (called on the master's loop)."""
        self.launches.append((spec.index, spec.launch, time.monotonic()))
        self._to(spec.index, "launch", {"index": spec.index, "launch": spec.launch, "name": self.name,
                                        "secret": self.secret, "master": self.master})

    def cancel(self, index: int, launch: int) -> None:
        """As ``cancelJobGroup``: that launch's process goes away."""
        self._to(index, "cancel", index, launch)

    def threads(self) -> list:
        """No job threads: the master's stop has nothing to join."""
        return []

    def silence(self, index: int) -> None:
        """Worker ``index`` hangs: it stops sending anything (its process stays)."""
        self._to(index, "silence", index)

    def stats(self) -> dict:
        """The pools' figures, summed (``register_wait_max``: the largest)."""
        total: dict = {}
        for c in self._conns:
            c.send(("stats",))
        for c in self._conns:
            for k, v in c.recv().items():
                total[k] = max(total.get(k, 0), v) if k == "register_wait_max" else total.get(k, 0) + v
        return total

    def close(self) -> None:
        """End the pool processes."""
        for c in self._conns:
            try:
                c.send(("exit",))
                c.poll(5) and c.recv()
            except (OSError, EOFError):
                pass
        for p in self._procs:
            p.join(5)
            if p.is_alive():
                p.kill()
