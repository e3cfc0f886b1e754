"""InMemoryStateProvider specifics: one store per process, shared by providers; clear()."""

from __future__ import annotations

import threading

from squall.state.memory import InMemoryStateProvider, clear


def test_a_resubmitted_topology_in_the_same_process_finds_its_state(namespace):
    first = InMemoryStateProvider().new_state(namespace, {}, None)
    first.put("count", 41)
    first.prepare_commit(1)
    first.commit(1)
    first.put("count", 42)  # never committed: lost with the killed topology
    again = InMemoryStateProvider().new_state(namespace, {"topology.state.provider.config": {"x": 1}}, None)
    assert again.get("count") == 41 and again.committed_txid() == 1


def test_clear_forgets_every_namespace(namespace):
    s = InMemoryStateProvider().new_state(namespace, {}, None)
    s.put("k", 1)
    s.commit(1)
    clear()
    fresh = InMemoryStateProvider().new_state(namespace, {}, None)
    assert fresh.get("k") is None and fresh.committed_txid() is None


def test_many_tasks_commit_at_once(namespace):
    def task(i: int) -> None:
        s = InMemoryStateProvider().new_state(f"{namespace}-{i}", {}, None)
        for txid in range(1, 101):
            s.put("n", txid)
            s.prepare_commit(txid)
            s.commit(txid)

    threads = [threading.Thread(target=task, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for i in range(16):
        s = InMemoryStateProvider().new_state(f"{namespace}-{i}", {}, None)
        assert (s.get("n"), s.committed_txid()) == (100, 100)
