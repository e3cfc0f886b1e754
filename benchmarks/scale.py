"""The control plane at 10 to 1,000 workers: ``python -m benchmarks.scale [--quick]``.

The real topology master (``squall.spark.master.TopologyMaster``, the code that runs on
the Spark driver) and the real store writes of its application (``TopologyApp``'s
heartbeat: ``masters/NAME``, ``taskbeats/NAME``, ``taskerrors/NAME``, ``assignments/NAME``)
run against N simulated workers (``benchmarks.scale_sim``: the real sealed coordination
protocol, 10 user tasks and an acker each, heartbeats with realistic metrics and 2,000
latency samples per spout task every second), served from a few processes. Only the
launching of workers as Spark jobs is replaced (``master.jobs``).

At each N it prints the master's CPU and RSS, submit to every worker started, a
deactivate and an activate applied everywhere, a silent worker noticed and relaunched,
the store's writes per second and largest record, and ``info()``'s time and size (what
the REST topology page, ``/metrics`` and ``squall info`` each ask the master for); then
the growth exponent of each figure between the two largest N.

Not measured here: Nimbus's own CPU and its REST responses (estimated), and the data
plane, which ``--data-plane`` measures apart (``benchmarks.scale_data``: real worker
processes on Spark); docs/scale.md says so.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import math
import os
import pstats
import resource
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.scale_nimbus import nimbus_pages
from benchmarks.scale_sim import SimJobs, word_count
from squall.api.errors import TopologyStartError
from squall.nimbus.monitor import CHECK_SECS
from squall.spark import settings as S
from squall.spark.app import TopologyApp, tune_gc
from squall.spark.loop_calls import LoopCalls
from squall.spark.master import TopologyMaster
from squall.store import Store, StoreError, open_store
from squall.store import keys as K

NAME = "scale"
ZK_MAX_RECORD = 512 << 10  # the target: no record over 512 KB (ZooKeeper refuses over 1 MB)


class CountingStore:
    """A store that counts the writes through it and the size (JSON bytes) of each record."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.writes = 0
        self.bytes = 0
        self.largest: dict[str, int] = {}
        self.refused = 0  # writes the store refused (ZooKeeper: a record over jute.maxbuffer)
        self.refused_largest = 0
        self._lock = threading.Lock()

    def _wrote(self, key: str, value: dict | None) -> None:
        size = len(json.dumps(value)) if value is not None else 0
        with self._lock:
            self.writes += 1
            self.bytes += size
            kind = key.split("/", 1)[0]
            self.largest[kind] = max(self.largest.get(kind, 0), size)

    def reset(self) -> None:
        """Forget what was counted."""
        with self._lock:
            self.writes, self.bytes, self.largest = 0, 0, {}
            self.refused, self.refused_largest = 0, 0

    def get(self, key: str) -> dict | None:
        """See ``Store.get``."""
        return self.store.get(key)

    def put(self, key: str, value: dict) -> None:
        """See ``Store.put``."""
        self.store.put(key, value)
        self._wrote(key, value)

    def create(self, key: str, value: dict) -> bool:
        """See ``Store.create``."""
        made = self.store.create(key, value)
        if made:
            self._wrote(key, value)
        return made

    def update(self, key: str, fn: Callable[[dict | None], dict | None]) -> dict | None:
        """See ``Store.update``; a write the store refuses is counted in ``refused`` (with its size)."""
        tried: list[dict | None] = []

        def write(old: dict | None) -> dict | None:
            tried.append(fn(old))
            return tried[-1]
        try:
            new = self.store.update(key, write)
        except StoreError:
            with self._lock:
                self.refused += 1
                size = len(json.dumps(tried[-1])) if tried and tried[-1] is not None else 0
                self.refused_largest = max(self.refused_largest, size)
            raise
        self._wrote(key, new)
        return new

    def delete(self, key: str) -> None:
        """See ``Store.delete``."""
        self.store.delete(key)

    def children(self, prefix: str) -> dict[str, dict]:
        """See ``Store.children``."""
        return self.store.children(prefix)

    def election(self, info: dict[str, Any]) -> Any:
        """See ``Store.election``."""
        return self.store.election(info)

    def close(self) -> None:
        """See ``Store.close``."""
        self.store.close()


