"""Keyed state by key group (issue 38 item 1): one namespace per key group, transactions that
touch only the changed key groups, recovery of a staged transaction after a crash, and
key groups added and released."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest

from squall.runtime.keygroups import default_table, key_group, owned_groups
from squall.runtime.stateful import KeyGroupsChangedError, open_keyed_state
from squall.state import InvalidTxidError
from squall.state.keygrouped import KeyGroupedState, group_namespace

K = 64


def context(topology: str, tasks: int, index: int) -> SimpleNamespace:
    return SimpleNamespace(topology_name=topology, component_id="count", task_id=index + 1,
                           get_this_component_tasks=lambda: list(range(tasks)),
                           get_this_task_index=lambda: index)


@pytest.fixture(params=["memory", "local", "redis", "user"])
def store(request, tmp_path):
    """(provider, conf) of each squall provider and of the user's one of docs/state.md."""
    if request.param == "memory":
        from squall.state.memory import InMemoryStateProvider

        return InMemoryStateProvider(), {"topology.key.groups": K}
    if request.param == "local":
        from squall.state.local import LocalStateProvider

        return LocalStateProvider(), {"topology.state.provider.config": {"path": str(tmp_path / "s")},
                                      "topology.key.groups": K}
    if request.param == "user":
        from tests.state.dict_provider import DictStateProvider

        return DictStateProvider(), {"topology.state.provider.config": {"path": str(tmp_path / "d")},
                                     "topology.key.groups": K}
    from squall.state.redis import RedisStateProvider

    host, port = request.getfixturevalue("redis_server")
    return RedisStateProvider(), {"topology.state.provider.config": {"host": host, "port": port},
                                  "topology.state.key": "kg-test-key", "topology.key.groups": K}


def topology() -> str:
    return f"kg-{uuid.uuid4().hex[:8]}"


def owner(key, tasks: int) -> int:
    return default_table(tasks, K)[key_group(key, K)]


def committed_groups(provider, conf, name: str) -> set[int]:
    """Key groups whose namespace has a committed txid."""
    found = set()
    for g in range(K):
        s = provider.new_state(group_namespace(f"{name}/count", g), conf, None)
        if s.committed_txid() is not None:
            found.add(g)
        s.close() if hasattr(s, "close") else None
    return found


WORDS = [f"w{i}" for i in range(40)]


def staged_over_a_commit(provider, conf, name: str) -> KeyGroupedState:
    """A task's keyed state with every word 1 committed as txid 1 and 2 staged as txid 2."""
    state = open_keyed_state(provider, conf, context(name, 1, 0))
    for w in WORDS:
        state.put(w, 1)
    state.prepare_commit(1)
    state.commit(1)
    for w in WORDS:
        state.put(w, 2)
    state.prepare_commit(2)
    return state


def test_keys_live_in_their_key_groups_namespaces_and_iterate_as_one_map(store):
    provider, conf = store
    name = topology()
    states = [open_keyed_state(provider, conf, context(name, 2, i)) for i in range(2)]
    assert isinstance(states[0], KeyGroupedState)
    assert states[1].key_groups() == owned_groups(default_table(2, K), 1)
    for w in WORDS:
        s = states[owner(w, 2)]
        s.put(w, s.get(w, 0) + 1)
    states[0].put("total", 7)  # a key outside the task's key groups, or not: kept either way
    for s in states:
        s.prepare_commit(1)
        s.commit(1)
    assert sorted(k for s in states for k, _ in s) == sorted(WORDS + ["total"])
    again = open_keyed_state(provider, conf, context(name, 2, 0))
    assert again.get("total") == 7 and again.committed_txid() == 1
    g = key_group(WORDS[0], K)
    one = provider.new_state(group_namespace(f"{name}/count", g), conf, None)
    assert one.get(WORDS[0]) == 1  # the key group's own namespace holds the key


def test_a_checkpoint_touches_only_the_key_groups_changed_since_the_last(store):
    provider, conf = store
    name = topology()
    state = open_keyed_state(provider, conf, context(name, 1, 0))
    state.put("a", 1)
    state.put("b", 2)
    state.prepare_commit(1)
    state.commit(1)
    assert committed_groups(provider, conf, name) == {key_group("a", K), key_group("b", K)}
    state.prepare_commit(2)  # nothing changed: no key group is written
    state.commit(2)
    assert state.committed_txid() == 2
    assert provider.new_state(group_namespace(f"{name}/count", key_group("a", K)), conf,
                              None).committed_txid() == 1


