"""``squall info`` prints the components' user metrics (squall/cli/commands/info.py)."""

from __future__ import annotations

import argparse
import re

from squall.cli.commands import info as info_cmd


class FakeClient:
    def __init__(self, body):
        self.body = body

    def get(self, path):
        assert path == "/topologies/wc"
        return self.body


def component(metrics):
    return {"tasks": [1, 2], "emitted": 10, "acked": 10, "failed": 0, "execute_latency_ms": 0.5,
            "complete_latency_ms": 3.0, "capacity": 0.1, "errors": 0, "metrics": metrics}


def test_info_prints_a_metrics_table(monkeypatch, capsys):
    body = {
        "name": "wc", "status": "ACTIVE", "version": 1, "uptime_secs": 10.0, "master": {"state": "RUNNING"},
        "workers": [], "errors": [],
        "components": {
            "split": component({
                "parsed": {"type": "counter", "count": 42},
                "depth": {"type": "gauge", "values": {"1": 3, "2": 4}, "sum": 7, "min": 3, "max": 4,
                          "mean": 3.5},
                "lookups": {"type": "timer", "count": 9, "mean_ms": 1.25, "p50_ms": 1.0, "p99_ms": 4.0,
                            "max_ms": 4.0, "rate": 0.9},
            }),
            "count": component({}),
        },
    }
    monkeypatch.setattr(info_cmd, "client", lambda args: FakeClient(body))
    assert info_cmd.run(argparse.Namespace(name="wc", json=False, conf=False, tasks=False)) == 0
    out = capsys.readouterr().out
    lines = out[out.index("COMPONENT  METRIC"):].splitlines()
    assert lines[0].split() == ["COMPONENT", "METRIC", "TYPE", "VALUE"]
    assert lines[1].split() == ["split", "depth", "gauge", "sum=7", "min=3", "max=4"]
    assert lines[2].split() == ["split", "lookups", "timer", "count=9", "mean_ms=1.25", "p50_ms=1",
                                "p99_ms=4", "max_ms=4", "rate=0.9/s"]
    assert lines[3].split() == ["split", "parsed", "counter", "42"]


def test_info_without_user_metrics_prints_no_metrics_table(monkeypatch, capsys):
    body = {"name": "wc", "status": "ACTIVE", "version": 1, "uptime_secs": 1.0, "master": {},
            "workers": [], "errors": [], "components": {"count": component({})}}
    monkeypatch.setattr(info_cmd, "client", lambda args: FakeClient(body))
    info_cmd.run(argparse.Namespace(name="wc", json=False, conf=False, tasks=False))
    assert "METRIC" not in capsys.readouterr().out


def test_worker_columns_say_assigned_and_show_what_the_process_measured(monkeypatch, capsys):
    """Issue 31: "CPU % 260.0" and "MEM MB 3328.0" were the scheduler's assignment, shown as if
    measured; now labelled as assigned, with the worker's own CPU % and RSS beside them."""
    worker = {"worker": 0, "version": 1, "state": "RUNNING", "host": "127.0.0.1",
              "assigned_host": "127.0.0.1", "resources": {"cpu_percent": 260.0, "memory_mb": 3328.0},
              "cpu_percent": 97.5, "rss_mb": 81.3,
              "pid": 4242, "address": "tcp://127.0.0.1:5000", "restarts": 0, "uptime_secs": 60.0,
              "tasks": [1, 2]}
    body = {"name": "wc", "status": "ACTIVE", "version": 1, "uptime_secs": 60.0, "master": {},
            "workers": [worker], "errors": [], "components": {"count": component({})}}
    monkeypatch.setattr(info_cmd, "client", lambda args: FakeClient(body))
    info_cmd.run(argparse.Namespace(name="wc", json=False, conf=False, tasks=False))
    out = capsys.readouterr().out
    header, row = out[out.index("WORKER "):].splitlines()[:2]
    starts = {m.group(0): m.start() for m in re.finditer(r"\S+(?: \S+)*", header)}  # column -> where
    columns = list(starts)
    assert columns[5:10] == ["ASSIGNED HOST", "ASSIGNED CPU %", "ASSIGNED MEM MB", "CPU %", "RSS MB"]
    cells = {name: row[starts[name]:].split()[0] for name in columns[6:10]}
    assert cells == {"ASSIGNED CPU %": "260.0", "ASSIGNED MEM MB": "3328.0", "CPU %": "97.5",
                     "RSS MB": "81.3"}


def test_info_prints_each_chain(monkeypatch, capsys):
    body = {"name": "wc", "status": "ACTIVE", "version": 1, "uptime_secs": 1.0, "master": {},
            "workers": [], "errors": [], "components": {"map1": component({}), "map2": component({})},
            "chains": [["sentence", "map1", "map2"]]}
    monkeypatch.setattr(info_cmd, "client", lambda args: FakeClient(body))
    info_cmd.run(argparse.Namespace(name="wc", json=False, conf=False, tasks=False))
    assert "chain: sentence -> map1 -> map2" in capsys.readouterr().out.splitlines()
    body["chains"] = []
    info_cmd.run(argparse.Namespace(name="wc", json=False, conf=False, tasks=False))
    assert "chain:" not in capsys.readouterr().out
