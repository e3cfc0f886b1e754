"""The KeyValueState contract, run against every provider (memory, local SQLite, real Redis).

Covers the three-phase commit as the checkpoint protocol drives it (D1, D2): prepare, commit,
rollback, replayed commits, and recovery after a crash between or before the phases.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from dataclasses import dataclass
from decimal import Decimal

import pytest

from squall.state import InvalidTxidError, StateSerializationError


@dataclass(frozen=True)
class Point:  # a picklable non-msgpack value (module level, so pickle finds it)
    x: int
    y: int


def items(state) -> dict:
    return dict(state)


def test_get_put_delete_iterate(backend, namespace):
    s = backend.state(namespace)
    assert s.get("a") is None
    assert s.get("a", 0) == 0
    s.put("a", 1)
    s.put("b", 2)
    s.put("a", 3)
    assert s.get("a") == 3
    s.delete("b")
    s.delete("never-there")
    assert s.get("b", "gone") == "gone"
    assert items(s) == {"a": 3}
    s.commit(1)
    s.put("c", 4)
    s.delete("a")
    assert items(s) == {"c": 4}
    assert sorted(k for k, _ in s) == ["c"]


def test_delete_returns_the_removed_value_as_storm(backend, namespace):
    # Storm's KeyValueState.delete returns the value removed from this task's view
    s = backend.state(namespace)
    s.put("a", {"n": 1})
    s.put("p", Point(1, 2))
    s.commit(1)
    assert s.delete("a") == {"n": 1}  # committed, no pending change: read from the store
    assert s.delete("a") is None  # already deleted (pending)
    assert s.delete("never-there") is None
    s.put("b", [1, 2])
    assert s.delete("b") == [1, 2]  # pending put, never committed
    assert s.delete("p") == Point(1, 2)  # a pickled value comes back decoded
    s.commit(2)
    again = backend.state(namespace)
    assert again.get("a") is None and again.delete("a") is None and items(again) == {}
    s.put(7, 0)
    s.put(False, "")
    assert s.delete(7) == 0 and s.delete(False) == ""  # falsy values are not None


def test_read_your_writes_before_commit_and_no_one_else_sees_them(backend, namespace):
    s = backend.state(namespace)
    s.put("k", "v1")
    s.commit(1)
    s.put("k", "v2")
    s.put("new", 1)
    assert s.get("k") == "v2" and s.get("new") == 1
    other = backend.state(namespace)
    assert other.get("k") == "v1" and other.get("new") is None


def test_prepare_then_commit_is_durable(backend, namespace):
    s = backend.state(namespace)
    assert (s.committed_txid(), s.prepared_txid()) == (None, None)
    s.put("a", 1)
    s.put("b", [1, 2])
    s.prepare_commit(1)
    assert (s.committed_txid(), s.prepared_txid()) == (None, 1)
    s.commit(1)
    assert (s.committed_txid(), s.prepared_txid()) == (1, None)
    # a new state object, from the same and from a fresh provider (as after a process restart)
    for again in (backend.state(namespace), backend.state(namespace, backend.provider())):
        assert items(again) == {"a": 1, "b": [1, 2]}
        assert again.committed_txid() == 1


def test_rollback_after_prepare_discards_staged_and_pending(backend, namespace):
    s = backend.state(namespace)
    s.put("kept", 1)
    s.commit(1)
    s.put("kept", 2)
    s.put("staged", 1)
    s.prepare_commit(2)
    s.put("pending", 1)
    s.rollback()
    assert items(s) == {"kept": 1}
    assert (s.committed_txid(), s.prepared_txid()) == (1, None)
    assert items(backend.state(namespace)) == {"kept": 1}
    s.put("after", 1)  # the state goes on working after a rollback
    s.prepare_commit(2)
    s.commit(2)
    assert items(backend.state(namespace)) == {"kept": 1, "after": 1}


def test_commit_of_an_unprepared_txid_commits_pending_directly(backend, namespace):
    s = backend.state(namespace)
    s.put("a", 1)
    s.commit(7)
    s.delete("a")
    s.put("b", 2)
    s.commit(8)
    assert (s.committed_txid(), s.prepared_txid()) == (8, None)
    assert items(backend.state(namespace)) == {"b": 2}


def test_commit_with_nothing_changed_still_records_the_txid(backend, namespace):
    s = backend.state(namespace)
    s.commit(3)
    assert backend.state(namespace).committed_txid() == 3


def test_committing_an_old_txid_again_is_a_noop(backend, namespace):
    s = backend.state(namespace)
    s.put("a", 1)
    s.prepare_commit(1)
    s.commit(1)
    s.put("a", 2)  # pending for the next transaction
    s.commit(1)  # a replayed COMMIT
    s.commit(0)
    assert s.committed_txid() == 1
    assert backend.state(namespace).get("a") == 1
    assert s.get("a") == 2  # the pending change survived the no-op
    s.commit(2)
    assert backend.state(namespace).get("a") == 2


def test_changes_after_prepare_belong_to_the_next_transaction(backend, namespace):
    s = backend.state(namespace)
    s.put("a", 1)
    s.prepare_commit(1)
    s.put("b", 2)
    s.put("a", 10)
    assert s.get("a") == 10
    s.commit(1)
    assert items(backend.state(namespace)) == {"a": 1}
    assert items(s) == {"a": 10, "b": 2}
    s.prepare_commit(2)
    s.commit(2)
    assert items(backend.state(namespace)) == {"a": 10, "b": 2}


def test_a_state_refuses_to_commit_its_own_prepared_txid_once_the_staged_changes_are_gone(
        backend, namespace):
    """Another writer to the namespace rolled back what this state staged.

    Committing nothing (or the changes made since the prepare) under the txid would lose the
    staged ones silently: the commit refuses, every time, and changes nothing.
    """
    s = backend.state(namespace)
    s.put("a", 1)
    s.commit(1)
    s.put("a", 2)
    s.prepare_commit(2)
    s.put("b", 3)  # the next transaction's
    backend.state(namespace, backend.provider()).rollback()  # the other writer
    for _ in range(2):  # a retried COMMIT refuses the same way
        with pytest.raises(InvalidTxidError, match=r"cannot commit txid 2: this task prepared "
                                                   r"it, but the store holds no prepared "
                                                   r"transaction.*nothing was committed$"):
            s.commit(2)
    assert (s.committed_txid(), s.prepared_txid()) == (1, None)
    assert items(backend.state(namespace)) == {"a": 1}
    s.rollback()  # the checkpoint's recovery: back to txid 1, and the state works on
    s.put("c", 4)
    s.prepare_commit(2)
    s.commit(2)
    assert items(backend.state(namespace)) == {"a": 1, "c": 4}


def test_a_state_that_prepared_nothing_itself_still_commits_a_replayed_txid(backend, namespace):
    """The guard is only for what this object staged: a fresh object (a restarted task) that
    finds nothing prepared commits its changes directly, as Storm's states do."""
    s = backend.state(namespace)
    s.put("a", 1)
    s.prepare_commit(1)
    backend.state(namespace, backend.provider()).rollback()
    fresh = backend.state(namespace, backend.provider())
    fresh.commit(1)
    assert (fresh.committed_txid(), items(backend.state(namespace))) == (1, {})
    s.commit(1)  # and the txid is committed now: a no-op for the object that staged it
    assert s.committed_txid() == 1


