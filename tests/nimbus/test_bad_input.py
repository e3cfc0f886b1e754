"""Every bad input gets a one-line error and a non-zero exit, and changes nothing.

Exit codes (squall.client.exits): 1 error, 2 usage, 3 unreachable, 4 not found, 5 conflict,
6 token. The duplicate name and the upgrade of a topology being upgraded are in
test_lifecycle, where a topology runs.
"""

from __future__ import annotations

import base64
import json
import stat
import urllib.error
import urllib.request

import pytest

from tests.nimbus.harness import Cli, NimbusProcess, cleanup_topologies, free_port
from tests.nimbus.topology_source import write_topology

NO_TOPOLOGY = "from squall import Config\n\nconf = Config()\n"
INVALID = '''\
from squall import Bolt, Fields, Spout, TopologyBuilder


class S(Spout):
    def next_tuple(self):
        pass

    def declare_output_fields(self, d):
        d.declare(Fields("x"))


class B(Bolt):
    def execute(self, tup):
        pass


def build_topology():
    b = TopologyBuilder()
    b.set_spout("s", S())
    b.set_bolt("b", B()).shuffle_grouping("nowhere")
    return b.create_topology()
'''
BAD_CONF = '''\
from squall import Bolt, Fields, Spout, TopologyBuilder


class S(Spout):
    def next_tuple(self):
        pass

    def declare_output_fields(self, d):
        d.declare(Fields("x"))


def build_topology():
    b = TopologyBuilder()
    b.set_spout("s", S())
    return {"topology.workers": 0}, b.create_topology()
'''
FAILS_TO_PREPARE = BAD_CONF.replace('{"topology.workers": 0}', '{"topology.workers": 1}').replace(
    "def build_topology", '''class Broken(Spout):
    def open(self, conf, context, collector):
        raise RuntimeError("this spout cannot open")

    def declare_output_fields(self, d):
        d.declare(Fields("x"))


def build_topology''').replace('b.set_spout("s", S())', 'b.set_spout("s", Broken())')


@pytest.fixture(scope="module")
def nimbus(tmp_path_factory):
    root = tmp_path_factory.mktemp("nimbus-bad-input")
    n = NimbusProcess(root / "home", root).start()
    cli = Cli(n.url, root / "home", root)
    n.cli = cli  # type: ignore[attr-defined]
    n.root = root  # type: ignore[attr-defined]
    try:
        yield n
    finally:
        cleanup_topologies(cli, root / "home")
        n.stop()


def one_line(proc, code: int, *words: str) -> str:
    err = proc.stderr.strip()
    assert proc.returncode == code, f"exit {proc.returncode} (wanted {code}): {proc.stderr}{proc.stdout}"
    assert len(err.splitlines()) == 1, f"not one line: {err!r}"
    for w in words:
        assert w in err, f"{w!r} not in {err!r}"
    return err


def unchanged(n) -> None:
    assert n.cli.json("list") == []
    blobs = n.home / "blobs"
    assert not blobs.exists() or not any(blobs.iterdir())


