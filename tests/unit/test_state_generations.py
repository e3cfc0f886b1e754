"""A new generation of a component's states copies only what the old one committed (item 4 of
the exactly-once review, RELIABILITY E21): a staged transaction may still be rolled back, and
a copy made of it would not roll back with it."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest

from squall.runtime.stateful import open_task_state, state_namespace
from squall.state.local import LocalStateProvider
from squall.state.memory import InMemoryStateProvider


def context(topology: str, tasks: int, index: int) -> SimpleNamespace:
    return SimpleNamespace(topology_name=topology, component_id="count", task_id=index + 1,
                           get_this_component_tasks=lambda: list(range(tasks)),
                           get_this_task_index=lambda: index)


@pytest.fixture(params=["memory", "local", "redis"])
def store(request, tmp_path):
    if request.param == "memory":
        yield InMemoryStateProvider(), {}
    elif request.param == "local":
        yield LocalStateProvider(), {"topology.state.provider.config": {"path": str(tmp_path / "s")}}
    else:
        from squall.state.redis import RedisStateProvider
        from tests.redis_server import RedisServer

        server = RedisServer(tmp_path / "redis")
        server.start()
        try:
            yield RedisStateProvider(), {**server.conf(), "topology.state.key": "generations-test"}
        finally:
            server.stop()


def test_a_new_generation_copies_the_committed_values_not_a_staged_transaction(store):
    provider, conf = store
    topology = f"gen-{uuid.uuid4().hex[:8]}"
    open_task_state(provider, conf, context(topology, 1, 0))  # generation 0 of one task
    old = provider.new_state(state_namespace(topology, "count", 0, 0), conf, None)
    old.put("a", 1)
    old.commit(5)
    old.put("a", 2)
    old.prepare_commit(6)  # a rebalance stops the workers here: txid 6 may yet roll back
    states = [open_task_state(provider, conf, context(topology, 2, i)) for i in range(2)]
    merged = {k: v for s in states for k, v in s}
    assert merged == {"a": 1}
    for s in states:
        s.rollback()  # the ROLLBACK(6) that recovery sends next
    assert {k: v for s in states for k, v in s} == {"a": 1}
    assert old.committed_txid() == 5 and old.prepared_txid() == 6  # the old generation is left as it was
    for s in [old, *states]:
        s.close()