def test_a_retried_prepare_merges_the_newer_changes(backend, namespace):
    s = backend.state(namespace)
    s.put("old", 0)
    s.commit(1)
    s.put("a", 1)
    s.put("only-first", 1)
    s.delete("old")
    s.prepare_commit(2)
    s.put("b", 2)
    s.put("a", 3)
    s.prepare_commit(2)  # the first PREPARE timed out and was sent again
    assert s.prepared_txid() == 2
    s.commit(2)
    assert items(backend.state(namespace)) == {"a": 3, "b": 2, "only-first": 1}


def test_txids_out_of_order_are_rejected(backend, namespace):
    s = backend.state(namespace)
    s.commit(5)
    s.put("a", 1)
    with pytest.raises(InvalidTxidError, match="txid 5 is already committed"):
        s.prepare_commit(5)
    assert s.prepared_txid() is None and s.get("a") == 1  # nothing staged, still pending
    s.prepare_commit(6)
    with pytest.raises(InvalidTxidError, match="while txid 6 is prepared"):
        s.commit(7)
    s.commit(6)
    assert backend.state(namespace).get("a") == 1
    for bad in (True, -1, 1.0, "2"):
        with pytest.raises(InvalidTxidError):
            s.commit(bad)


def test_recovery_crash_between_prepare_and_commit(backend, namespace):
    """D1: recovering from COMMITTING sends COMMIT(txid): exactly the staged changes apply."""
    s = backend.state(namespace)
    s.put("old", 1)
    s.put("doomed", 1)
    s.commit(1)
    s.put("new", 2)
    s.delete("doomed")
    s.put("old", 5)
    s.prepare_commit(2)
    s.put("lost", 3)  # pending after the prepare: lost with the crash
    del s  # the crash: the object is gone without commit or rollback

    fresh = backend.state(namespace, backend.provider())
    assert (fresh.committed_txid(), fresh.prepared_txid()) == (1, 2)
    fresh.commit(2)
    assert (fresh.committed_txid(), fresh.prepared_txid()) == (2, None)
    expected = {"old": 5, "new": 2}
    assert items(fresh) == expected
    assert items(backend.state(namespace)) == expected


