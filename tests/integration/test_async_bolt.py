"""Issue 22: AsyncBolt against a real slow HTTP server started by the test: ordered and
unordered emission, the capacity bound, a timeout failing the tuple with its reason and the
spout replaying it, an exception failing the tuple."""

import asyncio
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

from squall import AsyncBolt, BasicBolt, Config, Fields, LocalCluster, TopologyBuilder
from squall.testing import FeederSpout, tracked_topology
from tests.integration.components import RECORD, ListSpout, record

SERVER: dict = {}


class SlowHandler(BaseHTTPRequestHandler):
    """GET /?v=V&ms=M answers V after M ms; counts requests in flight; ``slow_once`` values
    are slow (5 s) only the first time they are asked for."""

    def do_GET(self):  # noqa: N802 - the stdlib's name
        q = parse_qs(urlparse(self.path).query)
        v, ms = q["v"][0], int(q.get("ms", ["0"])[0])
        with SERVER["lock"]:
            SERVER["now"] += 1
            SERVER["peak"] = max(SERVER["peak"], SERVER["now"])
            first = v not in SERVER["seen"]
            SERVER["seen"].add(v)
        if v in SERVER["slow_once"] and first:
            ms = 5000
        time.sleep(ms / 1000)  # a slow server, for real
        with SERVER["lock"]:
            SERVER["now"] -= 1
        body = v.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client that timed out and went away: expected in these tests


@pytest.fixture
def server():
    SERVER.update(lock=threading.Lock(), now=0, peak=0, seen=set(), slow_once=set())
    httpd = QuietServer(("127.0.0.1", 0), SlowHandler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    SERVER["port"] = httpd.server_address[1]
    yield SERVER
    httpd.shutdown()
    httpd.server_close()


async def http_get(port, path):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
    await writer.drain()
    data = await reader.read()
    writer.close()
    return data.split(b"\r\n\r\n", 1)[1].decode()


class Lookup(AsyncBolt):
    """Asks the server for each value, with the delay the tuple names."""

    def __init__(self, port, capacity=100, timeout=5.0, ordered=True):
        self.port, self.capacity, self.timeout, self.ordered = port, capacity, timeout, ordered

    def prepare(self, conf, context, collector):
        self.collector = collector

    async def prepare_async(self, conf, context):
        self.loop_thread = threading.current_thread().name
        record("prepared_async", self.loop_thread)

    async def execute(self, tup):
        value, ms = tup[0], tup[1]
        if value == "boom":
            raise ValueError("cannot look up boom")
        got = await http_get(self.port, f"/?v={value}&ms={ms}")
        self.collector.emit([got], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("value"))


class Sink(BasicBolt):
    def execute(self, tup, collector):
        record("sink", tup[0])


def topology(spout, lookup):
    b = TopologyBuilder()
    b.set_spout("in", spout, 1)
    b.set_bolt("lookup", lookup, 1).shuffle_grouping("in")
    b.set_bolt("sink", Sink(), 1).shuffle_grouping("lookup")
    return b.create_topology()


def conf(**extra):
    c = Config()
    c.set_num_workers(1)
    c.update(extra)
    return c


@pytest.mark.parametrize("ordered", [True, False])
def test_results_come_in_input_order_or_as_they_complete(server, ordered):
    feeder = FeederSpout(Fields("value", "ms"))
    with LocalCluster() as cluster:
        lookup = Lookup(server["port"], ordered=ordered)
        tracked = tracked_topology(cluster, "t", conf(), topology(feeder, lookup))
        for i, ms in enumerate([400, 300, 200, 100, 0]):  # the first asked is the last to answer
            feeder.feed([str(i), ms], msg_id=i)
        tracked.wait_idle(timeout=30)
    assert sorted(feeder.acked) == [0, 1, 2, 3, 4]
    if ordered:
        assert RECORD["sink"] == ["0", "1", "2", "3", "4"]
    else:
        assert RECORD["sink"] == ["4", "3", "2", "1", "0"]
    assert RECORD["prepared_async"] == ["squall-async-0"]


def test_no_more_than_capacity_calls_are_in_flight(server):
    feeder = FeederSpout(Fields("value", "ms"))
    with LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "t", conf(), topology(feeder, Lookup(server["port"], capacity=3)))
        for i in range(24):
            feeder.feed([str(i), 50], msg_id=i)
        tracked.wait_idle(timeout=30)
    assert sorted(feeder.acked) == list(range(24))
    assert server["peak"] == 3  # the bound, reached


def test_calls_wait_side_by_side_not_one_after_another(server):
    feeder = FeederSpout(Fields("value", "ms"))
    with LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "t", conf(), topology(feeder, Lookup(server["port"])))
        for i in range(20):
            feeder.feed([str(i), 300], msg_id=i)
        tracked.wait_idle(timeout=30)
    assert server["peak"] >= 10  # one after another, the peak would be 1


def test_a_call_past_its_timeout_fails_its_tuple_with_the_reason_and_the_spout_replays_it(server):
    server["slow_once"] = {"2"}
    spout = ListSpout([["1", 0], ["2", 0], ["3", 0]], fields=("value", "ms"))  # replays failures
    with LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "t", conf(), topology(spout, Lookup(server["port"], timeout=0.3)))
        tracked.wait_idle(timeout=30)
        errors = tracked.info()["errors"]
    assert [m for _, m, _ in RECORD["spout.failed"]] == [1]  # msg id of "2", failed once
    assert sorted(m for _, m in RECORD["spout.acked"]) == [0, 1, 2]  # then replayed and acked
    assert sorted(RECORD["sink"]) == ["1", "2", "3"]
    (error,) = errors
    assert error["component"] == "lookup"
    assert "AsyncTimeoutError" in error["message"] and "within 0.3s" in error["message"]


def test_an_exception_fails_the_tuple_and_the_task_carries_on(server):
    feeder = FeederSpout(Fields("value", "ms"))
    with LocalCluster() as cluster:
        tracked = tracked_topology(cluster, "t", conf(), topology(feeder, Lookup(server["port"])))
        for i, v in enumerate(["a", "boom", "c"]):
            feeder.feed([v, 0], msg_id=i)
        tracked.wait_idle(timeout=30)
        errors = tracked.info()["errors"]
    assert feeder.failed == [1] and sorted(feeder.acked) == [0, 2]
    assert RECORD["sink"] == ["a", "c"]
    assert [e["message"] for e in errors] == ["ValueError: cannot look up boom"]