class NoSpark:
    """What the master reads of its SparkContext when it launches no Spark jobs."""

    master = "simulated"  # not ``local[...]`` and no pinned hosts: no placement checks


def rss_mib() -> float:
    """The resident set of this process now, in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def thread_cpu(native_id: int | None) -> float:
    """CPU seconds (user + system) of this process's thread ``native_id`` so far (0 if gone)."""
    try:
        fields = Path(f"/proc/self/task/{native_id}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def wait_for(check: Callable[[], bool], timeout: float, step: float = 0.02) -> bool:
    """Poll ``check`` until true or ``timeout`` seconds; whether it became true."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(step)
    return False


def profiled(target: Callable[[], None], path: str | None) -> Callable[[], None]:
    """``target`` run under cProfile, its figures written to ``path`` (as is without a path)."""
    if path is None:
        return target

    def run() -> None:
        # the thread's own CPU, not wall time: with the GIL shared, wall time charges a
        # function for the other threads' turns
        prof = cProfile.Profile(time.thread_time)
        try:
            prof.runcall(target)
        finally:
            with open(path, "w") as f:
                pstats.Stats(prof, stream=f).sort_stats("cumulative").print_stats(40)
                pstats.Stats(prof, stream=f).sort_stats("tottime").print_stats(30)
    return run


def measure(n: int, store_uri: str, window: float, pools: int, conf: dict | None = None,
            profile: str | None = None, start_timeout: float = 300.0) -> dict[str, Any]:
    """Every figure at ``n`` simulated workers, with the store at ``store_uri``.

    ``profile``: a path prefix; the master's loop thread and its store beat are profiled
    (``PREFIX-loop.txt``, ``PREFIX-beat.txt``).
    """
    tune_gc()  # as the driver's ``main`` does (``squall.spark.app.tune_gc``)
    topology, conf, plan = word_count(n, conf)
    secret = secrets.token_bytes(32)
    master = TopologyMaster(NAME, topology, conf, plan, sc=NoSpark(), secret=secret)  # type: ignore[arg-type]
    jobs = SimJobs(NAME, secret, master.address, plan, float(conf.get(S.HEARTBEAT, 1.0)), pools=pools)
    master.jobs = jobs  # type: ignore[assignment]  # the one part replaced: no Spark jobs
    if profile:
        master._thread = threading.Thread(target=profiled(master._loop, f"{profile}-loop.txt"), daemon=True)
        master.calls = LoopCalls(master._thread)
    store = CountingStore(open_store(store_uri))
    store.put(K.topology_key(NAME), {"epoch": 1, "name": NAME})
    app = TopologyApp(store, None, NAME, 1)  # type: ignore[arg-type]  # no blobs: a beat reads none
    out: dict[str, Any] = {"workers": n, "tasks": len(plan.task_component)}  # with ackers and system tasks
    beats = profiled(app._heartbeat_until_exit, profile and f"{profile}-beat.txt")
    beat_thread = threading.Thread(target=beats, daemon=True)
    try:
        t0 = time.monotonic()
        try:
            master.start(timeout=start_timeout)
        except TopologyStartError as e:  # the master stopped itself: nothing more to measure
            out["start_error"] = str(e)[:300]
            out.update(jobs.stats())
            return out
        out["submit_s"] = time.monotonic() - t0
        sim = jobs.stats()
        out["register_wait_max_s"] = sim["register_wait_max"]
        out["late_welcomes"] = sim["late_welcomes"]
        out["address_mb"] = sim["address_bytes"] / 1e6
        app.master, app.state = master, K.RUNNING
        beat_thread.start()
        time.sleep(min(window, 3.0))  # the first beats, and the start-up's backlog, pass
        store.reset()
        threads = {"loop": master._thread, "store_beat": beat_thread}
        pages = getattr(master, "pages", None)  # the pages' folds (master_info.Pages)
        if pages is not None and pages._thread is not None:
            threads["pages"] = pages._thread
        split0 = {k: thread_cpu(t.native_id) for k, t in threads.items()}
        cpu0, t1, sim0 = time.process_time(), time.monotonic(), jobs.stats()
        time.sleep(window)
        elapsed = time.monotonic() - t1
        cpu = time.process_time() - cpu0
        out["master_cores"] = cpu / elapsed
        # the process's CPU by thread (the rest: ZeroMQ's I/O thread, the pages' fold, ...)
        split = {k: (thread_cpu(t.native_id) - split0[k]) / elapsed for k, t in threads.items()}
        out["master_cores_by_thread"] = {**{k: round(v, 3) for k, v in split.items()},
                                         "other": round(cpu / elapsed - sum(split.values()), 3)}
        out["master_rss_mib"] = rss_mib()
        sim1 = jobs.stats()
        out["sim_cores"] = (sim1["cpu"] - sim0["cpu"]) / elapsed
        out["heartbeats_per_s"] = (sim1["heartbeats"] - sim0["heartbeats"]) / elapsed
        beats = max(1, sim1["heartbeats"] - sim0["heartbeats"])
        # less sensitive to the machine's other load than cores: CPU per unit of work
        out["master_cpu_s_per_1000_beats"] = cpu / beats * 1000
        out["heartbeat_kb"] = (sim1["heartbeat_bytes"] - sim0["heartbeat_bytes"]) / beats / 1000
        out["store_writes_per_s"] = store.writes / elapsed
        out["store_mb_per_s"] = store.bytes / elapsed / 1e6
        out["largest_record_kib"] = max(store.largest.values(), default=0) / 1024
        out["largest_records_kib"] = {k: round(v / 1024, 1) for k, v in sorted(store.largest.items())}
        out["refused_writes_per_s"] = store.refused / elapsed
        out["refused_largest_kib"] = store.refused_largest / 1024
        t = time.monotonic()
        brief = master.info(per_task=False)  # what the topology page asks for (/info/components)
        # the first in a heartbeat interval: served the last published fold, and asks for a new one
        out["info_components_s"] = time.monotonic() - t
        out["info_components_mb"] = len(json.dumps(brief)) / 1e6
        # a further request within the heartbeat interval
        t = time.monotonic()
        master.info(per_task=False)
        out["info_components_cached_s"] = time.monotonic() - t
        t = time.monotonic()
        info = master.info()  # none published with per-task figures: it waits for that fold
        out["info_s"] = time.monotonic() - t
        t = time.monotonic()
        master.info()
        out["info_cached_s"] = time.monotonic() - t  # a further one within the interval: no fold
        out["info_mb"] = len(json.dumps(info)) / 1e6
        pages = nimbus_pages(info, brief, topology, conf)
        out.update(pages)
        for page in ("rest_component", "metrics"):  # the master's part, then Nimbus's
            out[f"{page}_s"] = out["info_s"] + pages["info_dumps_s"] + pages[f"{page}_nimbus_s"]
            out[f"{page}_cached_s"] = out["info_cached_s"] + pages["info_dumps_s"] + pages[f"{page}_nimbus_s"]
        out["rest_topology_s"] = (out["info_components_s"] + pages["components_dumps_s"]
                                  + pages["rest_topology_nimbus_s"])
        out["rest_topology_cached_s"] = (out["info_components_cached_s"] + pages["components_dumps_s"]
                                         + pages["rest_topology_nimbus_s"])
        out["nimbus_cores_est"] = nimbus_cores(store, pages["components_dumps_s"])
        for active, key in ((False, "deactivate_s"), (True, "activate_s")):
            t = time.monotonic()
            master.set_active(active)
            out[key] = time.monotonic() - t
        out.update(silent_worker(master, jobs, n // 2))
    finally:
        app._exit.set()
        if beat_thread.is_alive():
            beat_thread.join(30)
        t = time.monotonic()
        master.stop()
        out["stop_s"] = time.monotonic() - t
        if "submit_s" in out:  # TopologyApp.rebalance: the old master's stop, then a new one's start
            out["rebalance_s"] = out["stop_s"] + out["submit_s"]
        jobs.close()
        store.close()
    return out


def nimbus_cores(store: CountingStore, info_dumps_s: float) -> float:
    """Nimbus's CPU for this topology, from its periodic reads (not a running Nimbus).

    Its monitor reads ``masters/NAME`` every ``CHECK_SECS`` (1 s); its observer reads it
    again and loads the master's ``info`` without per-task detail (``/info/components``)
    every 10 s. Loading JSON takes about as long as dumping it: the dump time measured on
    the master stands for the load.
    """
    t = time.monotonic()
    for _ in range(5):
        store.get(K.master_key(NAME))
    record_s = (time.monotonic() - t) / 5
    return record_s / CHECK_SECS + (record_s + info_dumps_s) / 10.0


def silent_worker(master: TopologyMaster, jobs: SimJobs, index: int) -> dict[str, float]:
    """Hang worker ``index``: seconds until the master declares it dead, and until it runs again."""
    slot = master.registry.slots[index]
    launch = master.calls.call(lambda: slot.launch)
    t = time.monotonic()
    jobs.silence(index)
    noticed = wait_for(lambda: master.calls.call(
        lambda: slot.relaunch_at is not None or slot.launch > launch), 120.0)
    noticed_s = time.monotonic() - t
    back = wait_for(lambda: master.calls.call(
        lambda: slot.launch > launch and slot.current is not None and slot.current.started), 120.0)
    return {"silent_noticed_s": noticed_s if noticed else math.inf,
            "silent_relaunched_s": time.monotonic() - t if back else math.inf}


# figure, unit, target at 1,000 workers (text), whether smaller is better
ROWS = [
    ("submit_s", "s", "", ),
    ("register_wait_max_s", "s", "< 30 s (a worker's WELCOME deadline)"),
    ("address_mb", "MB", "linear"),
    ("master_cores", "cores", "<= 0.5"),
    ("master_cpu_s_per_1000_beats", "s", "(CPU seconds per 1,000 heartbeats)"),
    ("master_rss_mib", "MiB", "<= 1024"),
    ("sim_cores", "cores", "(the simulator, not squall)"),
    ("heartbeats_per_s", "/s", "N"),
    ("heartbeat_kb", "KB", "(one worker's)"),
    ("info_s", "s", "(the master's part of the component page and /metrics: it waits for a fold)"),
    ("info_cached_s", "s", "(the same, a further request in that interval)"),
    ("info_mb", "MB", ""),
    ("info_components_s", "s", "(the master's part of the topology page: the last published fold)"),
    ("info_components_cached_s", "s", "(the same, a further request in that interval)"),
    ("info_components_mb", "MB", ""),
    ("rest_topology_s", "s", "<= 1 (the first request in a heartbeat interval)"),
    ("rest_topology_cached_s", "s", "<= 1 (any further request in that interval)"),
    ("rest_topology_mb", "MB", "<= 2"),
    ("rest_component_s", "s", "(with a fold, as info_s)"),
    ("rest_component_cached_s", "s", "(a further request in that interval)"),
    ("rest_component_mb", "MB", ""),
    ("metrics_s", "s", "(with a fold, as info_s)"),
    ("metrics_cached_s", "s", "(a further request in that interval)"),
    ("metrics_mb", "MB", ""),
    ("nimbus_cores_est", "cores", "<= 0.25 (estimated: see docs/scale.md)"),
    ("deactivate_s", "s", "<= 2"),
    ("activate_s", "s", ""),
    ("silent_noticed_s", "s", "<= 5"),
    ("silent_relaunched_s", "s", ""),
    ("stop_s", "s", ""),
    ("rebalance_s", "s", "(stop + submit)"),
    ("store_writes_per_s", "/s", "<= 100 (ZooKeeper)"),
    ("store_mb_per_s", "MB/s", ""),
    ("largest_record_kib", "KiB", "<= 512"),
    ("refused_writes_per_s", "/s", "0"),
    ("refused_largest_kib", "KiB", ""),
]


def growth(small: float, large: float, ratio: float) -> str:
    """The exponent k in figure ~ N^k between two sizes ``ratio`` apart."""
    if small <= 0 or large <= 0 or math.isinf(small) or math.isinf(large):
        return "-"
    return f"{math.log(large / small) / math.log(ratio):.2f}"


def table(results: list[dict], store: str) -> str:
    """The figures against N, with the growth exponent between the two largest N."""
    ns = [r["workers"] for r in results]
    head = f"| figure ({store}) | " + " | ".join(f"N={n}" for n in ns) + " | growth | target at N=1,000 |"
    lines = [head, "|" + "---|" * (len(ns) + 3)]
    for key, unit, target in ROWS:
        cells = [_fmt(r.get(key)) for r in results]
        pair = [r.get(key) for r in results[-2:]]
        small, large = pair if len(pair) == 2 else (None, None)
        g = growth(small, large, ns[-1] / ns[-2]) if small is not None and large is not None else "-"
        lines.append(f"| {key} ({unit}) | " + " | ".join(cells) + f" | {g} | {target} |")
    records = "; ".join(f"N={r['workers']}: {r.get('largest_records_kib', r.get('start_error'))}"
                        for r in results)
    return "\n".join(lines) + f"\n\nlargest record of each kind (KiB): {records}\n"


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if math.isinf(v):
            return "never"
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
    return str(v)


def zookeeper_installed() -> bool:
    """Whether the tests' ZooKeeper server can be started here (``scripts/setup-zookeeper.sh``)."""
    try:
        from tests.nimbus.zookeeper_server import zookeeper_classpath
    except ImportError:
        return False
    return zookeeper_classpath() is not None and shutil.which("java") is not None


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.scale", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="N = 10, 100, 1000 with short windows")
    p.add_argument("--workers", type=int, nargs="*", help="the N to run (default 10 100 1000)")
    p.add_argument("--store", choices=["sqlite", "zk"], nargs="*",
                   help="the stores to run on (zk starts a ZooKeeper server; default: both when "
                        "ZooKeeper is installed, else sqlite)")
    p.add_argument("--window", type=float, help="seconds of steady state measured at each N")
    p.add_argument("--pools", type=int, default=4, help="processes hosting the simulated workers")
    p.add_argument("--heartbeat-timeout", type=float,
                   help=f"{S.HEARTBEAT_TIMEOUT} (default: squall's own)")
    p.add_argument("--start-timeout", type=float, default=300.0,
                   help="seconds the workers have to start at each N (a start that fails is reported)")
    p.add_argument("--json", help="also write the figures to this file")
    p.add_argument("--profile", help="a path prefix: cProfile the master's loop and store beat at each N")
    p.add_argument("--data-plane", action="store_true",
                   help="the data plane instead: real workers on Spark local[N], N = 2 8 16 32 "
                        "(--quick: 2 8; benchmarks.scale_data)")
    return p.parse_args(argv)


def data_plane(args: argparse.Namespace) -> int:
    """The data-plane part (``benchmarks.scale_data``): real workers at each N."""
    from benchmarks.scale_data import measure as measure_data
    from benchmarks.scale_data import table as data_table

    ns = args.workers or ([2, 8] if args.quick else [2, 8, 16, 32])
    window = args.window or (10.0 if args.quick else 20.0)
    results = []
    with tempfile.TemporaryDirectory(prefix="squall-scale-data-") as tmp:
        for n in ns:
            print(f"# data plane, N={n} (load average {os.getloadavg()[0]:.1f}) ...", flush=True)
            results.append(measure_data(n, window, 10.0 if args.quick else 20.0, tmp))
            print(json.dumps(results[-1]), flush=True)
    print(data_table(results), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"data_plane": results}, indent=1))
    print(f"machine: {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.data_plane:
        return data_plane(args)
    ns = args.workers or [10, 100, 1000]
    stores = args.store or (["sqlite", "zk"] if zookeeper_installed() else ["sqlite"])
    window = args.window or (5.0 if args.quick else 20.0)
    conf = {S.HEARTBEAT_TIMEOUT: args.heartbeat_timeout} if args.heartbeat_timeout else {}
    every: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="squall-scale-") as tmp:
        for kind in stores:
            zk = None
            if kind == "zk":
                from tests.nimbus.zookeeper_server import ZooKeeperServer  # the tests' own server

                zk = ZooKeeperServer(Path(tmp) / "zk")
                zk.start()
            try:
                results = []
                for n in ns:
                    uri = zk.uri(f"/scale{n}") if zk else f"sqlite:{tmp}/store-{n}.db"
                    print(f"# N={n} on {kind} ...", flush=True)
                    results.append(measure(n, uri, window, args.pools, conf,
                                           args.profile and f"{args.profile}-{kind}-{n}", args.start_timeout))
                    print(json.dumps(results[-1]), flush=True)
                every[kind] = results
                print(table(results, kind), flush=True)
            finally:
                if zk is not None:
                    zk.stop()
    if args.json:
        Path(args.json).write_text(json.dumps(every, indent=1))
    print(f"machine: {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
