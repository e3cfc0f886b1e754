"""Security item 6: a topology opens only its own state, and state never runs code that
someone else wrote into the store.

State values that msgpack cannot carry are pickled; unpickling runs code. A store another
party can write (a shared Redis, a state file others can write) must therefore never have
its pickles loaded unless they carry the topology's tag (``topology.state.key``).
"""

from __future__ import annotations

import os
import sqlite3
import time

import msgpack
import pytest
import redis

from squall import Bolt, Fields, LocalCluster, Spout, TopologyBuilder
from squall.state import StateConfigError, StateSerializationError
from squall.state.codec import PICKLE_EXT
from squall.state.local import LocalStateProvider
from squall.state.redis import RedisStateProvider

SEEN: list[str] = []


class Point:
    def __init__(self, x):
        self.x = x

    def __eq__(self, other):
        return isinstance(other, Point) and other.x == self.x


class Trap:
    """Unpickling it creates a directory: proof that code from the store ran."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


def pickled(obj) -> bytes:
    import pickle

    return msgpack.packb(msgpack.ExtType(PICKLE_EXT, pickle.dumps(obj)), use_bin_type=True)


def key(k) -> bytes:
    return msgpack.packb(k, use_bin_type=True)


# ---- namespaces -------------------------------------------------------------------------


class _Spout(Spout):
    def open(self, conf, context, collector):
        self.collector = collector

    def next_tuple(self):
        time.sleep(0.01)

    def declare_output_fields(self, declarer):
        declarer.declare(Fields("x"))


class Snoop(Bolt):
    """Tries to open another topology's state, and its own."""

    def prepare(self, conf, context, collector):
        try:
            LocalStateProvider().new_state("victim/count/0@g0", conf, context)
            SEEN.append("LocalStateProvider: opened")
        except StateConfigError as e:
            SEEN.append(f"LocalStateProvider: refused: {e}")
        own = LocalStateProvider().new_state(f"{context.topology_name}/count/0@g0", conf, context)
        own.close()
        SEEN.append("own: opened")

    def execute(self, tup):
        pass

    def declare_output_fields(self, declarer):
        pass


def test_sec6_a_topology_opens_only_its_own_namespaces(tmp_path):
    SEEN.clear()
    b = TopologyBuilder()
    b.set_spout("s", _Spout())
    b.set_bolt("snoop", Snoop()).shuffle_grouping("s")
    conf = {"topology.state.provider.config": {"path": str(tmp_path / "state")}}
    with LocalCluster() as cluster:
        cluster.submit_topology("snooper", conf, b.create_topology())
        deadline = time.monotonic() + 20
        while len(SEEN) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        cluster.kill_topology("snooper", wait_secs=0)
    assert SEEN[0].startswith("LocalStateProvider: refused") and "victim/count/0@g0" in SEEN[0], SEEN
    assert SEEN[1] == "own: opened", SEEN


def test_sec6_redis_namespace_check(redis_server):
    class Ctx:
        topology_name = "mine"

    host, port = redis_server
    conf = {"topology.state.provider.config": {"host": host, "port": port}}
    with pytest.raises(StateConfigError, match="other/x"):
        RedisStateProvider().new_state("other/x", conf, Ctx())
    RedisStateProvider().new_state("mine/x", conf, Ctx()).close()


# ---- pickles ----------------------------------------------------------------------------


def redis_conf(redis_server, **extra):
    host, port = redis_server
    return {"topology.state.provider.config": {"host": host, "port": port}, **extra}


def test_sec6_redis_never_unpickles_a_value_without_the_topologys_tag(redis_server, tmp_path):
    host, port = redis_server
    ns = f"sec6-{os.getpid()}-{time.monotonic_ns()}"
    planted = tmp_path / "planted"
    # another party with access to Redis writes a pickle into the topology's state
    redis.Redis(host=host, port=port).hset(f"squall:state:{{{ns}}}:committed", key("k"),
                                           pickled(Trap(str(planted))))
    for conf in (redis_conf(redis_server), redis_conf(redis_server, **{"topology.state.key": "k" * 32})):
        state = RedisStateProvider().new_state(ns, conf, None)
        with pytest.raises(StateSerializationError, match="pickle"):
            state.get("k")
        with pytest.raises(StateSerializationError, match="pickle"):
            list(state)
        state.close()
    assert not planted.exists(), "code from the store ran"


def test_sec6_redis_pickles_need_the_key_and_carry_its_tag(redis_server):
    ns = f"sec6-{os.getpid()}-{time.monotonic_ns()}"
    plain = RedisStateProvider().new_state(ns, redis_conf(redis_server), None)
    with pytest.raises(StateSerializationError, match="topology.state.key"):
        plain.put("p", Point(1))
    plain.put("n", (1, {2, 3}))  # msgpack and squall's own ext types need no pickle
    plain.commit(1)
    plain.close()
    keyed = redis_conf(redis_server, **{"topology.state.key": "a" * 32})
    s = RedisStateProvider().new_state(ns, keyed, None)
    s.put("p", Point(7))
    s.commit(2)
    s.close()
    assert RedisStateProvider().new_state(ns, keyed, None).get("p") == Point(7)
    assert RedisStateProvider().new_state(ns, keyed, None).get("n") == (1, {2, 3})
    other = redis_conf(redis_server, **{"topology.state.key": "b" * 32})
    with pytest.raises(StateSerializationError, match="tag"):
        RedisStateProvider().new_state(ns, other, None).get("p")


def test_sec6_local_state_file_is_private_and_others_writable_file_is_not_unpickled(tmp_path):
    conf = {"topology.state.provider.config": {"path": str(tmp_path / "state")}}
    s = LocalStateProvider().new_state("t/c/0@g0", conf, None)
    s.put("p", Point(3))
    s.commit(1)
    s.close()
    db = tmp_path / "state" / "squall-state.sqlite3"
    assert db.stat().st_mode & 0o077 == 0
    assert LocalStateProvider().new_state("t/c/0@g0", conf, None).get("p") == Point(3)
    # the file becomes writable by others: someone plants a pickle in it
    db.chmod(0o666)
    planted = tmp_path / "planted"
    with sqlite3.connect(db) as c:
        c.execute("INSERT OR REPLACE INTO committed (ns, key, value) VALUES (?, ?, ?)",
                  ("t/c/0@g0", key("q"), pickled(Trap(str(planted)))))
    state = LocalStateProvider().new_state("t/c/0@g0", conf, None)
    with pytest.raises(StateSerializationError, match="pickle"):
        state.get("q")
    assert not planted.exists()
