"""The cache of str keys' values in ``BufferedKeyValueState``, and when its lock is taken.

The cache keeps each str key's current value across prepares and commits (Redis reads
through after each) and drops it on rollback; a cached get, and a put of a scalar from the
thread that created the state, take no lock; every other call does. Run against every
provider.
"""

from __future__ import annotations

import threading

from squall.state import base


class CountingLock:
    """An RLock that counts how often it was taken."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.taken = 0

    def __enter__(self) -> None:
        self._lock.__enter__()
        self.taken += 1

    def __exit__(self, *exc: object) -> None:
        self._lock.__exit__(*exc)


def test_the_cache_survives_a_commit_and_a_rollback_drops_it(backend, namespace):
    s = backend.state(namespace)
    s.put("a", 1)
    s.put("l", [1])
    s.prepare_commit(1)
    s.commit(1)
    if backend.name == "redis":
        assert s._cache == {}  # reads the shared server again after a commit
    else:
        assert s._cache["a"] == 1
    s.put("a", 2)
    s.put("l", [2])
    s.delete("gone")
    s.prepare_commit(2)
    assert (s.get("a"), s.get("l"), s.get("gone", "d")) == (2, [2], "d")
    s.rollback()  # back to txid 1: the staged 2 and the cache are dropped
    assert s._cache == {}
    assert (s.get("a"), s.get("l")) == (1, [1])
    s.put("a", 3)
    s.rollback()  # pending only
    assert s.get("a") == 1
    s.commit(3)
    assert dict(backend.state(namespace)) == {"a": 1, "l": [1]}


def test_a_cached_mutable_value_is_a_fresh_copy_on_every_get(backend, namespace):
    s = backend.state(namespace)
    s.put("l", [1])
    s.get("l").append(2)
    s.commit(1)
    got = s.get("l")
    got.append(3)
    assert s.get("l") == [1]
    assert dict(backend.state(namespace)) == {"l": [1]}


def test_a_read_miss_is_cached_and_the_put_after_it_is_stored(backend, namespace):
    s = backend.state(namespace)
    assert s.get("new", 0) == 0
    assert s._cache["new"] is base._ABSENT
    s.put("new", 1)
    s.prepare_commit(1)
    s.commit(1)
    assert backend.state(namespace).get("new") == 1


def test_the_owner_thread_takes_no_lock_for_a_counter(backend, namespace):
    s = backend.state(namespace)
    s.put("w", 0)
    s._lock = lock = CountingLock()
    for _ in range(100):
        s.put("w", s.get("w", 0) + 1)
    assert lock.taken == 0
    s.put("w", [1])  # not a scalar: encoded, under the lock
    s.get(("t", 1))  # not a str key
    assert lock.taken == 2


def test_another_thread_takes_the_lock_and_its_puts_reach_the_store(backend, namespace):
    s = backend.state(namespace)
    s.put("w", 0)
    for i in range(100):
        s.put(f"t{i}", -1)  # cached: the owner thread would put them without the lock
    s._lock = lock = CountingLock()

    def other() -> None:
        for i in range(100):
            s.put(f"t{i}", i)

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert lock.taken == 100
    s.prepare_commit(1)
    s.commit(1)
    assert dict(backend.state(namespace)) == {"w": 0, **{f"t{i}": i for i in range(100)}}


def test_puts_from_a_bolt_thread_and_the_task_thread_while_it_prepares(backend, namespace):
    """A bolt's own thread puts while the task thread counts and prepares: nothing is lost."""
    s = backend.state(namespace)
    for k in ("mine", "theirs"):
        s.put(k, 0)
    done = threading.Event()
    stop = threading.Event()

    def bolt_thread() -> None:
        n = 0
        while not stop.is_set() or n < 2000:
            n += 1
            s.put("theirs", n)
        s.put("theirs_final", n)
        done.set()

    thread = threading.Thread(target=bolt_thread)
    thread.start()
    txid = 0
    for i in range(1, 3001):
        s.put("mine", s.get("mine", 0) + 1)
        if i % 300 == 0:
            txid += 1
            s.prepare_commit(txid)
            s.commit(txid)
    stop.set()
    done.wait(30)
    thread.join()
    txid += 1
    s.prepare_commit(txid)
    s.commit(txid)
    stored = dict(backend.state(namespace))
    assert stored["mine"] == 3000
    assert stored["theirs"] == stored["theirs_final"] == s.get("theirs")


def test_iteration_while_putting_sees_the_snapshot_and_keeps_the_puts(backend, namespace):
    s = backend.state(namespace)
    for i in range(5):
        s.put(f"k{i}", i)
    s.commit(1)
    seen = {}
    for key, value in s:
        seen[key] = value
        s.put(key, value + 10)  # the task thread puts while it iterates
        s.put(f"new-{key}", 1)
    assert seen == {f"k{i}": i for i in range(5)}
    assert dict(s) == {**{f"k{i}": i + 10 for i in range(5)}, **{f"new-k{i}": 1 for i in range(5)}}
    s.prepare_commit(2)
    s.commit(2)
    assert dict(backend.state(namespace)) == dict(s)


def test_the_cache_is_bounded(backend, namespace, monkeypatch):
    monkeypatch.setattr(base, "VALUE_CACHE_SIZE", 10)
    s = backend.state(namespace)
    for i in range(25):
        s.put(f"w{i}", i)  # puts since the last flush are all kept
    assert len(s._cache) == 25
    s.prepare_commit(1)
    s.commit(1)
    assert len(s._cache) == 0
    assert [s.get(f"w{i}") for i in range(25)] == list(range(25))
    assert len(s._cache) == 10  # reads stop filling it at the bound
