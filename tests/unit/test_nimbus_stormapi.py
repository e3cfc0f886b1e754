"""Storm UI's REST shapes, ported from Storm's UIHelpersTest and its REST API documentation."""

from __future__ import annotations

from squall.nimbus.history import MetricHistory
from squall.nimbus.stormapi import (
    TopologyView,
    cluster_summary,
    component_page,
    float_str,
    pretty_uptime,
    topology_page,
    topology_summary_row,
    window_hint,
)

NOW = 1_700_000_100.0
SHAPE = {
    "spout": {"kind": "spout", "parallelism": 1, "tasks": 1, "streams": {"default": ["w"]}, "inputs": [],
              "memory_load_mb": None, "cpu_load_percent": None},
    "MyBoltId": {"kind": "bolt", "parallelism": 2, "tasks": 3, "streams": {"default": ["w"]},
                 "inputs": [{"component": "spout", "stream": "default", "grouping": "shuffle", "fields": []}],
                 "memory_load_mb": 1024.0, "cpu_load_percent": 75.0},
}


def info(errors=()):
    return {
        "name": "t", "id": "t-1-abc", "status": "ACTIVE", "uptime_secs": 65.4, "num_workers": 1, "version": 1,
        "components": {
            "spout": {"tasks": [1], "emitted": 10, "transferred": 10, "acked": 9, "failed": 1,
                      "executed": 0, "complete_latency_ms": 12.3456, "capacity": 0.0},
            "MyBoltId": {"tasks": [2, 3, 4], "emitted": 43234, "transferred": 3423423, "acked": 5553,
                         "failed": 220, "executed": 153343, "execute_latency_ms": 122.0,
                         "process_latency_ms": 432.0, "capacity": 0.97,
                         "by_task": {"2": {"executed": 1}}},
            "__acker": {"tasks": [5], "emitted": 0},
        },
        "workers": [{"worker": 0, "host": "my.errored.host", "pid": 9, "tasks": [1, 2, 3, 4, 5],
                     "address": "tcp://my.errored.host:4321", "uptime_secs": 60}],
        "errors": list(errors),
    }


def view(errors=(), now=NOW, history=None):
    return TopologyView(info(errors), SHAPE, {"topology.message.timeout.secs": 100}, history, now)


def bolt(page, cid="MyBoltId"):
    return next(b for b in page["bolts"] if b["boltId"] == cid)


def test_pretty_uptime_and_window_hint_as_storm():
    assert pretty_uptime(0) == ""
    assert pretty_uptime(59) == "59s"
    assert pretty_uptime(3600) == "1h 0m 0s"
    assert pretty_uptime(90061) == "1d 1h 1m 1s"
    assert window_hint(":all-time") == "All time"
    assert window_hint("10800") == "3h 0m 0s"
    assert float_str(0.97) == "0.970" and float_str(None) == "0.000"


def test_bolt_includes_last_error():  # UIHelpersTest.test_getTopologyBoltAggStatsMap_includesLastError
    error_time = int(NOW) - 13
    error = {"component": "MyBoltId", "task": 2, "time": error_time,
             "message": "This is my test error message",
             "traceback": "Traceback...\nValueError: This is my test error message\n"}
    b = bolt(topology_page(view([error]), ":all-time"))
    assert b["boltId"] == b["encodedBoltId"] == "MyBoltId"
    assert b["lastError"].startswith("This is my test error message")
    assert b["errorPort"] == 4321 and b["errorHost"] == "my.errored.host"
    assert b["errorTime"] == error_time and b["errorLapsedSecs"] == 13
    assert b["errorWorkerLogLink"]


def test_bolt_has_no_last_error():  # test_getTopologyBoltAggStatsMap_hasNoLastError
    b = bolt(topology_page(view(), ":all-time"))
    assert (b["lastError"], b["errorHost"], b["errorWorkerLogLink"]) == ("", "", "")
    assert b["errorPort"] is None and b["errorTime"] is None and b["errorLapsedSecs"] is None