def test_recovery_crash_while_preparing_rolls_back(backend, namespace):
    """D1: recovering from PREPARING sends ROLLBACK: staged changes are dropped."""
    s = backend.state(namespace)
    s.put("a", 1)
    s.commit(1)
    s.put("a", 2)
    s.prepare_commit(2)
    del s

    fresh = backend.state(namespace, backend.provider())
    assert fresh.prepared_txid() == 2
    fresh.rollback()
    assert (fresh.committed_txid(), fresh.prepared_txid()) == (1, None)
    assert items(fresh) == {"a": 1}


def test_recovery_crash_before_prepare_rolls_back_to_committed(backend, namespace):
    s = backend.state(namespace)
    s.put("a", 1)
    s.prepare_commit(1)
    s.commit(1)
    s.put("a", 2)
    s.put("b", 2)
    del s

    fresh = backend.state(namespace, backend.provider())
    assert (fresh.committed_txid(), fresh.prepared_txid()) == (1, None)
    fresh.rollback()
    assert items(fresh) == {"a": 1}


def test_namespaces_are_isolated(backend, namespace):
    a = backend.state(namespace + "-a")
    b = backend.state(namespace + "-b")
    a.put("k", "a")
    a.prepare_commit(1)
    b.put("k", "b")
    b.commit(9)
    a.commit(1)
    assert (a.get("k"), b.get("k")) == ("a", "b")
    assert (a.committed_txid(), b.committed_txid()) == (1, 9)
    b.put("k2", 1)
    b.prepare_commit(10)
    a.rollback()  # does not touch b's staged transaction
    assert b.prepared_txid() == 10
    assert items(backend.state(namespace + "-a")) == {"k": "a"}
    assert items(backend.state(namespace + "-c")) == {}


KEYS = ["word", 7, -3, 2**70, 1.5, b"\x00raw", None, ("word", 3), ("nested", (1, "x")),
        frozenset({"a", "b"}), True, 1.0, 1]


def test_keys_of_mixed_types_round_trip(backend, namespace):
    s = backend.state(namespace)
    for i, key in enumerate(KEYS):
        s.put(key, i)
    s.commit(1)
    fresh = backend.state(namespace, backend.provider())
    for i, key in enumerate(KEYS):
        assert fresh.get(key) == i, key
    got = list(fresh)
    assert len(got) == len(KEYS)  # 1, 1.0 and True are three keys: keys compare by encoding
    assert {(type(k), k) for k, _ in got} == {(type(k), k) for k in KEYS}


VALUES = {
    "str": "héllo", "int": -(2**63), "uint64": 2**64 - 1, "bigint": 3**80, "float": 2.5,
    "bytes": b"\x00\xff", "none": None, "bool": False, "list": [1, "a", [None]],
    "dict": {"a": 1, 2: [3], ("t", 1): {"in": True}}, "tuple": (1, ("a", b"b")),
    "set": {1, 2}, "frozenset": frozenset({"x"}), "object": Point(1, 2), "decimal": Decimal("1.10"),
}


def test_values_of_every_msgpack_type_and_picklable_objects_round_trip(backend, namespace):
    s = backend.state(namespace)
    for key, value in VALUES.items():
        s.put(key, value)
    s.prepare_commit(1)
    s.commit(1)
    got = items(backend.state(namespace, backend.provider()))
    assert got == VALUES
    assert {k: type(v) for k, v in got.items()} == {k: type(v) for k, v in VALUES.items()}