@pytest.mark.parametrize("outcome", ["commit", "rollback"])
def test_a_staged_transaction_is_settled_by_a_restarted_task(store, outcome):
    provider, conf = store
    name = topology()
    staged_over_a_commit(provider, conf, name)
    # the worker dies here, or midway through the commit: one key group is committed
    g = key_group(WORDS[0], K)
    provider.new_state(group_namespace(f"{name}/count", g), conf, None).commit(2)
    restarted = open_keyed_state(provider, conf, context(name, 1, 0))
    assert restarted.prepared_txid() == 2 and restarted.committed_txid() == 1
    assert set(restarted.staged_key_groups()) == {key_group(w, K) for w in WORDS}
    if outcome == "commit":  # the COMMIT the recovery replays
        restarted.commit(2)
    else:
        restarted.rollback()
    values = dict(open_keyed_state(provider, conf, context(name, 1, 0)))
    if outcome == "commit":
        assert values == {w: 2 for w in WORDS}
    else:  # every key group not committed before the crash goes back to txid 1
        assert {w: v for w, v in values.items() if key_group(w, K) != g} == {
            w: 1 for w in WORDS if key_group(w, K) != g}


def test_a_key_group_whose_staged_changes_are_gone_stops_the_commit(store):
    """Another writer rolled back one key group the task staged: the commit refuses, naming it,
    and the record stays prepared; no key group of it is committed (one store transaction)."""
    provider, conf = store
    if type(provider).__name__ == "DictStateProvider":
        pytest.skip("a user's provider commits as it is written: the guard is squall's states'")
    name = topology()
    state = staged_over_a_commit(provider, conf, name)
    staged = sorted(state.staged_key_groups())
    gone = staged[-1]  # the batch's last key group: the ones before it would go first
    provider.new_state(group_namespace(f"{name}/count", gone), conf, None).rollback()
    with pytest.raises(InvalidTxidError, match=rf"/{gone}'?: cannot commit txid 2: this task "
                                               r"prepared it"):
        state.commit(2)
    restarted = open_keyed_state(provider, conf, context(name, 1, 0))
    assert (restarted.committed_txid(), restarted.prepared_txid()) == (1, 2)
    assert {g: provider.new_state(group_namespace(f"{name}/count", g), conf, None).committed_txid()
            for g in staged} == dict.fromkeys(staged, 1)


def test_a_new_plan_moves_key_groups_without_copying_keys(store):
    provider, conf = store
    name = topology()
    states = [open_keyed_state(provider, conf, context(name, 2, i)) for i in range(2)]
    for w in WORDS:
        states[owner(w, 2)].put(w, len(w))
    for s in states:
        s.prepare_commit(1)
        s.commit(1)
    wider = [open_keyed_state(provider, conf, context(name, 5, i)) for i in range(5)]
    for i, s in enumerate(wider):
        assert {k for k, _ in s} == {w for w in WORDS if owner(w, 5) == i}
    assert {k: v for s in wider for k, v in s} == {w: len(w) for w in WORDS}


def test_key_groups_are_added_and_released(store):
    provider, conf = store
    name = topology()
    a, b = (open_keyed_state(provider, conf, context(name, 2, i)) for i in range(2))
    for w in WORDS:
        (a if owner(w, 2) == 0 else b).put(w, 1)
    a.prepare_commit(1)
    a.commit(1)
    b.prepare_commit(1)
    b.put(WORDS[0], 5)
    moving = b.key_groups()[:8]
    with pytest.raises(RuntimeError, match="uncommitted"):
        b.release_key_groups(moving)  # txid 1 is staged
    b.commit(1)
    b.rollback()
    b.release_key_groups(moving)
    a.add_key_groups(moving)
    assert set(a.key_groups()) == set(owned_groups(default_table(2, K), 0)) | set(moving)
    moved_words = [w for w in WORDS if key_group(w, K) in moving]
    assert all(a.get(w) == 1 for w in moved_words)
    assert all(k not in moved_words for k, _ in b)


