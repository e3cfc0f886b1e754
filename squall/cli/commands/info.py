"""``squall info NAME``: components, tasks, workers, throughput and errors of a topology."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from squall.cli.commands._shared import client, name_argument, summary_table
from squall.cli.output import duration, print_json, table


def add_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register the command."""
    p = sub.add_parser("info", parents=[common], help="show a topology in detail")
    name_argument(p)
    p.add_argument("--conf", action="store_true",
                   help="show the effective configuration and where each value came from")
    p.add_argument("--tasks", action="store_true",
                   help="show each task's start time, last heartbeat and how long its counters "
                        "have not moved")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print the topology's info."""
    if args.conf:
        return print_conf(args)
    info = client(args).get(f"/topologies/{args.name}")
    if args.json:
        print_json(info)
        return 0
    row = {**info, "master": info["master"].get("state")}
    print(summary_table([row]))
    replication = info.get("replication")
    if replication:
        print(f"code of version {info['version']} held by {replication['count']} Nimbus node(s): "
              f"{', '.join(replication['holders']) or '-'}")
    # the rates over the running master's age: the counters start with it
    uptime = info.get("master_uptime_secs") or info.get("uptime_secs") or 0.0
    comps = []
    for cid, c in sorted(info["components"].items()):
        rate = c["emitted"] / uptime if uptime else 0.0
        comps.append([cid, len(c["tasks"]), c["emitted"], f"{rate:.1f}", c["acked"], c["failed"],
                      f"{c['execute_latency_ms']:.3f}", f"{c['complete_latency_ms']:.1f}",
                      f"{c['capacity']:.3f}", c.get("errors")])
    if comps:
        print()
        print(table(["COMPONENT", "TASKS", "EMITTED", "EMITTED/S", "ACKED", "FAILED", "EXEC MS",
                     "COMPLETE MS", "CAPACITY", "ERRORS"], comps))
    for chain in info.get("chains") or []:  # bolts fused with their upstream, one task per pair
        print(f"chain: {' -> '.join(chain)}")
    streams = stream_rows(info["components"])
    if streams:
        print()
        print(table(["COMPONENT", "STREAM", "EMITTED", "TRANSFERRED", "EXECUTED", "ACKED", "FAILED",
                     "EXEC MS", "PROCESS MS"], streams))
    metrics = [[cid, name, m.get("type"), metric_summary(m)]
               for cid, c in sorted(info["components"].items())
               for name, m in sorted((c.get("metrics") or {}).items())]
    if metrics:
        print()
        print(table(["COMPONENT", "METRIC", "TYPE", "VALUE"], metrics))
    # the scheduler's assignment (what a worker may use) beside what its process measured
    workers = [[w["worker"], w.get("version"), stamp(w.get("version_since")), w.get("state"), w.get("host"),
                w.get("assigned_host"), (w.get("resources") or {}).get("cpu_percent"),
                (w.get("resources") or {}).get("memory_mb"),
                _num(w.get("cpu_percent")), _num(w.get("rss_mb")), _num(w.get("memory_limit_mb")),
                w.get("memory_stops", 0), w.get("pid"), w.get("address"), w.get("restarts"),
                duration(w.get("uptime_secs")),
                w.get("tasks")]
               for w in info["workers"]]
    if workers:
        print()
        print(table(["WORKER", "VERSION", "SINCE", "STATE", "HOST", "ASSIGNED HOST", "ASSIGNED CPU %",
                     "ASSIGNED MEM MB", "CPU %", "RSS MB", "MEM LIMIT MB", "MEM STOPS", "PID", "ADDRESS",
                     "RESTARTS", "UPTIME", "TASKS"], workers))
    for w in info["workers"]:  # stopped over its memory limit and relaunched (squall.spark.memory)
        if w.get("memory_stops"):
            print(f"memory: worker {w['worker']} stopped {w['memory_stops']} time(s) over its limit; "
                  f"last: {w.get('memory_stop') or w.get('last_error')}")
    for note in info.get("placement_notes") or []:
        print(f"placement: {note}")
    rescale = rescale_line(info.get("rescale"))
    if rescale:
        print(rescale)
    print_upgrade(info)
    print_autoscale(info)
    if args.tasks:
        rows = [[t["task"], t["component"], t["worker"], t["pid"], stamp(t.get("start_time")),
                 stamp(t["last_heartbeat"]), _secs(t["heartbeat_age_secs"]), _secs(t["idle_secs"]),
                 t.get("emitted"), t.get("executed"), t.get("acked"), t.get("failed")]
                for t in info.get("tasks", [])]
        print()
        if info["master"].get("state") != "RUNNING" and rows:
            print(f"master {info['master'].get('state')}: the tasks as its last heartbeat stored them")
        print(table(["TASK", "COMPONENT", "WORKER", "PID", "STARTED", "HEARTBEAT", "AGE S", "IDLE S",
                     "EMITTED", "EXECUTED", "ACKED", "FAILED"], rows))
    if info["errors"]:
        last = info["errors"][-1]
        print(f"\n{len(info['errors'])} error(s); last, from {last['component']} task {last['task']}: "
              f"{last['message']} (squall errors {args.name})")
    return 0


