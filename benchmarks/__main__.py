"""Run the benchmarks: ``python -m benchmarks [--quick|--full] [--workloads ...] [--systems ...]``.

Runs each named workload (``benchmarks.workloads``) on each named system
(``benchmarks.systems``): squall on ``LocalCluster`` and on ``SparkCluster``, and its peers,
each in a virtualenv of its own that is made on first use (``benchmarks.envs``). Prints a
table with every system's figures and squall's ratio to each, and writes
``benchmarks/results/latest.json`` (the rows), ``latest-meta.json`` (machine, versions,
configuration) and PNG charts. A system that cannot be installed or started is listed
with the reason, and the run goes on.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import envs, meta, report
from benchmarks.peers._common import pace
from benchmarks.systems import SYSTEMS, System, missing_row, python_for, run_batch
from benchmarks.workloads import FULL, MAX_RATE, QUICK, WORKLOADS, Profile, acking_variants, make_case

RESULTS = Path(__file__).resolve().parent / "results"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true",
                      help=f"short cases ({QUICK.warmup_s:g}s warm-up, {QUICK.duration_s:g}s measured)")
    size.add_argument("--full", action="store_true",
                      help=f"long cases ({FULL.warmup_s:g}s warm-up, {FULL.duration_s:g}s measured; "
                           "the default)")
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), metavar="W",
                        help=f"workloads to run (default: all): {', '.join(WORKLOADS)}")
    parser.add_argument("--systems", nargs="+", default=[s for s in SYSTEMS if not SYSTEMS[s].optional],
                        metavar="S", help=f"systems to run on (default: all but "
                                          f"{', '.join(s for s in SYSTEMS if SYSTEMS[s].optional)}): "
                                          f"{', '.join(SYSTEMS)}")
    parser.add_argument("--shipped-env", action="store_true",
                        help="also run squall-standalone and squall-shipped: the Spark workload on a "
                             "standalone cluster whose executors share this virtualenv, and on one whose "
                             "executors have a bare Python and get squall by squall.spark.env=auto")
    parser.add_argument("--warmup", type=float, help="override the warm-up seconds of every case")
    parser.add_argument("--duration", type=float, help="override the measured seconds of every case")
    parser.add_argument("--no-charts", action="store_true", help="skip the PNG charts")
    parser.add_argument("--reinstall", action="store_true", help="remake the peers' virtualenvs")
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"results directory ({RESULTS})")
    args = parser.parse_args(argv)
    args.workloads = _names(args.workloads, WORKLOADS, parser, "workload")
    if args.shipped_env:
        args.systems = [*args.systems, "squall-standalone", "squall-shipped"]
    args.systems = _names(args.systems, SYSTEMS, parser, "system")
    return args


def _names(given: list[str], known: dict, parser: argparse.ArgumentParser, what: str) -> list[str]:
    names = [n for item in given for n in item.split(",") if n]
    unknown = [n for n in names if n not in known]
    if unknown:
        parser.error(f"unknown {what}(s): {', '.join(unknown)}; choose from {', '.join(known)}")
    return [n for n in known if n in names]  # in the canonical order


def profile_of(args: argparse.Namespace) -> Profile:
    base = QUICK if args.quick else FULL
    return Profile(base.name, args.warmup if args.warmup is not None else base.warmup_s,
                   args.duration if args.duration is not None else base.duration_s)


def plan(system: str, workloads: list[str], profile: Profile) -> list[dict]:
    """The cases of ``workloads`` on ``system``, in order.

    ``latency`` is paced at shares of ``wordcount``'s maximum: without ``wordcount`` in the
    run, its one needed case (ackers on where the system has them) runs first.
    """
    cases = []
    for name in workloads:
        workload = WORKLOADS[name]
        if system not in workload.SYSTEMS:
            continue
        if name == "latency" and "wordcount" not in workloads:
            ack = acking_variants(system)[0]
            cases.append(make_case("wordcount", MAX_RATE, system, profile, acking=ack))
        cases.extend(workload.cases(profile, system))
    return cases


def describe(row: dict[str, Any]) -> str:
    if row.get("error"):
        return " ".join(str(row["error"]).split())[:100]
    tps = row.get("throughput_tps")
    p99 = row.get("latency_p99_ms")
    text = f"{tps:,.0f} sentences/s" if tps else "no throughput"
    return text + (f", p99 {p99:,.1f} ms" if p99 is not None else "")


def show(row: dict) -> None:
    print(f"  {row['id']}: {describe(row)}", file=sys.stderr, flush=True)


def run_system(system: System, cases: list[dict], env_by_name: dict[str, envs.Env]) -> list[dict]:
    """Run ``cases`` on ``system``: in one subprocess when it starts a JVM, else one per case.

    A runner of many cases paces the latency cases itself; for one-case runners this does
    it, from the rows measured before.
    """
    python, why = python_for(system, env_by_name)
    if python is None:
        rows = [missing_row(c, f"skipped: {why}") for c in cases]
        for row in rows:
            show(row)
        return rows
    if system.jvm:
        return run_batch(system, python, cases, system.name, on_row=show)
    rows: list[dict] = []
    for i, case in enumerate(cases):
        problem = pace(case, rows)
        if problem:
            rows.append(missing_row(case, problem))
            show(rows[-1])
            continue
        rows.extend(run_batch(system, python, [case], f"{system.name}-{i:02d}", on_row=show))
    return rows


def ordered(rows: list[dict], cases: list[dict]) -> list[dict]:
    """Rows by workload, then variant (in plan order), then system, ackers on first."""
    workloads = list(WORKLOADS)
    variants = list(dict.fromkeys((c["workload"], c["variant"]) for c in cases))
    systems = list(SYSTEMS)

    def key(row: dict) -> tuple:
        wv = (row["workload"], row["variant"])
        return (workloads.index(row["workload"]) if row["workload"] in workloads else 99,
                variants.index(wv) if wv in variants else 99,
                systems.index(row["system"]) if row["system"] in systems else 99,
                not row.get("acking"))

    return sorted(rows, key=key)


def charts(out: Path, env_by_name: dict[str, envs.Env]) -> str:
    env = env_by_name.get("charts")
    if env is None or env.python is None:
        return f"no charts: matplotlib env not installed ({env.reason if env else 'skipped'})"
    done = subprocess.run([str(env.python), "-m", "benchmarks.charts", str(out)], cwd=envs.ROOT,
                          capture_output=True, text=True, timeout=300)
    if done.returncode:
        return f"charts failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}"
    return f"charts: {done.stdout.strip()}"


def set_up(stack: ExitStack, args: argparse.Namespace, profile: Profile) -> dict[str, str]:
    """Start what workloads read from (``setup``: the Kafka broker); workload -> why it cannot run."""
    unready: dict[str, str] = {}
    for name in args.workloads:
        setup = getattr(WORKLOADS[name], "setup", None)
        if setup is None or not set(args.systems) & set(WORKLOADS[name].SYSTEMS):
            continue
        print(f"{name}: setting up its source", file=sys.stderr, flush=True)
        try:
            problem = stack.enter_context(setup(profile.warmup_s, profile.duration_s))
        except Exception as e:  # noqa: BLE001 - the workload's rows say so, the run goes on
            problem = f"error: its setup failed: {type(e).__name__}: {e}"
        if problem:
            unready[name] = problem
    return unready


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    profile = profile_of(args)
    started, started_at = time.monotonic(), datetime.now(UTC).isoformat(timespec="seconds")
    needed = sorted({SYSTEMS[s].env for s in args.systems if SYSTEMS[s].env})
    if not args.no_charts:
        needed.append("charts")
    if args.reinstall:
        for name in needed:
            envs.remove(name)
    env_by_name = envs.ensure_all(needed)
    print(f"envs ready after {time.monotonic() - started:.0f}s; running {profile.name} cases "
          f"({profile.warmup_s:g}s warm-up + {profile.duration_s:g}s measured each)",
          file=sys.stderr, flush=True)

    rows: list[dict] = []
    planned: list[dict] = []
    with ExitStack() as stack:
        unready = set_up(stack, args, profile)
        for name in args.systems:
            cases = plan(name, args.workloads, profile)
            if not cases:
                continue
            planned.extend(cases)
            print(f"{name} ({len(cases)} cases):", file=sys.stderr, flush=True)
            ready = [c for c in cases if c["workload"] not in unready]
            for case in cases:
                if case["workload"] in unready:
                    rows.append(missing_row(case, unready[case["workload"]]))
                    show(rows[-1])
            if ready:
                rows.extend(run_system(SYSTEMS[name], ready, env_by_name))

    rows = report.complete(ordered(rows, planned))
    wall = time.monotonic() - started
    info = meta.build(rows=rows, args=vars(args) | {"out": _shown(args.out)}, profile=profile,
                      envs=env_by_name, started_at=started_at, wall_s=wall, systems=SYSTEMS)
    rows_path, meta_path = report.write(rows, info, args.out)
    print(report.table(rows))
    print(f"\nwrote {rows_path} and {meta_path.name}; {len(rows)} rows in {wall:.0f}s", file=sys.stderr)
    if not args.no_charts:
        print(charts(args.out, env_by_name), file=sys.stderr)
    failed = [r for r in rows if r["system"] == "squall-local" and r.get("error")]
    return 1 if failed else 0


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when inside it (no machine paths in results)."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


if __name__ == "__main__":
    sys.exit(main())