def test_bolt_general_fields():  # test_getTopologyBoltAggStatsMap_generalFields
    b = bolt(topology_page(view(), ":all-time"))
    assert b["transferred"] == 3423423 and b["executed"] == 153343
    assert b["executeLatency"] == "122.000" and b["processLatency"] == "432.000"
    assert b["capacity"] == "0.970"
    assert (b["failed"], b["acked"], b["emitted"]) == (220, 5553, 43234)
    assert b["executors"] == b["tasks"] == 3
    assert b["requestedMemOnHeap"] == 3 * 1024.0 and b["requestedCpu"] == 3 * 75.0


def test_truncated_last_error():
    error = {"component": "MyBoltId", "task": 2, "time": NOW, "message": "x" * 500, "traceback": ""}
    assert len(bolt(topology_page(view([error]), ":all-time"))["lastError"]) == 200
    full = component_page(view([error]), "MyBoltId", ":all-time")["componentErrors"][0]["error"]
    assert len(full) == 500


def test_topology_page_shape():
    page = topology_page(view(), ":all-time")
    assert page["msgTimeout"] == 100 and page["windowHint"] == "All time"
    assert page["tasksTotal"] == 5  # the acker's task counts, as squall info counts it
    assert [s["spoutId"] for s in page["spouts"]] == ["spout"]
    assert [b["boltId"] for b in page["bolts"]] == ["MyBoltId"]  # squall's own components left out
    assert page["spouts"][0]["completeLatency"] == "12.346"
    stats = page["topologyStats"][-1]
    assert stats["window"] == ":all-time" and stats["acked"] == 9 and stats["emitted"] == 10 + 43234
    w = page["workers"][0]
    assert w["port"] == 4321 and w["componentNumTasks"] == {"spout": 1, "MyBoltId": 3}
    assert w["uptime"] == "1m 0s" and w["executorsTotal"] == 5


def test_windows_read_the_history():
    h = MetricHistory()
    h.record(NOW - 4000, {"spout": {"emitted": 0, "acked": 0}})
    h.record(NOW - 3000, {"spout": {"emitted": 5, "acked": 5}})
    h.record(NOW - 10, {"spout": {"emitted": 8, "acked": 7}})
    page = topology_page(view(history=h), "600")
    # the samples' 3 in the last 10 minutes, and the 2 the live figures (10) gained since
    assert page["window"] == "600" and page["spouts"][0]["emitted"] == 3 + 2
    acked = {s["window"]: s["acked"] for s in page["topologyStats"]}  # the spouts' acks
    assert acked["600"] == (7 - 5) + (9 - 7) and acked["10800"] == 9 and acked[":all-time"] == 9
    emitted = {s["window"]: s["emitted"] for s in page["topologyStats"]}
    assert emitted[":all-time"] == 10 + 43234  # all time is the live figures


def test_the_ten_minute_window_is_whole_from_the_first_second():
    """Issue 31: 600 showed acked 0 while :all-time showed thousands, until a sample came."""
    h = MetricHistory()
    h.record(NOW - 2, {"spout": {"emitted": 0, "acked": 0}, "MyBoltId": {"executed": 0}})  # at submit
    for history in (h, MetricHistory(), None):  # one sample at the start; none yet; no history
        page = topology_page(view(history=history), "600")
        stats = {s["window"]: s for s in page["topologyStats"]}
        for window in ("600", "10800", "86400"):
            assert stats[window]["acked"] == stats[":all-time"]["acked"] == 9, (window, history)
            assert stats[window]["emitted"] == stats[":all-time"]["emitted"]
        assert page["spouts"][0]["acked"] == 9 and page["spouts"][0]["completeLatency"] == "12.346"
        assert bolt(page)["executed"] == 153343 and bolt(page)["executeLatency"] == "122.000"


def test_component_page_shape():
    page = component_page(view(), "MyBoltId", "600")
    assert page["componentType"] == "bolt" and page["windowHint"] == "10m 0s"
    assert [s["window"] for s in page["boltStats"]] == ["600", "10800", "86400", ":all-time"]
    assert page["inputStats"][0]["component"] == "spout" and page["inputStats"][0]["grouping"] == "shuffle"
    assert [e["id"] for e in page["executorStats"]] == ["[2-2]", "[3-3]", "[4-4]"]
    assert page["executorStats"][0]["executed"] == 1 and page["executorStats"][0]["port"] == 4321
    spout = component_page(view(), "spout", ":all-time")
    assert spout["componentType"] == "spout" and "spoutSummary" in spout and "inputStats" not in spout