def test_values_are_copied_at_put(backend, namespace):
    s = backend.state(namespace)
    counts = {"a": 1}
    s.put("counts", counts)
    counts["a"] = 99
    assert s.get("counts") == {"a": 1}
    s.get("counts")["a"] = 5
    assert s.get("counts") == {"a": 1}


def test_unserializable_value_fails_at_put_naming_its_type(backend, namespace):
    s = backend.state(namespace)
    with pytest.raises(StateSerializationError, match="state value of type function"):
        s.put("k", lambda: 1)
    with pytest.raises(StateSerializationError, match="state key of type generator"):
        s.put((x for x in ()), 1)
    s.commit(1)
    assert items(s) == {}


def test_changing_the_state_while_iterating_is_safe(backend, namespace):
    s = backend.state(namespace)
    for i in range(20):
        s.put(i, i)
    s.commit(1)
    for i in range(20, 25):
        s.put(i, i)
    seen = {}
    for k, v in s:
        s.put(k, v + 100)
        s.delete(k + 1000)
        seen[k] = v
    assert seen == {i: i for i in range(25)}
    assert items(s) == {i: i + 100 for i in range(25)}


def test_many_keys_iterate_across_pages(backend, namespace):
    s = backend.state(namespace)
    for i in range(2500):
        s.put(f"k{i}", i)
    s.commit(1)
    for i in range(0, 2500, 2):
        s.delete(f"k{i}")
    s.prepare_commit(2)
    s.put("extra", -1)
    got = items(s)
    assert len(got) == 1251 and got["k1"] == 1 and "k0" not in got and got["extra"] == -1


CHILD = textwrap.dedent("""
    import json, os, sys
    from squall.state import load_provider
    conf = json.loads(sys.argv[1])
    state = load_provider(conf).new_state(sys.argv[2], conf, None)
    if sys.argv[3] == "crash-after-prepare":
        state.put("a", 1)
        state.put("b", [2, "x"])
        state.prepare_commit(1)
        state.put("c", 3)
        os._exit(0)  # like SIGKILL: no close, no cleanup
    print(json.dumps({"items": sorted(state), "txids": [state.committed_txid(), state.prepared_txid()]}))
""")


@pytest.mark.parametrize("backend", ["local", "redis"], indirect=True)
def test_crash_of_the_writing_process_between_prepare_and_commit(backend, namespace, subprocess_env):
    conf = json.dumps(backend.conf)
    subprocess.run([sys.executable, "-c", CHILD, conf, namespace, "crash-after-prepare"],
                   check=True, env=subprocess_env, timeout=60)
    recovering = backend.state(namespace)
    assert (recovering.committed_txid(), recovering.prepared_txid()) == (None, 1)
    recovering.commit(1)
    out = subprocess.run([sys.executable, "-c", CHILD, conf, namespace, "read"], check=True,
                         env=subprocess_env, capture_output=True, text=True, timeout=60).stdout
    assert json.loads(out) == {"items": [["a", 1], ["b", [2, "x"]]], "txids": [1, None]}


def test_a_checkpoint_thread_and_the_task_thread_share_one_state(backend, namespace):
    """Calls on one state object serialize: no put is lost between prepare and commit."""
    s = backend.state(namespace)
    done = threading.Event()

    def task() -> None:
        for i in range(300):
            s.put(i, i)
        done.set()

    writer = threading.Thread(target=task)
    writer.start()
    txid = 0
    while not done.is_set():
        txid += 1
        s.prepare_commit(txid)
        s.commit(txid)
    writer.join(30)
    s.prepare_commit(txid + 1)
    s.commit(txid + 1)
    assert items(backend.state(namespace)) == {i: i for i in range(300)}


def test_list_and_dict_keys_work_though_python_dicts_could_not_hold_them(backend, namespace):
    # a fields grouping on several fields gives a list of values: usable as a key as it is
    s = backend.state(namespace)
    s.put(["word", 2], "list")
    s.put({"b": 1, "a": 2}, "dict")
    s.commit(1)
    fresh = backend.state(namespace, backend.provider())
    assert fresh.get(["word", 2]) == "list" and fresh.get({"a": 2, "b": 1}) == "dict"
    assert fresh.get(("word", 2)) is None  # a tuple is another key than the list
    assert sorted(list(fresh), key=repr) == [(["word", 2], "list"), ({"a": 2, "b": 1}, "dict")]