def post(url: str, path: str, body: dict, token: str | None):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(f"{url}/api/v1{path}", json.dumps(body).encode(), headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def token(n) -> str:
    return (n.home / "nimbus.token").read_text().strip()


def test_unknown_topology(nimbus):
    for args in (["info", "nope"], ["errors", "nope"], ["kill", "nope"], ["activate", "nope"],
                 ["deactivate", "nope"], ["rebalance", "nope", "--workers", "2"],
                 ["complete-upgrade", "nope"], ["rollback", "nope"]):
        one_line(nimbus.cli(*args), 4, "nope")
    unchanged(nimbus)


def test_a_file_with_no_topology(nimbus):
    path = nimbus.root / "empty_topo.py"
    path.write_text(NO_TOPOLOGY)
    one_line(nimbus.cli("submit", str(path)), 2, "defines no topology", "build_topology")
    one_line(nimbus.cli("submit", str(nimbus.root / "missing.py")), 2, "no such file")
    unchanged(nimbus)


def test_an_invalid_topology(nimbus):
    path = nimbus.root / "invalid_topo.py"
    path.write_text(INVALID)
    one_line(nimbus.cli("submit", str(path)), 1, "invalid topology", "nowhere")
    path = nimbus.root / "bad_conf_topo.py"
    path.write_text(BAD_CONF)
    one_line(nimbus.cli("submit", str(path)), 1, "topology.workers")
    one_line(nimbus.cli("submit", str(path), "--name", "bad name!"), 2, "invalid")
    unchanged(nimbus)


def test_nimbus_validates_uploads_itself(nimbus):
    """The REST API, without the client's checks: Nimbus refuses bad uploads with 400."""
    import cloudpickle

    from squall import Fields, Spout, TopologyBuilder

    class S(Spout):
        def declare_output_fields(self, d):
            d.declare(Fields("x"))

    b = TopologyBuilder()
    b.set_spout("s", S())
    topology = base64.b64encode(cloudpickle.dumps(b.create_topology())).decode()
    code = base64.b64encode(b"PK\x05\x06" + b"\0" * 18).decode()  # an empty zip
    body = {"name": "t", "conf": {"topology.workers": 0}, "topology": topology, "code": code}
    status, err = post(nimbus.url, "/topologies", body, token(nimbus))
    assert status == 400 and "topology.workers" in err["error"], err
    status, err = post(nimbus.url, "/topologies", {**body, "conf": {}, "topology": "bm90IGEgcGlja2xl"},
                       token(nimbus))
    assert status == 400 and "unpickled" in err["error"], err
    status, err = post(nimbus.url, "/topologies", {**body, "conf": {}, "name": "../etc"}, token(nimbus))
    assert status == 400 and "invalid" in err["error"], err
    status, err = post(nimbus.url, "/topologies/nope/rebalance", {"workers": 0}, token(nimbus))
    assert status == 400 and "positive" in err["error"], err
    unchanged(nimbus)


def test_unreachable_nimbus(nimbus):
    one_line(nimbus.cli("--nimbus", f"http://127.0.0.1:{free_port()}", "list"), 3, "cannot reach")


def test_python_api_without_nimbus(tmp_path):
    from squall.client.loader import import_file
    from squall.client.remote import submit_topology

    path = write_topology(tmp_path / "api_topo.py", tmp_path / "out", tmp_path / "state", "v1")
    conf, topology = import_file(str(path)).build_topology()
    conf["squall.nimbus.url"] = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ConnectionError, match="cannot reach"):
        submit_topology("api", conf, topology)


def test_missing_or_wrong_token(nimbus, tmp_path):
    path = write_topology(tmp_path / "tok_topo.py", tmp_path / "out", tmp_path / "state", "v1")
    # no token anywhere: SQUALL_HOME without a token file
    no_token = {"SQUALL_HOME": str(tmp_path / "elsewhere")}
    for args in (["submit", str(path)], ["kill", "x"], ["activate", "x"], ["rebalance", "x", "-n", "2"]):
        one_line(nimbus.cli(*args, env=no_token), 6, "token")
    one_line(nimbus.cli("submit", str(path), env={"SQUALL_TOKEN": "wrong"}), 6, "wrong")
    assert nimbus.cli("list", env=no_token).returncode == 0, "reads need no token"
    status, _ = post(nimbus.url, "/topologies", {"name": "x"}, None)
    assert status == 401
    status, _ = post(nimbus.url, "/topologies", {"name": "x"}, "wrong")
    assert status == 403
    log = nimbus.log_tail(20000)
    assert "refused POST /api/v1/topologies" in log and "no token" in log and "wrong token" in log
    unchanged(nimbus)


def test_token_file_is_private(nimbus):
    mode = stat.S_IMODE((nimbus.home / "nimbus.token").stat().st_mode)
    assert mode == 0o600


def test_rebalance_to_zero_workers(nimbus):
    one_line(nimbus.cli("rebalance", "x", "--workers", "0"), 2, "at least 1")
    one_line(nimbus.cli("rebalance", "x", "--parallelism", "count=0"), 2, "positive")
    one_line(nimbus.cli("rebalance", "x"), 2, "--workers")
    unchanged(nimbus)


def test_openapi_document(nimbus):
    with urllib.request.urlopen(f"{nimbus.url}/api/v1/openapi.json", timeout=5) as resp:
        doc = json.load(resp)
    assert doc["openapi"].startswith("3.")
    for path in ("/topologies", "/topologies/{name}/rebalance", "/topologies/{name}/upgrade",
                 "/topologies/{name}/rollback", "/topologies/{name}/kill"):
        assert path in doc["paths"], path


def test_version(nimbus):
    out = nimbus.cli("version").stdout
    assert "squall" in out and "(leader)" in out


@pytest.mark.spark
@pytest.mark.slow
def test_a_topology_that_cannot_start_is_reported_and_removed(nimbus):
    path = nimbus.root / "broken_topo.py"
    path.write_text(FAILS_TO_PREPARE)
    err = one_line(nimbus.cli("submit", str(path), timeout=240), 1, "failed to start", "cannot open")
    assert "broken_topo" in err
    unchanged(nimbus)