def test_summary_row_and_cluster():
    row = topology_summary_row({"name": "t", "id": "t-1", "status": "ACTIVE", "uptime_secs": 61.7,
                                "num_tasks": 7, "num_workers": 2, "version": 3}, SHAPE)
    assert (row["uptime"], row["uptimeSeconds"]) == ("1m 1s", 61)
    assert row["tasksTotal"] == row["executorsTotal"] == 7
    assert row["requestedMemOnHeap"] == 3 * 1024.0
    cluster = cluster_summary([{**info(), "spark_master": "local[4]"}], {"leader": True}, cpu_count=2)
    assert (cluster["slotsTotal"], cluster["slotsUsed"], cluster["slotsFree"]) == (4, 1, 3)
    assert cluster["supervisors"] == 1 and cluster["tasksTotal"] == 5


def test_component_page_fills_each_stream_from_the_per_stream_figures():
    shape = {**SHAPE, "MyBoltId": {**SHAPE["MyBoltId"], "streams": {"default": ["w"], "errors": ["e"]},
                                   "inputs": [*SHAPE["MyBoltId"]["inputs"],
                                              {"component": "spout", "stream": "late", "grouping": "shuffle",
                                               "fields": []}]}}
    i = info()
    i["components"]["MyBoltId"]["streams"] = {
        "outputs": [{"stream": "default", "emitted": 40000, "transferred": 3400000},
                    {"stream": "errors", "emitted": 3234, "transferred": 23423}],
        "inputs": [{"component": "spout", "stream": "default", "executed": 150000, "acked": 5000,
                    "failed": 200, "execute_latency_ms": 120.0, "process_latency_ms": 400.0}]}
    page = component_page(TopologyView(i, shape, {}, None, NOW), "MyBoltId", ":all-time")
    assert [(o["stream"], o["emitted"], o["transferred"]) for o in page["outputStats"]] == [
        ("default", 40000, 3400000), ("errors", 3234, 23423)]
    rows = {r["stream"]: r for r in page["inputStats"]}
    assert (rows["default"]["executed"], rows["default"]["acked"], rows["default"]["failed"],
            rows["default"]["executeLatency"]) == (150000, 5000, 200, "120.000")
    # an input nothing was sampled from: none seen, no latency
    assert (rows["late"]["executed"], rows["late"]["executeLatency"]) == (0, None)
    # the history is per component: other windows cannot split it by stream
    page = component_page(TopologyView(i, shape, {}, MetricHistory(), NOW), "MyBoltId", "600")
    assert [o["emitted"] for o in page["outputStats"]] == [None, None]


def test_topology_page_shows_the_chains_of_the_info():
    assert topology_page(view(), ":all-time")["chains"] == []  # an info without chains
    i = {**info(), "chains": [["spout", "MyBoltId"]]}
    page = topology_page(TopologyView(i, SHAPE, {}, None, NOW), ":all-time")
    assert page["chains"] == [["spout", "MyBoltId"]]


def test_component_page_shows_the_chain_a_component_runs_in():
    """Issue 41 item 6: the component page names the component with its chain beside it."""
    i = {**info(), "chains": [["spout", "MyBoltId"]]}
    chained = TopologyView(i, SHAPE, {}, None, NOW)
    assert component_page(chained, "MyBoltId", ":all-time")["chain"] == ["spout", "MyBoltId"]
    assert component_page(chained, "spout", ":all-time")["chain"] == ["spout", "MyBoltId"]
    assert component_page(view(), "MyBoltId", ":all-time")["chain"] is None


def test_topology_page_has_the_last_rescale():
    assert topology_page(view(), ":all-time")["rescale"] is None
    rec = {"status": "done", "components": {"MyBoltId": [3, 6]}, "live": True, "moved_key_groups": 0,
           "moved_bytes": 0, "pause_ms": 0.4, "reason": None}
    v = TopologyView({**info(), "rescale": rec}, SHAPE, {}, None, NOW)
    assert topology_page(v, ":all-time")["rescale"] == rec
