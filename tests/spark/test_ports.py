"""Fixed ports: each of squall's listening sockets binds the port (range) its setting names.

``squall.spark.master.port``, ``squall.spark.master.control.port`` and
``squall.spark.worker.port`` take 0 (any free port), a port, ``LOW-HIGH`` (the first
free port of the range) or a comma-separated list (the first free port of the list, what
the cluster file's ``supervisor.slots.ports`` becomes); a full range is an error naming the
setting. The last test runs a
topology on ``local[3]`` with the master's port and the workers' range fixed, and checks
the sockets it opened.
"""

from __future__ import annotations

import socket

import pytest

from squall.spark.ports import PortRangeError, port_range

KEY = "squall.spark.worker.port"


def consecutive_free(n: int) -> int:
    """The first of ``n`` consecutive ports free on 127.0.0.1 right now."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + n > 65535:
            continue
        held = []
        try:
            for p in range(base, base + n):
                t = socket.socket()
                held.append(t)
                t.bind(("127.0.0.1", p))
        except OSError:
            continue
        finally:
            for t in held:
                t.close()
        return base
    raise AssertionError(f"no {n} consecutive free ports")


def listening(port: int) -> bool:
    """True if some socket of this machine listens on TCP ``port`` (from /proc/net/tcp)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":
                return True
    return False


@pytest.mark.parametrize("value, want", [
    (0, None), ("0", None), (None, None), (6700, (6700, 6700)), ("6700", (6700, 6700)),
    ("6700-6710", (6700, 6710)), (" 6700 - 6710 ", (6700, 6710)), ([6700, 6701], (6700, 6701)),
])
def test_port_settings(value, want):
    assert port_range(value, KEY) == want


@pytest.mark.parametrize("value", ["x", "6710-6700", 70000, True, "1-2-3", [1], -5])
def test_bad_port_settings_name_the_key(value):
    with pytest.raises(PortRangeError, match=KEY):
        port_range(value, KEY)


def test_a_worker_socket_takes_the_first_free_port_of_its_range():
    import zmq

    from squall.spark.transport import ZmqTransport

    base = consecutive_free(3)
    ctx = zmq.Context()
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", base))
    blocker.listen()
    transports = []
    try:
        t = ZmqTransport(ctx, "127.0.0.1", secret=b"s" * 32, index=0, port=f"{base}-{base + 2}")
        transports.append(t)
        assert t.address == f"tcp://127.0.0.1:{base + 1}"
        t2 = ZmqTransport(ctx, "127.0.0.1", secret=b"s" * 32, index=1, port=f"{base}-{base + 2}")
        transports.append(t2)
        assert t2.address == f"tcp://127.0.0.1:{base + 2}"
        with pytest.raises(PortRangeError, match=f"no free port in {base}-{base + 2} \\({KEY}\\)"):
            ZmqTransport(ctx, "127.0.0.1", secret=b"s" * 32, index=2, port=f"{base}-{base + 2}")
    finally:
        for t in transports:
            t.close()
        blocker.close()
        ctx.term()


def test_a_worker_socket_takes_the_first_free_port_of_a_list():
    """``supervisor.slots.ports: [a, c]`` in the cluster file becomes ``"a,c"``: b is never taken."""
    import zmq

    from squall.nimbus.clusterconf import classify
    from squall.spark.transport import ZmqTransport

    base = consecutive_free(3)
    slots = [base + 2, base]
    c = classify({"supervisor.slots.ports": slots}, "squall.yaml", {}, frozenset())
    value = c.topology[KEY]
    assert value == f"{base + 2},{base}" and "supervisor.slots.ports" not in c.ignored
    ctx = zmq.Context()
    transports = []
    try:
        for i in range(2):
            transports.append(ZmqTransport(ctx, "127.0.0.1", secret=b"s" * 32, index=i, port=value))
        assert [t.address for t in transports] == [f"tcp://127.0.0.1:{p}" for p in slots]
        with pytest.raises(PortRangeError, match=f"no free port in {base + 2},{base} \\({KEY}\\)"):
            ZmqTransport(ctx, "127.0.0.1", secret=b"s" * 32, index=2, port=value)
    finally:
        for t in transports:
            t.close()
        ctx.term()


def test_the_control_endpoint_binds_its_configured_port():
    from squall.spark.control import ControlServer

    base = consecutive_free(2)
    first = ControlServer("127.0.0.1", "secret", {}, port=f"{base}-{base + 1}")
    second = ControlServer("127.0.0.1", "secret", {}, port=f"{base}-{base + 1}")
    first.start()
    second.start()
    try:
        assert first.url == f"http://127.0.0.1:{base}"
        assert second.url == f"http://127.0.0.1:{base + 1}"
        with pytest.raises(PortRangeError, match="squall.spark.master.control.port"):
            ControlServer("127.0.0.1", "secret", {}, port=base)
    finally:
        first.stop()
        second.stop()


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_topology_binds_the_configured_master_port_and_worker_range(local_cluster, tmp_path):
    from tests.spark import helpers
    from tests.spark import topo_module as tm

    base = consecutive_free(5)
    master_port, workers = base, (base + 1, base + 4)
    conf, topology = tm.wordcount(200, str(tmp_path))
    conf["squall.spark.master.port"] = master_port
    conf["squall.spark.worker.port"] = f"{workers[0]}-{workers[1]}"
    assert not listening(master_port)
    local_cluster.submit_topology("wc-ports", conf, topology)
    try:
        helpers.wait_all_acked(str(tmp_path), 200, timeout=60)
        info = local_cluster.get_topology_info("wc-ports")
        assert listening(master_port), "the topology master is not on squall.spark.master.port"
    finally:
        local_cluster.kill_topology("wc-ports", wait_secs=0)
    ports = sorted(int(w["address"].rsplit(":", 1)[1]) for w in info["workers"])
    assert len(ports) == 2 and all(workers[0] <= p <= workers[1] for p in ports), ports
