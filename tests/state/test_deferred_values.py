"""Scalar values kept unencoded until the next prepare/commit, and the cache of str keys.

``BufferedKeyValueState`` keeps int, float, bool and bytes values as given until the state
is prepared, committed or iterated (they cannot change after ``put`` and always encode), and
remembers the encoding of str keys: what a caller sees must be exactly what it saw when
every put was encoded at once. Run against every provider.
"""

from __future__ import annotations

import pytest

from squall.state import StateSerializationError, base


def test_deferred_scalars_read_back_and_reach_the_store(backend, namespace):
    s = backend.state(namespace)
    s.put("n", 1)
    s.put("f", 2.5)
    s.put("b", True)
    s.put("raw", b"\x00\xff")
    s.put("big", 2**70)
    got = (s.get("n"), s.get("f"), s.get("b"), s.get("raw"), s.get("big"))
    assert got == (1, 2.5, True, b"\x00\xff", 2**70)
    assert type(s.get("b")) is bool
    s.prepare_commit(1)
    s.commit(1)
    fresh = backend.state(namespace)  # a new state object reads only what was stored
    assert dict(fresh) == {"n": 1, "f": 2.5, "b": True, "raw": b"\x00\xff", "big": 2**70}


def test_direct_commit_stores_deferred_values(backend, namespace):
    s = backend.state(namespace)
    s.put("n", 7)
    s.commit(1)  # nothing prepared: the pending changes are committed directly
    assert backend.state(namespace).get("n") == 7


def test_the_last_put_wins_whichever_kind_it_is(backend, namespace):
    s = backend.state(namespace)
    s.put("k", 1)
    s.put("k", [1, 2])  # encoded at once after a deferred one
    assert s.get("k") == [1, 2]
    s.put("j", [1, 2])
    s.put("j", 3)  # deferred after an encoded one
    assert s.get("j") == 3
    s.prepare_commit(1)
    s.commit(1)
    assert dict(backend.state(namespace)) == {"k": [1, 2], "j": 3}


def test_delete_of_a_deferred_value_returns_it_and_deletes(backend, namespace):
    s = backend.state(namespace)
    s.put("k", 5)
    s.prepare_commit(1)
    s.commit(1)
    s.put("k", 6)
    assert s.delete("k") == 6
    assert s.get("k") is None
    s.prepare_commit(2)
    s.commit(2)
    assert backend.state(namespace).get("k") is None


def test_iteration_and_rollback_see_deferred_values(backend, namespace):
    s = backend.state(namespace)
    s.put("a", 1)
    s.prepare_commit(1)
    s.commit(1)
    s.put("a", 2)
    s.put("b", 3)
    assert dict(s) == {"a": 2, "b": 3}
    s.put("a", 4)  # after the iteration took its snapshot
    s.rollback()
    assert dict(s) == {"a": 1}
    assert s.get("b") is None


def test_prepared_deferred_values_survive_into_the_commit(backend, namespace):
    s = backend.state(namespace)
    s.put("a", 1)
    s.prepare_commit(1)
    s.put("a", 2)  # pending for the next transaction
    assert s.get("a") == 2
    s.commit(1)
    assert backend.state(namespace).get("a") == 1
    s.prepare_commit(2)
    s.commit(2)
    assert backend.state(namespace).get("a") == 2


def test_unencodable_str_still_fails_at_put(backend, namespace):
    s = backend.state(namespace)
    with pytest.raises(StateSerializationError):
        s.put("k", "\ud800")  # a lone surrogate has no UTF-8: str values are not deferred
    with pytest.raises((StateSerializationError, UnicodeEncodeError)):
        s.put("\ud800", 1)  # a key raises as it did before the cache, and is not cached
    assert "\ud800" not in s._keys
    assert s.get("k") is None


def test_str_key_cache_is_bounded_and_keys_stay_distinct(backend, namespace, monkeypatch):
    monkeypatch.setattr(base, "KEY_CACHE_SIZE", 3)
    s = backend.state(namespace)
    for i in range(10):
        s.put(f"w{i}", i)
    assert len(s._keys) == 3
    assert [s.get(f"w{i}") for i in range(10)] == list(range(10))
    s.put(1, "int")
    s.put(1.0, "float")
    s.put("1", "str")
    assert (s.get(1), s.get(1.0), s.get("1")) == ("int", "float", "str")
