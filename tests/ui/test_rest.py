"""Storm UI's REST API, squall's UI endpoints and ``/metrics``, against a real Nimbus.

The field lists are Storm's (docs/STORM-UI-REST-API.md of Apache Storm, and the fields
``UIHelpersTest`` checks): a client written for Storm's UI, such as streamparse's
``sparse stats``, reads them. Figures are checked against ``squall info``. The last tests
restart Nimbus (the history must survive it) and kill the topology through Storm's route.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.nimbus.harness import wait_for
from tests.prometheus_server import PrometheusServer
from tests.ui.conftest import NAME, REPO, artifacts_dir
from tests.ui.topology_source import COMPONENTS, SECRET_VALUE, STREAMS

pytestmark = [pytest.mark.spark, pytest.mark.slow]

# Storm's documented response fields
CLUSTER_FIELDS = {"stormVersion", "supervisors", "topologies", "slotsTotal", "slotsUsed", "slotsFree",
                  "executorsTotal", "tasksTotal", "schedulerDisplayResource", "totalMem", "totalCpu",
                  "availMem", "availCpu", "memAssignedPercentUtil", "cpuAssignedPercentUtil"}
NIMBUS_FIELDS = {"host", "port", "status", "nimbusUpTime", "nimbusUpTimeSeconds", "nimbusLogLink", "version"}
SUPERVISOR_FIELDS = {"id", "host", "uptime", "uptimeSeconds", "slotsTotal", "slotsUsed", "totalMem",
                     "totalCpu", "usedMem", "usedCpu"}
SUMMARY_FIELDS = {"id", "name", "status", "uptime", "uptimeSeconds", "tasksTotal", "workersTotal",
                  "executorsTotal", "replicationCount", "requestedMemOnHeap", "requestedMemOffHeap",
                  "requestedTotalMem", "requestedCpu", "assignedMemOnHeap", "assignedMemOffHeap",
                  "assignedTotalMem", "assignedCpu"}
TOPOLOGY_FIELDS = {"id", "name", "uptime", "uptimeSeconds", "status", "tasksTotal", "workersTotal",
                   "executorsTotal", "msgTimeout", "windowHint", "schedulerDisplayResource",
                   "replicationCount", "debug", "samplingPct", "assignedMemOnHeap", "assignedMemOffHeap",
                   "assignedTotalMem", "assignedCpu", "requestedMemOnHeap", "requestedMemOffHeap",
                   "requestedCpu", "topologyStats", "workers", "spouts", "bolts", "configuration", "window"}
STATS_FIELDS = {"windowPretty", "window", "emitted", "transferred", "completeLatency", "acked", "failed"}
WORKER_FIELDS = {"supervisorId", "host", "port", "topologyId", "topologyName", "executorsTotal",
                 "assignedMemOnHeap", "assignedMemOffHeap", "assignedCpu", "componentNumTasks", "uptime",
                 "uptimeSeconds", "workerLogLink"}
ERROR_FIELDS = {"lastError", "errorHost", "errorPort", "errorTime", "errorLapsedSecs", "errorWorkerLogLink"}
SPOUT_FIELDS = {"spoutId", "executors", "emitted", "completeLatency", "transferred", "tasks", "acked",
                "failed", "requestedMemOnHeap", "requestedMemOffHeap", "requestedCpu"} | ERROR_FIELDS
BOLT_FIELDS = {"boltId", "capacity", "processLatency", "executeLatency", "executors", "tasks", "acked",
               "failed", "emitted", "executed", "transferred", "requestedMemOnHeap", "requestedMemOffHeap",
               "requestedCpu"} | ERROR_FIELDS
COMPONENT_FIELDS = {"user", "id", "encodedId", "name", "executors", "tasks", "requestedMemOnHeap",
                    "requestedMemOffHeap", "requestedCpu", "schedulerDisplayResource", "topologyId",
                    "topologyStatus", "encodedTopologyId", "window", "componentType", "windowHint", "debug",
                    "samplingPct", "eventLogLink", "profilingAndDebuggingCapable", "profileActionEnabled",
                    "profilerActive", "componentErrors", "outputStats", "executorStats"}
PRETTY_WINDOWS = ["10m 0s", "3h 0m 0s", "1d 0h 0m 0s", "All time"]
WINDOWS = ["600", "10800", "86400", ":all-time"]


def is_float_str(v) -> bool:
    return isinstance(v, str) and len(v.split(".")[-1]) == 3 and float(v) >= 0


def test_cluster_nimbus_and_supervisor_summaries(world):
    cluster = world.get("/api/v1/cluster/summary")
    assert CLUSTER_FIELDS <= set(cluster), CLUSTER_FIELDS - set(cluster)
    info = world.info()
    assert cluster["topologies"] == 1
    assert cluster["slotsUsed"] == len(info["workers"]) == 2
    assert cluster["slotsTotal"] >= cluster["slotsUsed"]  # local[4]: four slots
    assert cluster["slotsTotal"] == 4 and cluster["slotsFree"] == 2
    assert cluster["tasksTotal"] == cluster["executorsTotal"] == info["num_tasks"]
    assert cluster["leader"] is True and cluster["leaderUrl"] == world.url

    nimbuses = world.get("/api/v1/nimbus/summary")["nimbuses"]
    assert len(nimbuses) == 1 and NIMBUS_FIELDS <= set(nimbuses[0])
    assert nimbuses[0]["status"] == "Leader" and nimbuses[0]["port"] == world.nimbus.port

    sups = world.get("/api/v1/supervisor/summary")
    assert sups["supervisors"], sups
    assert SUPERVISOR_FIELDS <= set(sups["supervisors"][0])
    assert {s["host"] for s in sups["supervisors"]} == {w["host"] for w in info["workers"]}
    assert sum(s["slotsUsed"] for s in sups["supervisors"]) == 2


def test_topology_summary_has_storms_fields_and_squalls_figures(world):
    rows = world.get("/api/v1/topology/summary")["topologies"]
    assert len(rows) == 1
    row = rows[0]
    assert SUMMARY_FIELDS <= set(row), SUMMARY_FIELDS - set(row)
    info = world.info()
    assert (row["name"], row["id"], row["status"]) == (NAME, info["id"], "ACTIVE")
    assert row["workersTotal"] == info["num_workers"] == 2
    assert row["tasksTotal"] == row["executorsTotal"] == info["num_tasks"]
    assert abs(row["uptimeSeconds"] - info["uptime_secs"]) <= 5
    assert row["uptime"] == "" if row["uptimeSeconds"] == 0 else row["uptime"].endswith("s")


def test_topology_page_matches_info(world):
    before = world.info()
    page = world.get(f"/api/v1/topology/{before['id']}")
    after = world.info()
    assert TOPOLOGY_FIELDS <= set(page), TOPOLOGY_FIELDS - set(page)
    assert page["window"] == ":all-time" and page["windowHint"] == "All time"
    assert page["msgTimeout"] == 5
    assert page["tasksTotal"] == before["num_tasks"] and page["workersTotal"] == 2
    assert [s["spoutId"] for s in page["spouts"]] == ["sentences"]
    assert sorted(b["boltId"] for b in page["bolts"]) == ["count", "report", "split", "total"]
    assert [s["window"] for s in page["topologyStats"]] == WINDOWS
    assert [s["windowPretty"] for s in page["topologyStats"]] == PRETTY_WINDOWS
    for stats in page["topologyStats"]:
        assert STATS_FIELDS <= set(stats) and is_float_str(stats["completeLatency"])
    for spout in page["spouts"]:
        assert SPOUT_FIELDS <= set(spout), SPOUT_FIELDS - set(spout)
        c0, c1 = before["components"][spout["spoutId"]], after["components"][spout["spoutId"]]
        assert c0["emitted"] <= spout["emitted"] <= c1["emitted"]
        assert c0["acked"] <= spout["acked"] <= c1["acked"]
        assert spout["tasks"] == spout["executors"] == len(c1["tasks"])
        assert is_float_str(spout["completeLatency"]) and float(spout["completeLatency"]) > 0
    for bolt in page["bolts"]:
        assert BOLT_FIELDS <= set(bolt), BOLT_FIELDS - set(bolt)
        c0, c1 = before["components"][bolt["boltId"]], after["components"][bolt["boltId"]]
        assert c0["executed"] <= bolt["executed"] <= c1["executed"]
        assert bolt["tasks"] == len(c1["tasks"])
        for key in ("capacity", "executeLatency", "processLatency"):
            assert is_float_str(bolt[key]), (key, bolt[key])
    total = next(b for b in page["bolts"] if b["boltId"] == "total")
    assert "ValueError: total: the third sentence is refused on purpose" in total["lastError"]
    assert len(total["lastError"]) <= 200
    assert total["errorTime"] <= time.time() and total["errorLapsedSecs"] >= 0 and total["errorHost"]
    quiet = next(b for b in page["bolts"] if b["boltId"] == "report")
    assert (quiet["lastError"], quiet["errorHost"], quiet["errorWorkerLogLink"]) == ("", "", "")
    assert quiet["errorPort"] is None and quiet["errorTime"] is None and quiet["errorLapsedSecs"] is None
    assert len(page["workers"]) == 2
    for w in page["workers"]:
        assert w["memoryMb"] > 10  # read from /proc: the workers run on this host
        assert WORKER_FIELDS <= set(w), WORKER_FIELDS - set(w)
        assert w["topologyId"] == before["id"] and isinstance(w["port"], int)
        assert sum(w["componentNumTasks"].values()) <= w["executorsTotal"]
    # by name as well as by id, and the same topology
    assert world.get(f"/api/v1/topology/{NAME}")["id"] == before["id"]


def test_windows_come_from_the_history(world):
    page = world.get(f"/api/v1/topology/{NAME}?window=600")
    assert page["window"] == "600" and page["windowHint"] == "10m 0s"
    spout = page["spouts"][0]
    all_time = world.get(f"/api/v1/topology/{NAME}")["spouts"][0]
    assert 0 < spout["emitted"] <= all_time["emitted"]
    status, _, body = world.raw(f"/api/v1/topology/{NAME}?window=soon")
    assert status == 400 and b"window must be a number of seconds" in body


def test_configuration_hides_secrets(world):
    page = world.get(f"/api/v1/topology/{NAME}")
    assert page["configuration"]["topology.message.timeout.secs"] == 5
    assert page["configuration"]["ui.test.password"] == "*****"
    for path in (f"/api/v1/topology/{NAME}", f"/api/v1/topologies/{NAME}", "/api/v1/topology/summary",
                 "/api/v1/cluster/summary", "/api/v1/cluster/configuration",
                 f"/api/v1/topology/{NAME}/metrics",
                 f"/api/v1/topology/{NAME}/component/split", "/metrics"):
        _, _, body = world.raw(path)
        assert SECRET_VALUE.encode() not in body, path
        assert world.token.encode() not in body, path


def test_component_pages(world):
    info = world.info()
    spout = world.get(f"/api/v1/topology/{info['id']}/component/sentences")
    assert COMPONENT_FIELDS <= set(spout), COMPONENT_FIELDS - set(spout)
    assert spout["componentType"] == "spout" and spout["windowHint"] == "All time"
    assert [s["window"] for s in spout["spoutSummary"]] == WINDOWS
    tasks = info["components"]["sentences"]["tasks"]
    assert [e["id"] for e in spout["executorStats"]] == [f"[{t}-{t}]" for t in tasks]

    bolt = world.get(f"/api/v1/topology/{NAME}/component/count?window=10800")
    assert bolt["componentType"] == "bolt" and bolt["window"] == "10800"
    assert [s["window"] for s in bolt["boltStats"]] == WINDOWS
    assert bolt["inputStats"] == [{**bolt["inputStats"][0], "component": "split", "stream": "words",
                                   "grouping": "fields"}]
    assert [o["stream"] for o in bolt["outputStats"]] == ["default"]
    tasks = info["components"]["count"]["tasks"]
    assert [e["task"] for e in bolt["executorStats"]] == tasks
    by_task = info["components"]["count"]["by_task"]
    for e in bolt["executorStats"]:
        assert e["executed"] >= by_task[str(e["task"])]["executed"]
        assert e["host"] and isinstance(e["port"], int) and is_float_str(e["capacity"])


def test_per_stream_figures_on_the_component_page_and_in_squall_info(world):
    """split emits on two streams: each has its own counts (issue 31), as in Storm's UI."""
    split = world.get(f"/api/v1/topology/{NAME}/component/split")
    outs = {o["stream"]: o for o in split["outputStats"]}
    assert set(outs) == {"words", "lengths"}
    # one lengths tuple per sentence, three to six words each; every copy goes to one task
    assert 3 * outs["lengths"]["emitted"] <= outs["words"]["emitted"] <= 6 * outs["lengths"]["emitted"] + 60
    assert outs["lengths"]["emitted"] > 0 and outs["words"]["transferred"] == outs["words"]["emitted"]
    total = world.info()["components"]["split"]["emitted"]
    assert outs["words"]["emitted"] + outs["lengths"]["emitted"] <= total
    printed = world.cli("info", NAME, check=True).stdout
    assert re.search(r"split\s+-> words\s+\d+", printed), printed
    assert re.search(r"count\s+<- split:words\s+-\s+-\s+\d+", printed), printed

    split = world.get(f"/api/v1/topology/{NAME}/component/split")
    assert split["metrics"]["words"]["type"] == "counter" and split["metrics"]["words"]["count"] > 0

    total = world.get(f"/api/v1/topology/{NAME}/component/total")
    err = total["componentErrors"][0]
    assert "Traceback" in err["error"] and "refused on purpose" in err["error"]
    assert err["errorTime"] > 10**12  # Storm gives this one in milliseconds
    public = world.get(f"/api/v1/topology/{NAME}/component/total", token=None)
    assert public["componentErrors"] == []  # tracebacks hold tuple values: the token's holder only
    page = world.get(f"/api/v1/topology/{NAME}", token=None)
    assert all(b["lastError"] in ("", "(needs the token)") for b in page["bolts"])
    assert "refused on purpose" not in json.dumps(page)
    status, _, body = world.raw(f"/api/v1/topology/{NAME}/component/nope")
    assert status == 404 and b"components: count, report, sentences, split, total" in body


