"""Chaos soak: a stateful topology under steady load while its parts are killed (``make soak``).

``python -m benchmarks.chaos [--minutes 10] [--rate 200] [--out DIR]`` starts, all on loopback:
a redis-server (the state store), a Spark standalone master and two workers on the hosts
127.0.0.2 and 127.0.0.3, and a ``squall nimbus``; submits a topology (a sequence spout with
``rate`` new messages per second -> a relay -> a checker that records every message, and a
stateful count per key kept in Redis); then, while it runs, SIGKILLs a random worker every
20-60 s, the topology master once, Nimbus once (restarted) and Redis once (restarted).
At the end it waits for every message to be acked and prints messages sent, acked, failed
(replayed), duplicates and lost (must be 0), each process's memory over time and the
throughput; it writes the samples to ``soak.json`` and a chart to ``soak.png`` in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

KEYS = 8
TOPOLOGY = '''\
"""The chaos soak's topology (written by benchmarks.chaos)."""
from squall import Bolt, Config, Fields, StatefulBolt, TopologyBuilder
from squall.testing.invariants import SequenceChecker, SequenceSpout

OUT, KEYS, COUNT, RATE, REDIS = {out!r}, {keys!r}, {count!r}, {rate!r}, {redis!r}


class Relay(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.emit(tup.values, anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("key", "seq"))


class KeyCount(StatefulBolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def init_state(self, state):
        self.state = state

    def execute(self, tup):
        self.state.put(tup[0], self.state.get(tup[0], 0) + 1)
        self.collector.ack(tup)


def build_topology():
    b = TopologyBuilder()
    b.set_spout("seq", SequenceSpout(OUT, keys=KEYS, count=COUNT, rate=RATE), 1)
    b.set_bolt("relay", Relay(), 2).shuffle_grouping("seq")
    b.set_bolt("check", SequenceChecker(OUT), 2).fields_grouping("relay", Fields("key"))
    b.set_bolt("count", KeyCount(), 2).fields_grouping("relay", Fields("key"))
    return build_config(), b.create_topology()


def build_config():
    c = Config()
    c.update({{"topology.workers": 2, "topology.message.timeout.secs": 10,
              "topology.max.spout.pending": 200, "squall.spark.executor.wait.secs": 180,
              "topology.state.provider": "squall.state.redis.RedisStateProvider",
              "topology.state.provider.config": {{"host": "127.0.0.1", "port": REDIS}}}})
    return c
'''


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


class Soak:
    """The processes of one soak run, and what was done to them."""

    def __init__(self, work: Path, minutes: float, rate: float) -> None:
        self.work, self.minutes, self.rate = work, minutes, rate
        self.out = work / "out"
        self.out.mkdir(parents=True, exist_ok=True)
        self.home = work / "home"
        self.procs: dict[str, subprocess.Popen] = {}
        self.events: list[tuple[float, str]] = []
        self.samples: list[dict[str, Any]] = []
        self.count = int(rate * minutes * 60 / KEYS) + 1  # per key: the window's worth of load
        self.redis_port = free_port()
        self.nimbus_port = free_port()
        self.nimbus_url = f"http://127.0.0.1:{self.nimbus_port}"
        self.t0 = time.monotonic()

    # ---- processes -------------------------------------------------------------------

    def _spawn(self, name: str, args: list[str], env: dict | None = None) -> subprocess.Popen:
        log_file = open(self.work / f"{name}.log", "ab")  # noqa: SIM115 - the process keeps it
        proc = subprocess.Popen(args, cwd=self.work, env=env or self.env(), stdout=log_file,
                                stderr=subprocess.STDOUT, start_new_session=True)
        self.procs[name] = proc
        return proc

    def env(self) -> dict:
        import squall

        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SQUALL_TOKEN")}
        # every process of the soak runs this checkout's squall, whatever the venv has installed
        env.update(SQUALL_HOME=str(self.home), SPARK_LOCAL_IP="127.0.0.1", SQUALL_NIMBUS=self.nimbus_url,
                   PYSPARK_PYTHON=sys.executable, SQUALL_PURE_PYTHON=os.environ.get("SQUALL_PURE_PYTHON", ""),
                   PYTHONPATH=str(Path(squall.__file__).resolve().parents[1]))
        return env

    def start_redis(self) -> None:
        exe = shutil.which("redis-server")
        if exe is None:
            raise SystemExit("redis-server is not on PATH: run scripts/setup-redis.sh")
        (self.work / "redis").mkdir(exist_ok=True)
        self._spawn("redis", [exe, "--port", str(self.redis_port), "--bind", "127.0.0.1",
                              "--dir", str(self.work / "redis"), "--appendonly", "yes",
                              "--appendfsync", "always", "--save", ""])
        self._wait_port(self.redis_port, 20)

    def start_spark(self) -> None:
        import pyspark

        home = Path(pyspark.__file__).parent
        port, ui = free_port(), free_port()
        env = {**self.env(), "SPARK_HOME": str(home), "SPARK_NO_DAEMONIZE": "1"}
        cls = str(home / "bin" / "spark-class")
        self._spawn("spark-master", [cls, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                     "--port", str(port), "--webui-port", str(ui)], env)
        self._wait_port(port, 60)
        self.spark_master = f"spark://127.0.0.1:{port}"
        for host in ("127.0.0.2", "127.0.0.3"):
            wenv = {**env, "SPARK_LOCAL_IP": host,
                    "SPARK_WORKER_DIR": str(self.work / f"spark-worker-{host}")}
            self._spawn(f"spark-worker-{host}", [cls, "org.apache.spark.deploy.worker.Worker",
                                                 "--host", host, "--cores", "2", "--memory", "2g",
                                                 "--webui-port", str(free_port()), self.spark_master], wenv)
        deadline = time.monotonic() + 180  # a loaded machine takes its time
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json", timeout=2) as r:
                    state = json.load(r)
                if sum(w.get("state") == "ALIVE" for w in state.get("workers", [])) >= 2:
                    return
            except (OSError, ValueError):
                pass
            time.sleep(1)
        raise SystemExit("the two standalone Spark workers did not register within 180 s")

    def start_nimbus(self) -> None:
        self._spawn("nimbus", [sys.executable, "-m", "squall.cli.main", "nimbus", "--port",
                               str(self.nimbus_port), "--data-dir", str(self.home),
                               "--conf", f"squall.spark.master={self.spark_master}",
                               "--conf", "nimbus.master.timeout.secs=15"])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.nimbus_url}/api/v1/health", timeout=1) as r:
                    if json.load(r).get("leader"):
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise SystemExit(f"nimbus did not lead within 60 s: see {self.work / 'nimbus.log'}")

    def cli(self, *args: str, timeout: float = 300) -> Any:
        proc = subprocess.run([sys.executable, "-m", "squall.cli.main", "--json", *args], cwd=self.work,
                              env=self.env(), capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"squall {' '.join(args)}: {proc.stderr.strip() or proc.stdout.strip()}")
        return json.loads(proc.stdout) if proc.stdout.strip() else None

    @staticmethod
    def _wait_port(port: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    return
            time.sleep(0.2)
        raise SystemExit(f"nothing listens on port {port} after {timeout}s")

    def stop_all(self) -> None:
        for proc in reversed(list(self.procs.values())):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    # ---- the run ---------------------------------------------------------------------

    def submit(self) -> None:
        source = self.work / "soak_topology.py"
        source.write_text(TOPOLOGY.format(out=str(self.out), keys=KEYS, count=self.count,
                                          rate=self.rate, redis=self.redis_port))
        self.cli("submit", str(source), "--name", "soak", timeout=600)
        self.event("submitted")

    def event(self, what: str) -> None:
        self.events.append((round(time.monotonic() - self.t0, 1), what))
        log(what)

    def info(self) -> dict:
        return self.cli("info", "soak", timeout=60)

    def sample(self) -> None:
        try:
            info = self.info()
        except Exception as e:  # noqa: BLE001 - Nimbus may be down right now: a gap in the chart
            self.samples.append({"t": time.monotonic() - self.t0, "error": str(e)[:80]})
            return
        rss = {}
        for w in info.get("workers", []):
            rss[f"worker{w['worker']}"] = _rss_mb(w.get("pid"))
        rss["master"] = _rss_mb((info.get("master") or {}).get("pid"))
        rss["nimbus"] = _rss_mb(self.procs["nimbus"].pid)
        from squall.testing.invariants import check  # not at the top: --chart runs without squall

        report = check(str(self.out), KEYS, self.count)
        self.samples.append({"t": time.monotonic() - self.t0, "acked": report.acked,
                             "received": report.received, "rss_mb": rss})

    def chaos(self) -> None:
        start = time.monotonic()  # the load window starts once the topology runs
        end = start + self.minutes * 60
        rng = random.Random(int(time.time()))
        plan = {"master": start + self.minutes * 60 * 0.25, "nimbus": start + self.minutes * 60 * 0.5,
                "redis": start + self.minutes * 60 * 0.75}
        next_kill = time.monotonic() + rng.uniform(20, 60)
        next_sample = time.monotonic()
        while time.monotonic() < end:
            now = time.monotonic()
            if now >= next_sample:
                self.sample()
                next_sample = now + 5
            if now >= next_kill:
                self._kill_worker(rng)
                next_kill = now + rng.uniform(20, 60)
            for what in [w for w, at in plan.items() if now >= at]:
                del plan[what]
                getattr(self, f"_kill_{what}")()
            time.sleep(0.5)

    def _kill_worker(self, rng: random.Random) -> None:
        try:
            workers = [w for w in self.info()["workers"] if w.get("pid") and w.get("state") == "RUNNING"]
        except Exception as e:  # noqa: BLE001
            log(f"no worker to kill now: {e}")
            return
        if workers:
            w = rng.choice(workers)
            os.kill(w["pid"], signal.SIGKILL)
            self.event(f"SIGKILL worker {w['worker']} (pid {w['pid']}, host {w.get('host')})")

    def _kill_master(self) -> None:
        pid = (self.info().get("master") or {}).get("pid")
        if pid:
            os.kill(pid, signal.SIGKILL)
            self.event(f"SIGKILL topology master (pid {pid})")

    def _kill_nimbus(self) -> None:
        proc = self.procs["nimbus"]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        self.event("SIGKILL nimbus")
        time.sleep(5)
        self.start_nimbus()
        self.event("nimbus restarted")

    def _kill_redis(self) -> None:
        proc = self.procs["redis"]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        self.event("SIGKILL redis")
        time.sleep(10)
        self.start_redis()
        self.event("redis restarted")

    def drain(self, timeout: float = 300) -> Any:
        from squall.testing.invariants import check

        deadline = time.monotonic() + timeout
        report = check(str(self.out), KEYS, self.count)
        while report.unacked and time.monotonic() < deadline:
            time.sleep(5)
            self.sample()
            report = check(str(self.out), KEYS, self.count)
        return report


def _rss_mb(pid: int | None) -> float | None:
    if not pid:
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def chart(samples: list[dict], events: list[tuple[float, str]], path: Path) -> bool:
    """Throughput and memory over time, with the kills marked; False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    good = [s for s in samples if "acked" in s]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    ts = [s["t"] for s in good]
    pairs = zip(good, good[1:], strict=False)
    rates = [0.0] + [(b["acked"] - a["acked"]) / max(1e-6, b["t"] - a["t"]) for a, b in pairs]
    top.plot(ts, rates[:len(ts)])
    top.set_ylabel("messages acked / s")
    names = sorted({k for s in good for k in s["rss_mb"]})
    for name in names:
        bottom.plot(ts, [s["rss_mb"].get(name) for s in good], label=name)
    bottom.set_ylabel("RSS (MB)")
    bottom.set_xlabel("seconds")
    bottom.legend(loc="upper left", fontsize="small")
    for t, what in events:
        for ax in (top, bottom):
            ax.axvline(t, color="red" if "SIGKILL" in what else "grey", alpha=0.3)
    fig.suptitle("squall chaos soak: throughput and memory; red lines: kills")
    fig.tight_layout()
    fig.savefig(path)
    return True


def draw(out: Path) -> bool:
    """The chart of ``out/soak.json``: here, or in the benchmarks' charts env (matplotlib)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        from benchmarks.envs import ensure, python_of

        ensure("charts")
        root = Path(__file__).resolve().parents[1]
        done = subprocess.run([str(python_of("charts")), "-m", "benchmarks.chaos", "--chart",
                               str((out / "soak.json").resolve())], capture_output=True, text=True, cwd=root)
        return done.returncode == 0
    result = json.loads((out / "soak.json").read_text())
    return chart(result["samples"], [tuple(e) for e in result["events"]], out / "soak.png")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=200.0, help="new messages per second")
    parser.add_argument("--out", default="benchmarks/results", help="where soak.json and soak.png go")
    parser.add_argument("--chart", metavar="SOAK_JSON", help="only draw the chart of a finished run")
    args = parser.parse_args()
    if args.chart:
        path = Path(args.chart)
        result = json.loads(path.read_text())
        ok = chart(result["samples"], [tuple(e) for e in result["events"]], path.with_suffix(".png"))
        return 0 if ok else 1
    work = Path(tempfile.mkdtemp(prefix="squall-soak-"))
    soak = Soak(work, args.minutes, args.rate)
    log(f"soak for {args.minutes:g} min at {args.rate:g} msg/s; processes and logs in {work}")
    try:
        soak.start_redis()
        soak.start_spark()
        soak.start_nimbus()
        soak.submit()
        soak.chaos()
        soak.event("load window over; waiting for every message to be acked")
        report = soak.drain()
        try:
            soak.cli("kill", "soak", "--wait", "0", timeout=120)
        except Exception as e:  # noqa: BLE001
            log(f"kill: {e}")
    finally:
        soak.stop_all()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result = {"minutes": args.minutes, "rate": args.rate, "sent": soak.count * KEYS,
              "acked": report.acked, "failed_replayed": report.failed, "received": report.received,
              "duplicates": report.duplicates, "lost": len(report.lost), "never_acked": len(report.unacked),
              "events": soak.events, "samples": soak.samples}
    (out / "soak.json").write_text(json.dumps(result, indent=1))
    drawn = draw(out)
    rss = [s["rss_mb"] for s in soak.samples if "rss_mb" in s]
    print(f"\nsent {result['sent']}, acked {report.acked}, failed (replayed) {report.failed}, "
          f"duplicates {report.duplicates}, lost {len(report.lost)}, never acked {len(report.unacked)}")
    print(f"kills: {sum('SIGKILL' in e for _, e in soak.events)} ({', '.join(e for _, e in soak.events)})")
    if rss:
        for name in sorted({k for r in rss for k in r}):
            values = [r[name] for r in rss if r.get(name)]
            if values:
                print(f"RSS {name}: first {values[0]} MB, max {max(values)} MB, last {values[-1]} MB")
    chart_note = f" and {out / 'soak.png'}" if drawn else " (no chart: matplotlib missing)"
    print(f"wrote {out / 'soak.json'}{chart_note}")
    return 0 if not report.lost and not report.unacked else 1


if __name__ == "__main__":
    sys.exit(main())
