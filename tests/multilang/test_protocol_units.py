"""The pure parts of multilang: framing, the handshake's context, resources."""

from __future__ import annotations

import os
import stat

import msgpack
import pytest

from squall import Config, Fields, TopologyBuilder
from squall.api.context import TopologyContext
from squall.multilang.resources import pack, unpack
from squall.multilang.serializer import JsonCodec, MsgpackCodec, make_codec
from squall.multilang.setup import setup_conf, setup_context
from squall.runtime.plan import make_plan
from tests.integration.components import CountBolt, ListSpout, SplitBolt


def test_json_framing_survives_any_chunking():
    codec = JsonCodec()
    wire = b"".join(codec.encode(m) for m in ({"command": "emit", "tuple": ["a\nb", 1]},
                                            [1, 2, 3], {"command": "sync"}))
    assert wire.count(b"\nend\n") == 3
    for size in (1, 2, 7, len(wire)):
        reader = JsonCodec()
        got = [m for i in range(0, len(wire), size) for m in reader.feed(wire[i:i + size])]
        assert got == [{"command": "emit", "tuple": ["a\nb", 1]}, [1, 2, 3], {"command": "sync"}]


def test_json_multiline_documents_and_blank_ends():
    codec = JsonCodec()
    got = list(codec.feed(b'{"command":\n "log",\n "msg": "x"}\nend\nend\n{"pid": 5}\r\nend\r\n'))
    assert got == [{"command": "log", "msg": "x"}, {"pid": 5}]


def test_json_garbage_is_a_clear_error():
    with pytest.raises(ValueError, match="not JSON"):
        list(JsonCodec().feed(b"hello there\nend\n"))


def test_json_refuses_bytes_with_advice():
    with pytest.raises(TypeError, match="msgpack"):
        JsonCodec().encode({"tuple": [b"\x00"]})


def test_msgpack_framing_as_pystorm_writes_it():
    codec = MsgpackCodec()
    wire = msgpack.packb({"command": "emit", "tuple": ["w", b"\x00\x01"]}) + msgpack.packb({"pid": 9})
    got = [m for i in range(0, len(wire), 3) for m in codec.feed(wire[i:i + 3])]
    assert got == [{"command": "emit", "tuple": ["w", b"\x00\x01"]}, {"pid": 9}]
    assert msgpack.unpackb(codec.encode({"id": "1", "tuple": ["x"]})) == {"id": "1", "tuple": ["x"]}


def test_serializer_names():
    assert make_codec({}).name == "json"
    storm_json = "org.apache.storm.multilang.JsonSerializer"
    assert make_codec({"topology.multilang.serializer": storm_json}).name == "json"
    assert make_codec({"topology.multilang.serializer": "msgpack"}).name == "msgpack"
    with pytest.raises(ValueError, match="topology.multilang.serializer: unknown serializer 'xml'"):
        make_codec({"topology.multilang.serializer": "xml"})


def test_setup_conf_keeps_plain_values_and_drops_secrets():
    conf = {"topology.workers": 2, "squall.drpc.token": "s3cret", "redis.password": "p",
            "obj": object(), "nested": {"a": [1, "b"]}}
    out = setup_conf(conf, "topo")
    assert out == {"topology.workers": 2, "nested": {"a": [1, "b"]}, "topology.name": "topo"}


def test_setup_context_has_storms_keys():
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([["a"]], fields=("sentence",)), 1)
    b.set_bolt("split", SplitBolt(), 2).shuffle_grouping("spout")
    b.set_bolt("count", CountBolt(), 1).fields_grouping("split", Fields("word"))
    topology = b.create_topology()
    plan = make_plan(topology, Config())
    split_task = plan.component_tasks["split"][0]
    ctx = TopologyContext("t", plan, plan.worker_tasks(0), split_task, topology=topology)
    got = setup_context(ctx)
    assert got["taskid"] == split_task and got["componentid"] == "split"
    assert got["task->component"][str(split_task)] == "split"
    assert got["streams"] == ["default"]
    assert got["stream->outputfields"] == {"default": ["word"]}
    assert got["stream->target->grouping"] == {"default": {"count": {"type": "FIELDS", "fields": ["word"]}}}
    assert got["source->stream->grouping"] == {"spout": {"default": {"type": "SHUFFLE"}}}
    assert got["source->stream->fields"] == {"spout": {"default": ["sentence"]}}


def test_resources_travel_packed_and_keep_modes(tmp_path):
    src = tmp_path / "res"
    (src / "sub").mkdir(parents=True)
    script = src / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    (src / "sub" / "data.txt").write_text("data")
    blob = pack(src)
    where = unpack(blob)
    assert open(os.path.join(where, "sub", "data.txt")).read() == "data"
    assert os.stat(os.path.join(where, "run.sh")).st_mode & stat.S_IXUSR
    assert unpack(blob) == where  # once per content
    with pytest.raises(ValueError, match="is not a directory"):
        pack(tmp_path / "missing")