def test_autoscale_decisions_in_info_the_rest_page_squall_info_and_metrics(world):
    """The topology runs the autoscaler in recommend mode (issue 39): decisions shown, none applied."""
    def decided():
        info = world.info()
        return info if (info.get("autoscale") or {}).get("windows") else None

    info = wait_for(decided, timeout=60, what="an autoscale window")
    assert info["autoscale"]["mode"] == "recommend"
    for decision in info["autoscale"]["decisions"]:  # a steady load may decide nothing
        assert decision["applied"] is False and decision["mode"] == "recommend"
        assert set(decision["target_rates"]) >= {"sentences", "split", "count"}
    page = world.get(f"/api/v1/topology/{NAME}")
    assert page["autoscale"]["mode"] == "recommend" and page["autoscale"]["windows"] >= 1
    printed = world.cli("info", NAME, check=True).stdout
    assert "autoscale (recommend)" in printed, printed
    text = world.raw("/metrics")[2].decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    targets = {s.labels["component"]: s.value for s in families["squall_autoscale_target_parallelism"].samples
               if s.labels["topology"] == NAME}
    current = {s.labels["component"]: s.value for s in families["squall_component_parallelism"].samples
               if s.labels["topology"] == NAME}
    assert set(targets) == {"sentences", "split", "count", "report", "total"}
    assert current["count"] == len(info["components"]["count"]["tasks"])


