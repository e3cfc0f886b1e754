"""How long the default scheduler takes: 10,000 tasks onto 1,000 simulated hosts.

    python -m benchmarks.scheduler [--tasks 10000] [--hosts 1000] [--workers 2000]

Not a timed test: it prints the time of each case (best of three). Cases: the balanced
default; with a ``task.on.differ.node`` component of one task per host; with CPU and
memory bounded on every host; a rebalance with ``squall.use.old.assignment``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from squall.scheduler import Assignment, HostOffer, OldWorker, SchedulingRequest, Unit
from squall.scheduler.default import DefaultScheduler

COMPONENTS = 20


def units(tasks: int, differ: int = 0) -> tuple[Unit, ...]:
    """``tasks`` single-task units over COMPONENTS components chained by affinity.

    The first ``differ`` of them form one task.on.differ.node component.
    """
    out = [Unit("differ", (t,), differ_node=True) for t in range(1, differ + 1)]
    per = (tasks - differ) // COMPONENTS
    t = differ + 1
    for c in range(COMPONENTS):
        for _ in range(per if c < COMPONENTS - 1 else tasks - differ - per * (COMPONENTS - 1)):
            out.append(Unit(f"c{c:02d}", (t,)))
            t += 1
    return tuple(out)


def affinity() -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for c in range(COMPONENTS - 1):
        a, b = f"c{c:02d}", f"c{c + 1:02d}"
        out.setdefault(a, {})[b] = 1.0
        out.setdefault(b, {})[a] = 1.0
    return out


def best_of(n: int, fn: Callable[[], Assignment]) -> tuple[float, Assignment]:
    times, result = [], None
    for _ in range(n):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    assert result is not None
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--hosts", type=int, default=1_000)
    parser.add_argument("--workers", type=int, default=2_000)
    args = parser.parse_args()
    sched = DefaultScheduler()
    free = tuple(HostOffer(f"10.0.{i // 256}.{i % 256}", 4) for i in range(args.hosts))
    bounded = tuple(HostOffer(o.host, 4, cpu=80, memory=64, disk=1) for o in free)
    cases = {
        "balanced": SchedulingRequest("bench", args.workers, units(args.tasks), free, affinity=affinity()),
        "differ-node": SchedulingRequest("bench", args.workers, units(args.tasks, differ=args.hosts), free,
                                         affinity=affinity()),
        "cpu+memory bounded": SchedulingRequest("bench", args.workers, units(args.tasks), bounded,
                                                affinity=affinity()),
    }
    print(f"{args.tasks} tasks, {args.hosts} hosts, {args.workers} workers (best of 3)")
    last = None
    for label, req in cases.items():
        secs, last = best_of(3, lambda req=req: sched.schedule(req))
        print(f"  {label:22s} {secs * 1000:8.1f} ms")
    assert last is not None
    old = tuple(OldWorker(w.index, w.host, {t: u.component for u in w.units for t in u.tasks})
                for w in last.workers)
    rebalance = SchedulingRequest("bench", args.workers + args.workers // 10, units(args.tasks), bounded,
                                  old_workers=old, use_old=True, rebalance=True, affinity=affinity())
    secs, _ = best_of(3, lambda: sched.schedule(rebalance))
    print(f"  {'rebalance, old kept':22s} {secs * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