def rescale_line(rec: dict | None) -> str:
    """The last rescale in one line ('' before the first).

    >>> rescale_line({"status": "done", "components": {"count": [4, 12]}, "live": True,
    ...               "moved_key_groups": 0, "moved_bytes": 0, "pause_ms": 1.5, "reason": None})
    'rescale: done, live: count 4 -> 12; key groups moved 0 (0 bytes); pause 1.5 ms'
    """
    if not rec:
        return ""
    comps = ", ".join(f"{c} {o} -> {n}" for c, (o, n) in sorted((rec.get("components") or {}).items()))
    how = "live" if rec.get("live") else "restart"
    line = (f"rescale: {rec.get('status')}, {how}: {comps or 'no task counts changed'}; key groups "
            f"moved {rec.get('moved_key_groups', 0)} ({rec.get('moved_bytes', 0)} bytes); "
            f"pause {rec.get('pause_ms', 0)} ms")
    return line + (f"; {rec['reason']}" if rec.get("reason") else "")


def _system(name: str) -> bool:
    return name.startswith(("__", "$"))


def stream_rows(components: dict) -> list[list]:
    """Per output stream (``-> stream``) and input stream (``<- component:stream``) of each component.

    Output counts are exact; input figures are estimated from the sampled tuples (see
    docs/metrics.md). squall's own streams are left out, as Storm's UI leaves them out.

    >>> out = {"stream": "default", "emitted": 5, "transferred": 5}
    >>> inp = {"component": "spout", "stream": "default", "executed": 2, "acked": 2, "failed": 0,
    ...        "execute_latency_ms": 0.5, "process_latency_ms": None}
    >>> for row in stream_rows({"split": {"streams": {"outputs": [out], "inputs": [inp]}}}):
    ...     print(row)
    ['split', '-> default', 5, 5, '-', '-', '-', '-', '-']
    ['split', '<- spout:default', '-', '-', 2, 2, 0, '0.500', '-']
    """
    rows: list[list] = []
    for cid, c in sorted(components.items()):
        if _system(cid):
            continue
        streams = c.get("streams") or {}
        for o in streams.get("outputs") or []:
            if not _system(o["stream"]):
                rows.append([cid, f"-> {o['stream']}", o["emitted"], o["transferred"], *["-"] * 5])
        for i in streams.get("inputs") or []:
            if _system(i["component"]) or _system(i["stream"]):
                continue
            rows.append([cid, f"<- {i['component']}:{i['stream']}", "-", "-", i["executed"], i["acked"],
                         i["failed"], _ms(i.get("execute_latency_ms")), _ms(i.get("process_latency_ms"))])
    return rows


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def print_upgrade(info: dict) -> None:
    """The open gray upgrade (or the last one): state, batches, which workers run which code."""
    up, title = info.get("upgrade"), "gray upgrade"
    if not up:
        up, title = info.get("last_upgrade"), "last gray upgrade"
    if not up:
        return
    print(f"\n{title}: version {up['from']} -> {up['to']}, {up['state']}; "
          f"on version {up['to']}: {up['workers']}, on version {up['from']}: {up['old_workers']}")
    if up.get("expires_at"):
        print(f"expires at {stamp(up['expires_at'])} unless continued, completed or rolled back")
    rows = [[i + 1, b["workers"], stamp(b["asked"]), stamp(b.get("finished")), b.get("error") or ""]
            for i, b in enumerate(up.get("batches") or [])]
    if rows:
        print(table(["BATCH", "WORKERS", "ASKED", "FINISHED", "ERROR"], rows))