def test_topology_metrics_and_workers(world):
    metrics = world.get(f"/api/v1/topology/{NAME}/metrics?window=600")
    assert metrics["window"] == "600" and metrics["window-hint"] == "10m 0s"
    assert [s["id"] for s in metrics["spouts"]] == ["sentences"]
    count = next(b for b in metrics["bolts"] if b["id"] == "count")
    assert count["executed"][0]["component_id"] == "split" and count["executed"][0]["stream_id"] == "words"
    assert is_float_str(count["executed_ms_avg"][0]["value"])
    workers = world.get(f"/api/v1/topology-workers/{NAME}")
    info = world.info()
    assert sorted((w["host"], w["port"]) for w in workers["hostPortList"]) == sorted(
        (w["host"], int(w["address"].rsplit(":", 1)[1])) for w in info["workers"])


def test_graph_has_every_component_and_grouping(world):
    g = world.get(f"/api/v1/topologies/{NAME}/graph")
    assert {n["id"]: n["kind"] for n in g["nodes"]} == COMPONENTS
    edges = {(e["source"], e["target"]): (e["stream"], e["grouping"]) for e in g["edges"]}
    assert edges == STREAMS
    assert len({e["stream"] for e in g["edges"]}) == 3
    cols = {n["id"]: n["column"] for n in g["nodes"]}
    assert cols == {"sentences": 0, "split": 1, "count": 2, "total": 2, "report": 3}


