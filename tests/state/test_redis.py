"""RedisStateProvider specifics against a real redis-server: the key layout, outages (D12) and
reconnection, and that ``import squall.state`` does not import the redis client."""

from __future__ import annotations

import subprocess
import sys

import pytest
import redis

from squall.state import InvalidTxidError, StateConfigError, StateUnavailableError
from squall.state.redis import RedisStateProvider
from tests.state.conftest import free_port


def new_state(conf: dict, namespace: str = "ns"):
    return RedisStateProvider().new_state(namespace, conf, None)


def test_layout_is_three_hashes_per_namespace(redis_server, namespace):
    host, port = redis_server
    s = new_state({"topology.state.provider.config": {"host": host, "port": port}}, namespace)
    s.put("a", 1)
    s.commit(1)
    s.put("a", 2)
    s.delete("b")
    s.prepare_commit(2)
    raw = redis.Redis(host=host, port=port)
    prefix = f"squall:state:{{{namespace}}}"
    assert sorted(k.decode() for k in raw.keys(f"squall:state:{{{namespace}}}:*")) == [
        f"{prefix}:committed", f"{prefix}:staged", f"{prefix}:txids"]
    assert raw.hgetall(f"{prefix}:txids") == {b"committed": b"1", b"prepared": b"2"}
    assert sorted(raw.hgetall(f"{prefix}:staged").values()) == [b"", b"\x02"]  # tombstone, 2
    s.commit(2)
    assert not raw.exists(f"{prefix}:staged")
    assert raw.hgetall(f"{prefix}:txids") == {b"committed": b"2"}
    s.close()
    raw.close()


def test_outage_is_a_clear_error_and_the_same_state_works_after_redis_returns(redis_factory, namespace):
    """D12: Redis with AOF (fsync always) stops mid-run and comes back on the same port.

    Persistence makes "committed data intact" a fair claim; without it a restarted Redis is
    empty and only reconnection could be checked.
    """
    server = redis_factory("--appendonly", "yes", "--appendfsync", "always")
    s = new_state(server.conf(timeout=2), namespace)
    s.put("committed", 1)
    s.prepare_commit(1)
    s.commit(1)
    s.put("staged", 2)
    s.prepare_commit(2)
    s.put("pending", 3)

    server.stop()
    where = f"{server.host}:{server.port}"
    for call in (lambda: s.get("committed"), lambda: s.prepare_commit(3), lambda: s.commit(2),
                 s.rollback, s.committed_txid, lambda: dict(s)):
        with pytest.raises(StateUnavailableError) as err:
            call()
        message = str(err.value)
        assert "\n" not in message
        assert message.startswith(f"RedisStateProvider: Redis at {where} (db 0) is unavailable: ")
    s.put("during", 4)  # puts are buffered: the task can go on processing
    assert s.get("during") == 4

    server.start()
    assert s.get("committed") == 1  # the same object reconnects
    assert (s.committed_txid(), s.prepared_txid()) == (1, 2)
    s.commit(2)  # the staged transaction survived the restart
    s.prepare_commit(3)  # the pending changes survived the failed calls
    s.commit(3)
    fresh = new_state(server.conf(), namespace)
    assert dict(fresh) == {"committed": 1, "staged": 2, "pending": 3, "during": 4}
    assert fresh.committed_txid() == 3
    s.close()
    fresh.close()


def test_a_failed_commit_can_be_retried_after_redis_returns(redis_factory, namespace):
    server = redis_factory("--appendonly", "yes", "--appendfsync", "always")
    s = new_state(server.conf(timeout=2), namespace)
    s.put("a", 1)
    s.prepare_commit(1)
    server.stop()
    with pytest.raises(StateUnavailableError):
        s.commit(1)
    server.start()
    s.commit(1)
    s.commit(1)  # and replaying it is a no-op
    assert dict(new_state(server.conf(), namespace)) == {"a": 1}
    s.close()


def test_a_redis_restarted_without_persistence_is_named_at_the_commit_not_committed_empty(
        redis_factory, namespace):
    """The restart lost the staged transaction (and all else): the commit says so, and
    leaves the emptied store as it is instead of recording txid 2 over nothing."""
    server = redis_factory()  # --save "" --appendonly no: a restart empties it
    s = new_state(server.conf(timeout=2), namespace)
    s.put("a", 1)
    s.prepare_commit(1)
    s.commit(1)
    s.put("a", 2)
    s.prepare_commit(2)
    server.stop()
    server.start()
    with pytest.raises(InvalidTxidError, match=r"cannot commit txid 2: this task prepared it.*"
                                               r"or the store lost it"):
        s.commit(2)
    assert (s.committed_txid(), s.prepared_txid()) == (None, None)
    s.close()


def test_unreachable_redis_fails_on_first_use_naming_host_and_port():
    port = free_port()  # nothing listens here
    s = new_state({"topology.state.provider.config": {"port": port, "password": "s3cret", "db": 2}})
    with pytest.raises(StateUnavailableError) as err:
        s.get("k")
    message = str(err.value)
    assert f"Redis at 127.0.0.1:{port} (db 2) is unavailable" in message
    assert "s3cret" not in message and "\n" not in message


def test_unknown_config_key_is_rejected():
    with pytest.raises(StateConfigError, match=r"unknown keys \['hostname'\] for RedisStateProvider"):
        new_state({"topology.state.provider.config": {"hostname": "x"}})


def test_importing_squall_state_does_not_import_redis(subprocess_env):
    code = ("import sys, squall.state, squall.state.memory, squall.state.local, squall.state.redis; "
            "assert 'redis' not in sys.modules, 'redis imported'")
    subprocess.run([sys.executable, "-c", code], check=True, env=subprocess_env, timeout=60)