def test_a_changed_key_group_count_is_refused(store):
    provider, conf = store
    name = topology()
    open_keyed_state(provider, conf, context(name, 1, 0))
    with pytest.raises(KeyGroupsChangedError, match=f"kept in {K} key groups; it cannot change"):
        open_keyed_state(provider, {**conf, "topology.key.groups": 128}, context(name, 1, 0))


def legacy_state(provider, conf, name: str, tasks: int) -> dict:
    """Today's per-task layout (``t/c/i``, ``$tasks``) with committed and staged values."""
    from squall.runtime.hashing import stable_hash
    from squall.runtime.stateful import open_task_state

    states = [open_task_state(provider, conf, context(name, tasks, i)) for i in range(tasks)]
    for w in WORDS:  # where the fields grouping put a key before key groups
        states[stable_hash(w) % tasks].put(w, len(w))
    for s in states:
        s.prepare_commit(3)
        s.commit(3)
    for w in WORDS:
        states[stable_hash(w) % tasks].put(w, -1)  # staged when the topology stopped: not moved
    for s in states:
        s.prepare_commit(4)
    return {w: len(w) for w in WORDS}


def test_an_interrupted_migration_resumes_and_a_repeated_one_changes_nothing(store, monkeypatch):
    import squall.state.base as base

    provider, conf = store
    name = topology()
    want = legacy_state(provider, conf, name, 3)
    real = base.apply_all
    calls = []

    def crash_midway(ops):
        if len(ops) > 4 and all(op == "commit" and txid == 0 for _, op, txid in ops):
            calls.append(len(ops))
            real(ops[:len(ops) // 2])  # half the key groups moved in, then the worker dies
            raise RuntimeError("worker killed")
        real(ops)

    monkeypatch.setattr(base, "apply_all", crash_midway)
    with pytest.raises(RuntimeError, match="worker killed"):
        open_keyed_state(provider, conf, context(name, 2, 0))
    monkeypatch.setattr(base, "apply_all", real)
    assert calls
    states = [open_keyed_state(provider, conf, context(name, 2, i)) for i in range(2)]
    assert {k: v for s in states for k, v in s} == want
    for i, s in enumerate(states):
        assert {k for k, _ in s} == {w for w in WORDS if owner(w, 2) == i}
        s.put(WORDS[0], 99) if owner(WORDS[0], 2) == i else None
        s.prepare_commit(5)
        s.commit(5)
    again = [open_keyed_state(provider, conf, context(name, 2, i)) for i in range(2)]  # same plan
    assert {k: v for s in again for k, v in s} == {**want, WORDS[0]: 99}
    wider = [open_keyed_state(provider, conf, context(name, 4, i)) for i in range(4)]  # a rescale
    assert {k: v for s in wider for k, v in s} == {**want, WORDS[0]: 99}  # never migrated twice
    old = provider.new_state(f"{name}/count/0", conf, None)
    # the old layout is left alone (a user's state, which cannot list committed values only,
    # gets the rollback the recovery would have sent)
    user = type(provider).__name__ == "DictStateProvider"
    assert (old.committed_txid(), old.prepared_txid()) == (3, None if user else 4)


def test_on_redis_every_key_group_reads_the_server_again_after_a_checkpoint(redis_server):
    from squall.state.redis import RedisStateProvider

    host, port = redis_server
    provider, conf = RedisStateProvider(), {
        "topology.state.provider.config": {"host": host, "port": port},
        "topology.state.key": "kg-test-key", "topology.key.groups": K}
    name = topology()
    state = open_keyed_state(provider, conf, context(name, 1, 0))
    a, b = "a", next(w for w in WORDS if key_group(w, K) != key_group("a", K))
    state.put(a, 1)
    state.prepare_commit(1)
    state.commit(1)
    assert state.get(a) == 1  # cached now
    other = provider.new_state(group_namespace(f"{name}/count", key_group(a, K)), conf, None)
    other.put(a, 50)  # a server others may write or restart (RELIABILITY D12)
    other.commit(7)
    state.put(b, 1)  # a checkpoint that does not touch a's key group
    state.prepare_commit(2)
    state.commit(2)
    assert state.get(a) == 50