def test_history_series(world):
    wait_for(lambda: len(world.get(f"/api/v1/topologies/{NAME}/history?window=600")["points"]) >= 2, 30,
             "two 10-second buckets of history")
    h = world.get(f"/api/v1/topologies/{NAME}/history?window=600")
    assert h["resolution"] == 10 and h["window"] == 600
    assert h["kinds"] == COMPONENTS
    times = [p["time"] for p in h["points"]]
    assert times == sorted(times) and all(t % 10 == 0 for t in times)
    assert sum(p["components"].get("sentences", {}).get("emitted", 0) for p in h["points"]) > 0
    one = world.get(f"/api/v1/topologies/{NAME}/history?window=10800&component=split")
    assert one["resolution"] == 60 and all(set(p["components"]) <= {"split"} for p in one["points"])


def test_prometheus_metrics_parse(world):
    before = world.info()
    status, headers, body = world.raw("/metrics")
    after = world.info()
    assert status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
    text = body.decode()
    (artifacts_dir() / "metrics.txt").write_text(text)
    families = {f.name: f for f in text_string_to_metric_families(text)}
    for name in ("squall_nimbus_leader", "squall_topology_info", "squall_topology_uptime_seconds",
                 "squall_component_emitted", "squall_component_acked", "squall_component_capacity",
                 "squall_component_execute_latency_ms", "squall_component_complete_latency_ms",
                 "squall_task_executed", "squall_worker_up", "squall_worker_restarts"):
        assert name in families, f"{name} not in {sorted(families)}"
    assert families["squall_component_complete_latency_ms"].type == "summary"
    # every series docs/ui.md names is there
    for name in documented_series():
        family = name.removesuffix("_total")
        assert family in families, f"{name} (docs/ui.md) not in /metrics"
    assert families["squall_component_emitted"].type == "counter"
    emitted = {s.labels["component"]: s.value for s in families["squall_component_emitted"].samples
               if s.name == "squall_component_emitted_total"}
    assert set(COMPONENTS) <= set(emitted)
    for c in COMPONENTS:
        assert before["components"][c]["emitted"] <= emitted[c] <= after["components"][c]["emitted"], c
    user = [s for s in families["squall_user_metric"].samples if s.labels["metric"] == "words"]
    assert [(s.labels["component"], s.labels["type"], s.labels["field"]) for s in user] == [
        ("split", "counter", "count")]
    words = (before["components"]["split"]["metrics"]["words"]["count"],
             after["components"]["split"]["metrics"]["words"]["count"])
    assert 0 < words[0] <= user[0].value <= words[1]
    assert all(s.value > 10e6 for s in families["squall_worker_memory_bytes"].samples)
    up = [s for s in families["squall_worker_up"].samples]
    assert len(up) == 2 and all(s.value == 1 for s in up)