def print_autoscale(info: dict) -> None:
    """The autoscaler's mode and its last decisions, with the reason and the figures used."""
    record = info.get("autoscale")
    if not record:
        return
    decisions = record.get("decisions") or []
    print(f"\nautoscale ({record['mode']}): {record.get('windows', 0)} window(s) looked at, "
          f"{len(decisions)} decision(s) kept")
    rows = []
    for d in decisions[-5:]:
        changes = ", ".join(f"{c} {old}->{new}" for c, (old, new) in sorted(d["changes"].items())) or "-"
        state = "applied" if d.get("applied") else ("recommended" if d.get("mode") == "recommend" else
                                                     "not applied")
        left = "; ".join(f"{c}: {why}" for c, why in sorted((d.get("left") or {}).items()))
        rows.append([_secs(d.get("time")), changes, state, d.get("note") or left or d.get("reason")])
    print(table(["AT S", "CHANGES", "STATE", "WHY"], rows))


def _secs(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def stamp(t: float | None) -> str:
    """A time of day for the tables (local time)."""
    return "-" if not t else time.strftime("%H:%M:%S", time.localtime(t))


def print_conf(args: argparse.Namespace) -> int:
    """``info NAME --conf``: every key, its value and its source."""
    conf = client(args).get(f"/topologies/{args.name}/conf")
    if args.json:
        print_json(conf)
        return 0
    print(f"topology {args.name!r} version {conf['version']}")
    print(table(["KEY", "VALUE", "SOURCE"],
                [[r["key"], json.dumps(r["value"]), r["source"]] for r in conf["topology"]]))
    for cid, rows in conf["components"].items():
        print()
        print(table(["COMPONENT", "KEY", "VALUE", "SOURCE"],
                    [[cid, r["key"], json.dumps(r["value"]), r["source"]] for r in rows]))
    return 0


def _num(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3f}".rstrip("0").rstrip(".") if abs(v) < 1e6 else f"{v:.4g}"
    return str(v)


def metric_summary(m: dict) -> str:
    """One line for a component's user metric (shapes in docs/metrics.md).

    >>> metric_summary({"type": "counter", "count": 12})
    '12'
    >>> metric_summary({"type": "meter", "count": 30, "rate": 2.5, "mean_rate": 3.0})
    'count=30 rate=2.5/s'
    """
    kind = m.get("type")
    if kind == "counter":
        return _num(m.get("count"))
    if kind == "gauge":
        values = m.get("values") or {}
        if len(values) == 1:
            return _num(next(iter(values.values())))
        return f"sum={_num(m.get('sum'))} min={_num(m.get('min'))} max={_num(m.get('max'))}"
    if kind == "meter":
        return f"count={_num(m.get('count'))} rate={_num(m.get('rate'))}/s"
    if kind in ("histogram", "timer"):
        unit = "_ms" if kind == "timer" else ""
        parts = [f"count={_num(m.get('count'))}"]
        parts += [f"{k}{unit}={_num(m.get(k + unit))}" for k in ("mean", "p50", "p99", "max")]
        if kind == "timer":
            parts.append(f"rate={_num(m.get('rate'))}/s")
        return " ".join(parts)
    return kind or "-"
