"""The ``/metrics`` page: parsed by prometheus_client's own text parser."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from squall.nimbus.prometheus import render
from squall.nimbus.structure import graph, layers, redact

INFO = {
    "name": 'we"ird\nname', "id": "x-1", "status": "ACTIVE", "version": 2, "uptime_secs": 5.5,
    "num_workers": 1, "restarts": 3, "kinds": {"s": "spout", "b": "bolt"},
    "components": {
        "s": {"tasks": [1], "emitted": 10, "transferred": 10, "acked": 8, "failed": 2, "executed": 0,
              "complete_latency_ms": 4.0, "complete_latency_p50_ms": 3.0, "complete_latency_p99_ms": 9.0,
              "capacity": 0.0, "by_task": {"1": {"emitted": 10, "capacity": 0.0}}},
        "b": {"tasks": [2], "emitted": 0, "executed": 10, "capacity": 0.25, "execute_latency_ms": 0.5,
              "metrics": {"parsed": {"type": "counter", "count": 7},
                          "sizes": {"type": "histogram", "count": 3, "mean": 1.5, "p99": 2.0, "p50": None},
                          "depth": {"type": "gauge", "values": {"2": 4}, "sum": 4, "errors": {}}}},
        "__acker": {"tasks": [3], "emitted": 0},
    },
    "workers": [{"worker": 0, "host": "h", "tasks": [1, 2, 3], "uptime_secs": 4.0, "restarts": 1,
                 "state": "RUNNING", "rejected_frames": 0}],
    "errors": [{"component": "b"}],
}


def families(text):
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_page_parses_with_every_family():
    fams = families(render([INFO], {"leader": True}))
    assert fams["squall_nimbus_leader"].samples[0].value == 1
    emitted = {s.labels["component"]: s.value for s in fams["squall_component_emitted"].samples}
    assert emitted == {"s": 10, "b": 0, "__acker": 0}
    kinds = {s.labels["component"]: s.labels["kind"] for s in fams["squall_component_emitted"].samples}
    assert kinds == {"s": "spout", "b": "bolt", "__acker": "system"}
    assert fams["squall_component_emitted"].samples[0].labels["topology"] == 'we"ird\nname'
    samples = fams["squall_component_complete_latency_ms"].samples
    summary = {(s.name, s.labels.get("quantile")): s.value for s in samples}
    assert summary == {("squall_component_complete_latency_ms", "0.5"): 3.0,
                       ("squall_component_complete_latency_ms", "0.99"): 9.0,
                       ("squall_component_complete_latency_ms_sum", None): 32.0,
                       ("squall_component_complete_latency_ms_count", None): 8.0}
    assert fams["squall_topology_master_restarts"].samples[0].value == 3
    assert fams["squall_worker_restarts"].samples[0].value == 1
    assert fams["squall_task_emitted"].samples[0].labels["task"] == "1"


def test_user_metrics_when_present():
    fams = families(render([INFO], {"leader": False}))
    user = {(s.labels["metric"], s.labels["type"], s.labels["field"]): s.value
            for s in fams["squall_user_metric"].samples}
    assert user == {("parsed", "counter", "count"): 7, ("sizes", "histogram", "count"): 3,
                    ("sizes", "histogram", "mean"): 1.5, ("sizes", "histogram", "p99"): 2.0,
                    ("depth", "gauge", "sum"): 4}
    b = {k: v for k, v in INFO["components"]["b"].items() if k != "metrics"}
    plain = {**INFO, "components": {"b": b}}
    assert "squall_user_metric" not in families(render([plain], {}))


def test_no_topology():
    fams = families(render([], {"leader": False}))
    assert fams["squall_topologies"].samples[0].value == 0


def test_graph_layers_and_redaction():
    shape = {
        "s": {"kind": "spout", "parallelism": 1, "tasks": 1, "inputs": []},
        "a": {"kind": "bolt", "parallelism": 2, "tasks": 2,
              "inputs": [{"component": "s", "stream": "default", "grouping": "shuffle", "fields": []},
                         {"component": "a", "stream": "loop", "grouping": "direct", "fields": []}]},
        "b": {"kind": "bolt", "parallelism": 1, "tasks": 1,
              "inputs": [{"component": "a", "stream": "x", "grouping": "fields", "fields": ["k"]}]},
    }
    assert layers(shape) == {"a": 1, "b": 2, "s": 0}  # a loop on itself does not push it right
    g = graph(shape, {"a": {"executed": 5, "capacity": 0.5}})
    assert [(n["id"], n["column"], n["row"]) for n in g["nodes"]] == [("s", 0, 0), ("a", 1, 0), ("b", 2, 0)]
    assert {(e["source"], e["target"], e["grouping"]) for e in g["edges"]} == {
        ("s", "a", "shuffle"), ("a", "a", "direct"), ("a", "b", "fields")}
    assert redact({"x.password": "p", "api_key": "k", "list": [{"secret": 1}], "keep": "v"}) == {
        "x.password": "*****", "api_key": "*****", "list": [{"secret": "*****"}], "keep": "v"}


def test_the_docs_name_every_series():
    from squall.nimbus.prometheus import FAMILIES
    from tests.ui.test_rest import documented_series  # the same reading of docs/ui.md

    assert documented_series() == set(FAMILIES)


def test_latencies_are_histograms_per_worker():
    """Issue 31: complete latency per spout, execute and process latency per bolt, as
    Prometheus histograms (buckets 0.1 ms - 10 s, in seconds), labelled topology, component
    and worker, from the tasks' own metrics."""
    from squall.runtime.info import topology_info
    from squall.runtime.metrics import LATENCY_BUCKETS_MS, TaskMetrics
    from squall.runtime.plan import make_plan
    from squall.runtime.submission import prepare_conf
    from tests.unit.test_submission import topology

    t = topology()
    plan = make_plan(t, prepare_conf({"topology.workers": 2}, t))
    spout = TaskMetrics("words", plan.component_tasks["words"][0])
    for ms in (0.05, 0.3, 0.3, 7.0, 20_000.0):
        spout.record_complete(ms)
    bolt = TaskMetrics("ticker", plan.component_tasks["ticker"][0])
    bolt.record_execute(4.0, 2)  # a batch of two: 2 ms each
    bolt.record_execute(0.08, 1)
    bolt.record_process(30.0)
    info = topology_info("t", "ACTIVE", plan, [spout, bolt], [], 1.0)
    info["kinds"] = {"words": "spout", "ticker": "bolt"}
    fams = families(render([info], {"leader": True}))
    complete = fams["squall_spout_complete_latency_seconds"]
    assert complete.type == "histogram"
    buckets = {s.labels["le"]: s.value for s in complete.samples if s.name.endswith("_bucket")}
    assert len(buckets) == len(LATENCY_BUCKETS_MS) + 1
    picked = ("0.0001", "0.0005", "0.01", "10", "+Inf")
    assert [buckets[le] for le in picked] == [1, 3, 4, 4, 5]
    worker = str(next(w for w in range(2) if spout.task in plan.worker_tasks(w)))
    labels = next(s.labels for s in complete.samples if s.name.endswith("_count"))
    assert labels == {"topology": "t", "component": "words", "worker": worker}
    total = {s.name: s.value for s in complete.samples if not s.name.endswith("_bucket")}
    assert total["squall_spout_complete_latency_seconds_count"] == 5
    assert abs(total["squall_spout_complete_latency_seconds_sum"] - 20.00765) < 1e-9
    execute = {s.labels.get("le"): s.value for s in fams["squall_bolt_execute_latency_seconds"].samples
               if s.name.endswith("_bucket")}
    assert (execute["0.0001"], execute["0.001"], execute["0.0025"]) == (1, 1, 3)
    process = {s.name: s.value for s in fams["squall_bolt_process_latency_seconds"].samples}
    assert process["squall_bolt_process_latency_seconds_count"] == 1
    assert "squall_spout_execute_latency_seconds" not in fams  # spouts have no execute
    # the counters are as they were
    assert fams["squall_component_acked"].type == "counter"