def test_prometheus_evaluates_histogram_quantile_over_the_latencies(world, tmp_path):
    """Issue 31: Debian's prometheus scrapes /metrics; histogram_quantile() answers for the
    spout's complete latency and the bolts' execute and process latency, per worker."""
    port = world.url.rsplit(":", 1)[1]
    with PrometheusServer(tmp_path / "prometheus", [f"127.0.0.1:{port}"]) as prom:
        count = f'squall_spout_complete_latency_seconds_count{{topology="{NAME}"}}'
        wait_for(lambda: prom.query(count), 60, f"prometheus to scrape {count}")
        assert prom.targets_health() == ["up"]
        acked = world.info()["components"]["sentences"]["acked"]
        scraped = prom.query(count)
        assert {r["metric"]["component"] for r in scraped} == {"sentences"}
        assert {r["metric"]["worker"] for r in scraped} <= {"0", "1"}
        assert 0 < sum(float(r["value"][1]) for r in scraped) <= acked
        quantile = ("histogram_quantile({q}, sum by (le, component) "
                    f'({{{{__name__="{{family}}_bucket",topology="{NAME}"}}}}))')
        for family, components in (("squall_spout_complete_latency_seconds", {"sentences"}),
                                    ("squall_bolt_execute_latency_seconds", {"split", "count", "total"}),
                                    ("squall_bolt_process_latency_seconds", {"split", "count", "total"})):
            p50 = {r["metric"]["component"]: float(r["value"][1])
                   for r in prom.query(quantile.format(q=0.5, family=family))}
            p99 = {r["metric"]["component"]: float(r["value"][1])
                   for r in prom.query(quantile.format(q=0.99, family=family))}
            assert components <= set(p50), (family, p50)
            for c in components:
                assert 0 < p50[c] <= p99[c] <= 10, (family, c, p50[c], p99[c])
        (artifacts_dir() / "prometheus-quantiles.json").write_text(json.dumps(
            prom.query(quantile.format(q=0.99, family="squall_spout_complete_latency_seconds"))))


