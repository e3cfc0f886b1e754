"""The acked word count submitted N times to one SparkCluster: ``python -m benchmarks.spread``.

    python -m benchmarks.spread [--runs 10] [--warmup 1] [--duration 3] [--workers 2]
                                [--hash-seed inherit|fixed|random|N] [--no-daemon]
                                [--pin none|workers|loops|squall|unpinned] [--rate R]
                                [--calibrate] [--conf KEY=VALUE ...] [--gc default|off]
                                [--malloc-arena-max N] [--pythonmalloc malloc|pymalloc]

Starts one ``SparkCluster`` (``local[N]``, as the ``squall-spark`` system of the benchmarks)
and submits the ``wordcount`` workload's acked case to it ``--runs`` times in a row, each
with the quick profile's warm-up and measured window. Per submission it prints:

- ``sent/s``: acked sentences per second in the window (the spouts' probes, as the bench);
- ``us/sent``: CPU (user + system) of the worker processes in the window per acked
  sentence, from ``/proc/<pid>/stat``; ``drv``: the same for this process (the driver and
  topology master) and ``jvm`` for Spark's JVM: CPU per sentence moves less with other
  load on the machine than a rate does;
- ``frames`` and ``rounds``: frames sent between workers and the workers' loop rounds, per
  acked sentence over the whole submission (the workers' heartbeats, ``transfer_stats``);
- ``steal``: the share of the machine's CPU time the hypervisor gave to others meanwhile;
- per worker: its busiest thread's core (``c0 97%``: seen on core 0 in 97% of samples) and
  that of its ZeroMQ I/O thread, each with the cores it used in the window (``0.71``: 0.71
  CPU seconds a second), the other threads' together (``rest``), the thread migrations
  seen, and the tasks it holds
  (``A``: an acker, ``se``: the sentence spout, ...);
- the workers' ``PYTHONHASHSEED`` (from ``/proc/<pid>/environ``).

``--calibrate`` times a fixed pure-Python word count (no squall), one process pinned to each
core at once, before and after each submission (once its workers have exited), and
correlates it with the workers' CPU per sentence: whether the machine or squall's processes
moved. ``--rate`` paces the spouts as the ``latency`` workload does and adds each
submission's p50 and p99 (emit -> ack). Then max ÷ min of the rates and of the CPU per
sentence.

The options test what could make one submission differ from the next:
``--hash-seed`` sets ``PYTHONHASHSEED`` for Spark's Python workers before the cluster starts
(``inherit``: this process's, which PySpark turns into ``0`` when unset; ``fixed``: 0;
``random``: a new seed per Python process, so per submission only with ``--no-daemon``, as
workers forked from PySpark's daemon share its seed); ``--no-daemon`` sets
``spark.python.use.daemon=false`` (each worker a fresh interpreter, not a fork);
``--pin workers`` pins every thread of worker i to core i (mod the cores) once it runs,
``--pin loops`` only its busiest thread (the worker's loop; ZeroMQ's I/O thread stays free);
``--pin squall`` and ``--pin unpinned`` set ``squall.spark.worker.cpu.pin`` (the worker pins
itself, before its sockets open) on or off;
``--gc off`` turns the workers' cycle collector off in the spout's ``open``;
``--malloc-arena-max`` and ``--pythonmalloc`` set glibc's and Python's allocator variables
for the workers.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.peers._common import Window
from benchmarks.peers._measure import children, figures, read_probes
from benchmarks.scale_data import cpu_secs
from benchmarks.workloads import MAX_RATE, QUICK, make_case
from benchmarks.workloads import wordcount as wc
from benchmarks.workloads.components import SentenceSpout
from squall.spark.affinity import threads

CLK_TCK = os.sysconf("SC_CLK_TCK")
SAMPLE_SECS = 0.05  # how often each worker thread's core is looked at
SPREAD_TARGET = 1.25  # issue 40: max / min over ten submissions


class GcSpout(SentenceSpout):
    """The bench's sentence spout, which can turn its worker's cycle collector off."""

    def __init__(self, probe_dir: str, gc_mode: str = "default", rate_tps: float | None = None) -> None:
        super().__init__(probe_dir, rate_tps)
        self.gc_mode = gc_mode

    def open(self, conf: dict, context: Any, collector: Any) -> None:
        if self.gc_mode == "off":
            import gc

            gc.disable()  # squall's own GC tuning after start only sets thresholds
        super().open(conf, context, collector)


def worker_env(hash_seed: str, *, malloc_arena_max: int | None = None,
               pythonmalloc: str | None = None) -> dict[str, str]:
    """The variables to set in this process before Spark starts, for its Python workers.

    PySpark hands the executors ``PYTHONHASHSEED`` from this process's environment, ``0``
    when it is unset; the other variables reach them through the JVM's environment.
    """
    out: dict[str, str] = {}
    if hash_seed == "inherit":
        pass
    elif hash_seed == "fixed":
        out["PYTHONHASHSEED"] = "0"
    elif hash_seed == "random":
        out["PYTHONHASHSEED"] = "random"
    elif hash_seed.isdigit() and int(hash_seed) <= 4294967295:
        out["PYTHONHASHSEED"] = hash_seed
    else:
        raise ValueError(f"--hash-seed must be inherit, fixed, random or 0..4294967295, not {hash_seed!r}")
    if malloc_arena_max is not None:
        out["MALLOC_ARENA_MAX"] = str(malloc_arena_max)
    if pythonmalloc is not None:
        out["PYTHONMALLOC"] = pythonmalloc
    return out


def pin_plan(worker_pids: dict[int, int], cores: list[int]) -> dict[int, set[int]]:
    """``--pin workers``: each worker process's pid -> the one core its threads run on.

    Worker ``i`` gets ``cores[i % len(cores)]``, so two workers on two cores never share one.
    """
    if not cores:
        raise ValueError("no cores to pin to")
    return {pid: {cores[index % len(cores)]} for index, pid in worker_pids.items()}


def pin(pid: int, cpus: set[int]) -> int:
    """Pin every thread of process ``pid`` to ``cpus``; the threads pinned.

    ``sched_setaffinity`` of a pid sets only that thread's mask: each of ``/proc/<pid>/task``
    is set. Threads started later inherit the mask of the thread that starts them.
    """
    done = 0
    for tid in threads(pid):
        try:
            os.sched_setaffinity(tid, cpus)
            done += 1
        except OSError:  # the thread ended meanwhile
            pass
    return done


def _wait_gone(pids: list[int], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while any(os.path.exists(f"/proc/{pid}") for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)


def busiest_thread(pid: int, seconds: float = 0.3) -> int:
    """The thread of ``pid`` that used the most CPU over the next ``seconds`` (a worker's loop)."""
    before = {tid: (read_stat(f"/proc/{pid}/task/{tid}/stat") or ("", 0.0, 0))[1] for tid in threads(pid)}
    time.sleep(seconds)
    used = {tid: (read_stat(f"/proc/{pid}/task/{tid}/stat") or ("", 0.0, 0))[1] - cpu
            for tid, cpu in before.items()}
    return max(used, key=lambda tid: used[tid])


def parse_stat(text: str) -> tuple[str, float, int]:
    """(comm, user + system CPU seconds, last core) from a ``/proc/.../stat`` line.

    ``comm`` is in parentheses and may itself hold spaces and parentheses: the fields are
    counted from the last ``)``.
    """
    left, right = text.index("("), text.rindex(")")
    comm = text[left + 1:right]
    rest = text[right + 2:].split()  # rest[0] is field 3 (state)
    utime, stime = int(rest[11]), int(rest[12])  # fields 14 and 15
    return comm, (utime + stime) / CLK_TCK, int(rest[36])  # field 39: processor


def read_stat(path: str) -> tuple[str, float, int] | None:
    try:
        with open(path) as f:
            return parse_stat(f.read())
    except (OSError, ValueError, IndexError):
        return None


def steal_ticks() -> tuple[int, int]:
    """(steal, total) ticks of the machine from ``/proc/stat``."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return (fields[7] if len(fields) > 7 else 0), sum(fields[:8])


def hash_seed_of(pid: int) -> str:
    """``PYTHONHASHSEED`` in process ``pid``'s environment ("unset", or "?" if unreadable)."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return "?"
    for item in raw.split(b"\0"):
        if item.startswith(b"PYTHONHASHSEED="):
            return item.split(b"=", 1)[1].decode()
    return "unset"


def jvm_pid() -> int | None:
    """Spark's JVM: the ``java`` child of this process."""
    for pid in children().get(os.getpid(), []):
        stat = read_stat(f"/proc/{pid}/stat")
        if stat and stat[0] == "java":
            return pid
    return None


class CoreSampler:
    """Samples, every ``SAMPLE_SECS``, which core each thread of the given processes is on."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.cores: dict[tuple[int, int], list[int]] = {}  # (pid, tid) -> cores seen
        self.comm: dict[tuple[int, int], str] = {}
        self.cpu0: dict[tuple[int, int], float] = {}
        self.cpu1: dict[tuple[int, int], float] = {}
        self.t0 = self.t1 = 0.0  # monotonic time of the first and the last sample
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="spread-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        self.t0 = self.t1 = time.monotonic()
        while not self._stop.is_set():
            for pid in self.pids:
                for tid in threads(pid):
                    stat = read_stat(f"/proc/{pid}/task/{tid}/stat")
                    if stat is None:
                        continue
                    key = (pid, tid)
                    self.comm[key] = stat[0]
                    self.cpu0.setdefault(key, stat[1])
                    self.cpu1[key] = stat[1]
                    self.cores.setdefault(key, []).append(stat[2])
            self.t1 = time.monotonic()
            self._stop.wait(SAMPLE_SECS)

    def describe(self, pid: int) -> str:
        """``loop c0 97% 0.71 io c1 60% 0.12 rest 0.01 mig 3``: where the threads ran and what they used.

        The busiest thread's and the ZeroMQ I/O thread's cores, each with the cores it used
        (CPU seconds per second sampled), the other threads' together, the migrations.
        """
        keys = [k for k in self.cores if k[0] == pid]
        if not keys:
            return "no samples"
        used = {k: self.cpu1[k] - self.cpu0[k] for k in keys}
        busiest = max(keys, key=lambda k: used[k])
        io = [k for k in keys if self.comm[k].startswith("ZMQbg/IO") and k != busiest]
        span = max(1e-9, self.t1 - self.t0)
        parts = [f"loop {_core_share(self.cores[busiest])} {used[busiest] / span:.2f}"]
        if io:
            parts.append(f"io {_core_share(self.cores[io[0]])} {sum(used[k] for k in io) / span:.2f}")
        rest = sum(used[k] for k in keys if k != busiest and k not in io)
        parts.append(f"rest {rest / span:.2f}")
        migrations = sum(_changes(self.cores[k]) for k in keys)
        parts.append(f"mig {migrations}")
        return " ".join(parts)


def _core_share(seen: list[int]) -> str:
    core = max(set(seen), key=seen.count)
    return f"c{core} {seen.count(core) / len(seen):.0%}"


def _changes(seen: list[int]) -> int:
    return sum(1 for a, b in zip(seen, seen[1:], strict=False) if a != b)


CALIBRATION_SENTENCES = 200_000  # about 0.15 s


def calibrate(sentences: int = CALIBRATION_SENTENCES) -> float:
    """CPU µs per sentence of a fixed pure-Python word count (split, dict count) in this process.

    No squall, no sockets: what it moves by is the machine's speed for this kind of code
    (a neighbour on the host's shared core or cache shows here, not as steal).
    """
    from benchmarks.peers._common import SENTENCES

    counts: dict[str, int] = {}
    start = time.process_time()
    for i in range(sentences):
        for word in SENTENCES[i % len(SENTENCES)].split(" "):
            counts[word] = counts.get(word, 0) + 1
    return (time.process_time() - start) * 1e6 / sentences


CALIBRATE_CODE = ("import os, sys; os.sched_setaffinity(0, {int(sys.argv[1])}); "
                  "from benchmarks.spread import calibrate; print(calibrate())")


def calibrate_cores(cores: list[int] | None = None) -> float:
    """``calibrate`` on every core at once (a process pinned to each): their mean µs per sentence."""
    import subprocess
    import sys

    cores = sorted(os.sched_getaffinity(0)) if cores is None else cores
    root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=root)
    procs = [subprocess.Popen([sys.executable, "-c", CALIBRATE_CODE, str(core)], env=env,
                              stdout=subprocess.PIPE, text=True) for core in cores]
    return statistics.mean(float(p.communicate()[0]) for p in procs)


def correlation(xs: list[float], ys: list[float]) -> float:
    """Pearson's r of two series (nan when either is constant or shorter than 3)."""
    if len(xs) < 3 or len(xs) != len(ys):
        return float("nan")
    try:
        return statistics.correlation(xs, ys)
    except statistics.StatisticsError:
        return float("nan")


def conf_item(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` of ``--conf``; the value read as JSON when it parses (numbers, true), else a string."""
    import json

    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"--conf wants KEY=VALUE, not {text!r}")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


def spread(values: list[float]) -> float:
    """Max ÷ min of ``values`` (nan when fewer than two or a zero)."""
    vals = [v for v in values if v is not None]
    if len(vals) < 2 or min(vals) <= 0:
        return float("nan")
    return max(vals) / min(vals)


def wait_running(cluster: Any, name: str, workers: int, timeout: float = 60.0) -> dict:
    """The topology's info once its ``workers`` processes have registered and started."""
    deadline = time.monotonic() + timeout
    while True:
        info = cluster.get_topology_info(name)
        running = [w for w in info["workers"] if w.get("state") == "RUNNING" and w.get("pid")]
        if len(running) >= workers:
            return info
        if time.monotonic() > deadline:
            raise TimeoutError(f"{name}: {len(running)} of {workers} workers running after {timeout:.0f}s")
        time.sleep(0.05)


def task_labels(info: dict) -> dict[int, str]:
    """Task id -> its component's first two letters (``A``: an acker; ``?``: a system task)."""
    labels = {}
    for component, c in info["components"].items():
        letter = "A" if "acker" in component else component[:2]
        for task in c.get("tasks", []):
            labels[task] = letter
    return labels


def submission(cluster: Any, index: int, args: argparse.Namespace, watch: Any = None) -> dict[str, Any]:
    """Submit the acked word count once, measure its window, kill it; its figures.

    ``watch`` (``benchmarks.tail``) is started with the workers' pids when the window opens,
    stopped when it closes and given the spouts' latency pairs; with it, the core sampler
    does not run (its thread would be one more in the window).
    """
    case = make_case("wordcount", MAX_RATE, "squall-spark",
                     QUICK, acking=True, workers=args.workers)
    case["warmup_s"], case["duration_s"] = args.warmup, args.duration
    name = f"spread-{index}"
    cal = [calibrate_cores()] if args.calibrate else []
    with tempfile.TemporaryDirectory(prefix="squall-spread-", ignore_cleanup_errors=True) as probe_dir:
        topology = _topology(probe_dir, args.workers, GcSpout(probe_dir, args.gc, args.rate))
        conf = wc.squall_conf(case)
        conf.update(args.conf)
        if args.pin in ("squall", "unpinned"):
            conf["squall.spark.worker.cpu.pin"] = args.pin == "squall"
        cluster.submit_topology(name, conf, topology)
        try:
            window = Window(args.warmup, args.duration)  # from submit's return, as the bench
            info = wait_running(cluster, name, args.workers)
            pids = {w["worker"]: w["pid"] for w in info["workers"]}
            if args.pin in ("workers", "loops"):
                cores = sorted(os.sched_getaffinity(0))
                for pid, cpus in pin_plan(pids, cores).items():
                    if args.pin == "workers":
                        pin(pid, cpus)
                    else:  # the loop thread only: the busiest of the process
                        os.sched_setaffinity(busiest_thread(pid), cpus)
            jvm = jvm_pid()
            sampler = CoreSampler(list(pids.values()) if watch is None else [])
            window.sleep_until(window.t0)
            if watch is not None:
                watch.start(pids, jvm)
            sampler.start()
            cpu0 = {pid: cpu_secs(pid) for pid in pids.values()}
            drv0, jvm0 = cpu_secs(os.getpid()), cpu_secs(jvm) if jvm else 0.0
            steal0 = steal_ticks()
            window.sleep_until(window.t1)
            cpu1 = {pid: cpu_secs(pid) for pid in pids.values()}
            drv1, jvm1 = cpu_secs(os.getpid()), cpu_secs(jvm) if jvm else 0.0
            steal1 = steal_ticks()
            sampler.stop()
            if watch is not None:
                watch.stop()
            seeds = sorted({hash_seed_of(pid) for pid in pids.values()})
            window.sleep_until(window.t1 + 0.35)  # every probe's next flush
            end = cluster.get_topology_info(name)
        finally:
            cluster.kill_topology(name, wait_secs=0)
        if args.calibrate:
            _wait_gone(list(pids.values()))
            cal.append(calibrate_cores())  # the window is bracketed: the machine's speed before and after
        acked, latencies = read_probes(probe_dir, "-spout")
        sink, _ = read_probes(probe_dir, "-sink")
    if watch is not None:
        watch.latencies(latencies, window.t0, window.t1)
    measured = figures(case, window.t0, window.t1, sink=sink, acked=acked, latencies=latencies)
    tps = measured["throughput_tps"] or 0.0
    sentences = tps * (window.t1 - window.t0)
    per = 1e6 / sentences if sentences else float("nan")
    frames = sum(int(w.get("transfer", {}).get("frames", 0)) for w in end["workers"])
    rounds = sum(int(w.get("transfer", {}).get("rounds", 0)) for w in end["workers"])
    total_acked = sum(s[-1][1] for s in acked if s)
    steal = (steal1[0] - steal0[0]) / max(1, steal1[1] - steal0[1])
    labels = task_labels(end)
    placement = []
    for w in sorted(end["workers"], key=lambda w: w["worker"]):
        tasks = " ".join(sorted(labels.get(t, "?") for t in w.get("tasks", [])))
        placement.append(f"w{w['worker']} [{tasks}] {sampler.describe(pids.get(w['worker'], -1))}")
    return {"index": index, "tps": tps,
            "us_per_sentence": sum(cpu1[p] - cpu0[p] for p in cpu0) * per,
            "driver_us": (drv1 - drv0) * per, "jvm_us": (jvm1 - jvm0) * per,
            "frames_per_sentence": frames / total_acked if total_acked else float("nan"),
            "rounds_per_sentence": rounds / total_acked if total_acked else float("nan"),
            "steal": steal, "placement": placement, "hash_seeds": seeds,
            "load": os.getloadavg()[0], "p50_ms": measured.get("latency_p50_ms"),
            "p99_ms": measured.get("latency_p99_ms"),
            "calibration_us": statistics.mean(cal) if cal else None}


def _topology(probe_dir: str, workers: int, spout: Any) -> Any:
    """The bench's word count (``benchmarks.workloads.wordcount``) with ``spout``."""
    from benchmarks.workloads.components import SplitSentence, WordCount
    from squall import Fields, TopologyBuilder

    builder = TopologyBuilder()
    builder.set_spout("sentence", spout, parallelism=workers)
    builder.set_bolt("split", SplitSentence(), parallelism=workers).shuffle_grouping("sentence")
    builder.set_bolt("count", WordCount(probe_dir),
                     parallelism=workers).fields_grouping("split", Fields("word"))
    return builder.create_topology()


def line(row: dict[str, Any]) -> str:
    return (f"{row['index']:>3} {row['tps']:>10,.0f} {row['us_per_sentence']:>7.1f} "
            f"{row['driver_us']:>5.1f} {row['jvm_us']:>5.1f} {row['frames_per_sentence']:>7.4f} "
            f"{row['rounds_per_sentence']:>6.3f} "
            f"{row['steal']:>6.1%} {row['load']:>5.1f} {_ms(row['p50_ms']):>5} {_ms(row['p99_ms']):>6} "
            f"{'-' if row['calibration_us'] is None else format(row['calibration_us'], '.3f'):>5}  "
            f"{','.join(row['hash_seeds'])}  "
            + " | ".join(row["placement"]))


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


HEADER = ("  #     sent/s us/sent   drv   jvm  frames rounds  steal  load   p50    p99   cal  seed  "
          "workers: [tasks] busiest thread's core and cores used, ZeroMQ I/O thread's, the rest, migrations")


def summary(rows: list[dict[str, Any]]) -> str:
    """The max ÷ min lines of a series."""
    rates = [r["tps"] for r in rows]
    cpu = [r["us_per_sentence"] for r in rows]
    ratio = spread(rates)
    verdict = "within" if ratio <= SPREAD_TARGET else "over"
    p99 = sorted(r["p99_ms"] for r in rows if r.get("p99_ms") is not None)
    tail = f"; p99 {', '.join(f'{v:.1f}' for v in p99)} ms" if p99 else ""
    cal = [r["calibration_us"] for r in rows if r.get("calibration_us") is not None]
    if len(cal) == len(rows):
        tail += (f"; calibration {min(cal):.2f}-{max(cal):.2f} us/sent (max/min {spread(cal):.2f}), "
                 f"r(calibration, us/sent) {correlation(cal, cpu):.2f}")
    return (f"sent/s {min(rates):,.0f}-{max(rates):,.0f}, median {statistics.median(rates):,.0f}: "
            f"max/min {ratio:.2f} ({verdict} {SPREAD_TARGET}); us/sent "
            f"{min(cpu):.1f}-{max(cpu):.1f}: max/min {spread(cpu):.2f}{tail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.spread", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="submissions (default 10)")
    parser.add_argument("--warmup", type=float, default=QUICK.warmup_s)
    parser.add_argument("--duration", type=float, default=QUICK.duration_s)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rate", type=float, help="pace the spouts at this many sentences/s in all "
                                                   "(the latency workload's cases), for p99 by submission")
    parser.add_argument("--hash-seed", default="inherit",
                        help="the Python workers' PYTHONHASHSEED: inherit, fixed (0), random, or a number")
    parser.add_argument("--no-daemon", action="store_true",
                        help="spark.python.use.daemon=false: each worker a fresh interpreter, not a fork")
    parser.add_argument("--pin", choices=("none", "workers", "loops", "squall", "unpinned"), default="none",
                        help="workers: every thread of worker i on core i (mod the cores), set from here; "
                             "loops: only its busiest thread (the worker's loop), the others left to the "
                             "kernel; squall / unpinned: squall.spark.worker.cpu.pin true / false in the "
                             "topology's conf; none: squall's default")
    parser.add_argument("--gc", choices=("default", "off"), default="default")
    parser.add_argument("--conf", type=conf_item, action="append", default=[], metavar="KEY=VALUE",
                        help="a topology setting for every submission (repeatable), e.g. "
                             "squall.transfer.batch.time.ms=0.5")
    parser.add_argument("--calibrate", action="store_true",
                        help="time a fixed pure-Python word count in this process before and after each "
                             "submission (the machine's own speed), and correlate it with us/sent")
    parser.add_argument("--malloc-arena-max", type=int)
    parser.add_argument("--pythonmalloc", choices=("malloc", "pymalloc"))
    args = parser.parse_args(argv)
    if args.runs < 1 or args.workers < 1 or args.duration <= 0 or args.warmup < 0 or \
            (args.rate is not None and args.rate <= 0):
        parser.error("--runs and --workers must be at least 1, --duration and --rate above 0, "
                     "--warmup not below 0")
    try:
        env = worker_env(args.hash_seed, malloc_arena_max=args.malloc_arena_max,
                         pythonmalloc=args.pythonmalloc)
    except ValueError as e:
        parser.error(str(e))
    os.environ.update(env)
    from benchmarks.squall_runner import LOG_DIR, spark_master
    from squall.spark import SparkCluster

    spark_conf = {"spark.python.use.daemon": "false"} if args.no_daemon else None
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    print(f"spread: {args.runs} submissions of the acked word count, {args.workers} workers, "
          f"{args.warmup:g}s warm-up + {args.duration:g}s measured, "
          f"{f'paced at {args.rate:,.0f}/s' if args.rate else 'unpaced'}; hash seed {args.hash_seed}, "
          f"daemon {'off' if args.no_daemon else 'on'}, pin {args.pin}, gc {args.gc}, env {env or '{}'}, "
          f"conf {dict(args.conf) or '{}'}; "
          f"load {os.getloadavg()[0]:.2f}", flush=True)
    rows: list[dict[str, Any]] = []
    with SparkCluster(master=spark_master(args.workers), log_dir=str(LOG_DIR),
                      spark_conf=spark_conf) as cluster:
        cluster.start()
        print(HEADER, flush=True)
        for i in range(1, args.runs + 1):
            row = submission(cluster, i, args)
            rows.append(row)
            print(line(row), flush=True)
    print(summary(rows), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
