"""Bad multilang input: clear one-line errors naming the component and the cause."""

from __future__ import annotations

import pytest

from squall import Config, Fields, LocalCluster, TopologyBuilder, TopologyStartError
from squall.multilang import ShellBolt
from tests.integration.components import RECORD, ListSpout
from tests.multilang.helpers import PYTHON, RESOURCES, wait_for


def run(bolt, items=(["a b"],), conf=None):
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout(list(items), replay=False), 1)
    b.set_bolt("split", bolt, 1).shuffle_grouping("spout")
    return b.create_topology()


def test_construction_errors():
    with pytest.raises(ValueError, match="needs a command"):
        ShellBolt([])
    with pytest.raises(ValueError, match="is not a directory"):
        ShellBolt(["python3", "x.py"], resources="/nonexistent/dir/for/squall")


def test_a_missing_program_fails_prepare_naming_it():
    bolt = ShellBolt(["no-such-program-squall"], outputs={"default": Fields("word")})
    with LocalCluster() as cluster, pytest.raises(TopologyStartError) as info:
        cluster.submit_topology("bad", Config(), run(bolt))
    assert "'split'" in str(info.value) and "no-such-program-squall" in str(info.value)


def test_a_script_that_crashes_at_start_fails_prepare_with_its_stderr():
    bolt = ShellBolt([PYTHON, "-c", "import sys; sys.stderr.write('boom at start\\n'); sys.exit(2)"],
                     outputs={"default": Fields("word")})
    with LocalCluster() as cluster, pytest.raises(TopologyStartError) as info:
        cluster.submit_topology("bad", Config(), run(bolt))
    assert "exit code 2" in str(info.value) and "boom at start" in str(info.value)


def test_a_bad_serializer_name_fails_prepare_naming_the_key():
    conf = Config()
    conf["topology.multilang.serializer"] = "xml"
    bolt = ShellBolt([PYTHON, "pystorm_split.py"], resources=RESOURCES, outputs={"default": Fields("word")})
    with LocalCluster() as cluster, pytest.raises(TopologyStartError, match="topology.multilang.serializer"):
        cluster.submit_topology("bad", conf, run(bolt))


_GARBAGE = (
    "import json, os, sys\n"
    "setup = sys.stdin.readline(); sys.stdin.readline()\n"
    "sys.stdout.write(json.dumps({'pid': os.getpid()}) + '\\nend\\n'); sys.stdout.flush()\n"
    "sys.stdin.readline()\n"
    "sys.stdout.write(json.dumps({'command': 'ack', 'id': 'never-sent'}) + '\\nend\\n'); sys.stdout.flush()\n"
    "import time; time.sleep(60)\n"
)


def test_a_protocol_violation_kills_and_reports_and_fails_what_it_held():
    bolt = ShellBolt([PYTHON, "-c", _GARBAGE], outputs={"default": Fields("word")})
    with LocalCluster() as cluster:
        cluster.submit_topology("bad", Config(), run(bolt))
        assert wait_for(lambda: [m for _, m, _ in RECORD["spout.failed"]] == [0])
        errors = cluster.get_topology_info("bad")["errors"]
    assert any("broke the protocol" in e["message"] and "'never-sent'" in e["message"] for e in errors)