def test_workers_measure_their_own_memory_and_cpu(world):
    """Issue 31: the scheduler's assigned CPU and memory are labelled as such; beside them each
    worker's process reports its own RSS and CPU in its heartbeats (info, REST, /metrics)."""
    info = world.info()
    for w in info["workers"]:
        with open(f"/proc/{w['pid']}/status") as f:  # the workers run on this host
            vmrss_mb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024
        assert 10 < w["rss_mb"] and abs(w["rss_mb"] - vmrss_mb) < 0.5 * vmrss_mb, (w["rss_mb"], vmrss_mb)
        assert w["cpu_percent"] >= 0 and w["cpu_secs"] > 0
        assert w["resources"]["memory_mb"] > 0  # the scheduler's assignment, a different figure
    page = world.get(f"/api/v1/topology/{NAME}")
    for w in page["workers"]:
        mine = next(x for x in info["workers"] if x["worker"] == w["worker"])
        assert w["assignedMemOnHeap"] == mine["resources"]["memory_mb"]
        assert w["assignedCpu"] == mine["resources"]["cpu_percent"]
        assert w["rssMb"] > 10 and w["cpuPercent"] >= 0
    _, _, body = world.raw("/metrics")
    fams = {f.name: f for f in text_string_to_metric_families(body.decode())}
    cpu = [s for s in fams["squall_worker_cpu_seconds"].samples if s.labels["topology"] == NAME]
    assert len(cpu) == 2 and all(s.value > 0 for s in cpu)
    assigned = [s.value for s in fams["squall_worker_assigned_memory_bytes"].samples]
    measured = [s.value for s in fams["squall_worker_memory_bytes"].samples]
    assert len(assigned) == len(measured) == 2 and assigned != measured
    text = world.cli("info", NAME, check=True).stdout
    assert "ASSIGNED CPU %" in text and "ASSIGNED MEM MB" in text and "RSS MB" in text

def documented_series() -> set[str]:
    """The series names in docs/ui.md's Prometheus table, with ``{a,b}`` expanded."""
    text = (REPO / "docs" / "ui.md").read_text()
    section = text.split("## Prometheus", 1)[1].split("\n## ", 1)[0]
    names = set()
    for raw in re.findall(r"`(squall_[a-z_{},]+)", section):
        m = re.fullmatch(r"(squall_[a-z_]*)\{([a-z_,]+)\}(_[a-z_]+)?", raw)
        if m and "," in m.group(2):
            names |= {f"{m.group(1)}{part}{m.group(3) or ''}" for part in m.group(2).split(",")}
        else:
            names.add(raw.split("{")[0])
    assert len(names) > 20, names
    return names


def test_mutations_need_the_token(world):
    info = world.info()
    for path in (f"/api/v1/topology/{info['id']}/deactivate", f"/api/v1/topology/{NAME}/kill/0",
                 f"/api/v1/topology/{NAME}/rebalance/0"):
        status, body = world.post(path, token=None)
        assert status == 401 and body["code"] == "unauthorized", (path, body)
        status, body = world.post(path, token="wrong")
        assert status == 403 and body["code"] == "forbidden", (path, body)
    assert world.info()["status"] == "ACTIVE"
    status, _, _ = world.raw(f"/api/v1/topologies/{NAME}/logs?worker=0")
    assert status == 401  # logs may hold what a component printed: the token guards them


def test_storm_deactivate_and_activate(world):
    tid = world.info()["id"]
    status, body = world.post(f"/api/v1/topology/{tid}/deactivate")
    assert status == 200
    assert body == {"topologyOperation": "deactivate", "topologyId": tid, "status": "success"}
    assert world.info()["status"] == "INACTIVE"
    assert world.get(f"/api/v1/topology/{tid}")["status"] == "INACTIVE"
    status, body = world.post(f"/api/v1/topology/{NAME}/activate")
    assert status == 200 and body["topologyOperation"] == "activate"
    assert world.info()["status"] == "ACTIVE"


def test_storm_rebalance_checks_its_options(world):
    status, body = world.post(f"/api/v1/topology/{NAME}/rebalance/0",
                              {"rebalanceOptions": {"numWorkers": 0}})
    assert status == 400 and "numWorkers" in body["error"]
    status, body = world.post(f"/api/v1/topology/{NAME}/rebalance/0",
                              {"rebalanceOptions": {"executors": {"split": "many"}}})
    assert status == 400 and "executors.split" in body["error"]


def test_worker_logs_with_the_token(world):
    info = world.info()
    task = info["components"]["total"]["tasks"][0]
    worker = next(w for w in info["workers"] if task in w["tasks"])
    req = urllib.request.Request(f"{world.url}/api/v1/topologies/{NAME}/logs?worker={worker['worker']}",
                                 headers={"Authorization": f"Bearer {world.token}"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        page = json.load(resp)
    assert "refused on purpose" in page["text"]
    assert all(f"squall worker pid {worker['pid']} " in line for line in page["text"].splitlines())
    assert page["offset"] <= page["size"]
    # the command line: the same lines, and nothing without the token
    out = world.cli("logs", NAME, "--worker", str(worker["worker"]), check=True).stdout
    assert "refused on purpose" in out
    refused = world.cli("logs", NAME, env={"SQUALL_TOKEN": "wrong"})
    assert refused.returncode == 6 and "token is wrong" in refused.stderr
    missing = world.cli("logs", NAME, "--worker", "7")
    assert missing.returncode == 4 and "no worker 7" in missing.stderr


def test_squall_ui_prints_where_the_ui_is(world):
    out = world.cli("ui", check=True).stdout
    assert f"{world.url}/" in out and f"{world.url}/metrics" in out
    status, headers, body = world.raw("/")
    assert status == 200 and b"squall" in body


def samples(world, since=0, component=None, token=""):
    query = f"&component={component}" if component else ""
    req = urllib.request.Request(f"{world.url}/api/v1/topologies/{NAME}/samples?since={since}{query}",
                                 headers={"Authorization": f"Bearer {world.token if token == '' else token}"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.load(resp)


def test_sampling_tuples_without_a_restart(world):
    first = samples(world)
    assert first["debug"] is None  # off by default (or turned off by the browser test)
    time.sleep(3)
    assert samples(world, since=first["last"])["samples"] == []  # nothing is sampled while off
    assert world.get(f"/api/v1/topology/{NAME}")["debug"] is False
    pid_before = {w["worker"]: w["pid"] for w in world.info()["workers"]}

    status, body = world.post(f"/api/v1/topology/{NAME}/component/count/debug/enable/100")
    assert status == 200 and body["topologyOperation"] == "debug"
    page = world.get(f"/api/v1/topology/{NAME}")
    assert page["debug"] is True and page["samplingPct"] == 100.0
    assert world.get(f"/api/v1/topology/{NAME}/component/count")["debug"] is True
    assert world.get(f"/api/v1/topology/{NAME}/component/split")["debug"] is False
    since = first["last"]
    got = wait_for(lambda: [s for s in samples(world, since)["samples"]]
                   if len(samples(world, since)["samples"]) >= 5 else None, 20, "sampled tuples of count")
    assert {s["component"] for s in got} == {"count"}, got[:3]
    count_tasks = set(world.info()["components"]["count"]["tasks"])
    for s in got:
        assert s["stream"] == "default" and s["worker"] in pid_before
        assert s["task"] in count_tasks  # the emitting task (issue 31)
        word, n = s["values"]
        assert word in ("apple", "banana", "cherry", "date", "elder", "fig", "grape") and n >= 1
        assert abs(s["time"] - time.time()) < 60
    assert [s["seq"] for s in got] == sorted(s["seq"] for s in got)
    assert {w["worker"]: w["pid"] for w in world.info()["workers"]} == pid_before  # no restart

    status, _ = world.post(f"/api/v1/topology/{NAME}/debug/disable/0")
    assert status == 200 and world.get(f"/api/v1/topology/{NAME}")["debug"] is False
    time.sleep(2.5)  # a heartbeat may have been on its way
    last = samples(world)["last"]
    time.sleep(3)
    assert samples(world, since=last)["samples"] == []

    # the command line: a share of one component's tuples, then off
    out = world.cli("debug", NAME, "split", "--sample", "0.5", check=True).stdout
    assert "sampling 50% of the tuples component 'split'" in out
    wait_for(lambda: samples(world, since=last, component="split")["samples"], 20, "split's samples")
    printed = world.cli("samples", NAME, "split", check=True).stdout
    assert re.search(r"  split  (words|lengths)  task \d+  worker ", printed), printed
    assert "  count  " not in printed.split("split", 1)[-1]
    assert "sampling of 'uiwc' is off" in world.cli("debug", NAME, "--off", check=True).stdout
    assert world.info()["status"] == "ACTIVE"

    # refusals
    assert world.cli("debug", NAME, "nope", "--sample", "0.1").returncode == 4
    assert world.cli("debug", NAME, "--sample", "2").returncode == 2
    assert world.post(f"/api/v1/topologies/{NAME}/debug", {"sample": 0.1}, token=None)[0] == 401
    with pytest.raises(urllib.error.HTTPError) as e:
        samples(world, token="wrong")
    assert e.value.code == 403


def test_history_survives_a_nimbus_restart(world):
    before = world.get(f"/api/v1/topologies/{NAME}/history?window=600")["points"]
    assert before
    world.nimbus.stop()  # SIGTERM: the observer saves the history on the way out
    world.nimbus.start()
    world.nimbus.wait_leader()
    after = world.get(f"/api/v1/topologies/{NAME}/history?window=600")["points"]
    assert {p["time"] for p in before} <= {p["time"] for p in after}
    first = before[0]["time"]
    old = next(p for p in after if p["time"] == first)
    assert old["components"]["sentences"]["emitted"] >= before[0]["components"]["sentences"]["emitted"]


def test_storm_kill_is_last(world):
    tid = world.info()["id"]
    status, body = world.post(f"/api/v1/topology/{tid}/kill/0")
    assert status == 200 and body == {"topologyOperation": "kill", "topologyId": tid, "status": "success"}
    assert world.get("/api/v1/topology/summary")["topologies"] == []
    status, _, _ = world.raw(f"/api/v1/topology/{tid}")
    assert status == 404
    status, _, _ = world.raw(f"/api/v1/topologies/{NAME}/history")
    assert status == 404
    with sqlite3.connect(world.home / "nimbus.sqlite3") as db:  # its history left the store with it
        assert db.execute("SELECT key FROM kv WHERE key LIKE 'history/%'").fetchall() == []


def test_openapi_describes_every_ui_route(world):
    from squall.nimbus import ui_api

    doc = world.get("/api/v1/openapi.json")
    routes = ui_api.UiApi(None, None).routes()  # type: ignore[arg-type]
    for method, pattern, auth, _ in routes:
        path = (pattern.replace(ui_api.ID, "{id}").replace(ui_api.COMPONENT, "{component}")
                .replace(ui_api.WAIT, "{wait}").replace(ui_api.NAME, "{name}")
                .replace(ui_api.ACTION, "{action}").replace(ui_api.PCT, "{pct}"))
        op = doc["paths"][path][method.lower()]
        assert ("security" in op) == auth, (method, path)
    assert "/metrics" in doc["paths"]
