"""A poison record under exactly-once (issue 41 item 3a), on LocalCluster with simulated
time: a record whose bolt raises on every attempt rolls the topology back each time; after
``topology.exactly_once.max.replays`` attempts either the topology stops with one error
naming the record and the spout position it is read again after (``stop``), or the record
goes to the bolt's ``__dead_letter`` stream and everything else is counted once
(``dead_letter``)."""

from __future__ import annotations

from typing import Any

import pytest

from squall import BasicBolt, Config, Fields, LocalCluster, StatefulBolt, TopologyBuilder
from squall.connectors.reliable import declare_dead_letter
from squall.runtime.checkpoint import CHECKPOINT_SPOUT
from squall.state import memory
from squall.testing import simulated_time
from tests.integration.eo_components import committed
from tests.integration.test_exactly_once_committed import Numbers

NAME = "eo-poison"
N = 200
POISON = 37
STEP = 0.1


class Check(BasicBolt):
    """Passes ``n`` on; raises on the poison record, every time."""

    def execute(self, tup: Any, collector: Any) -> None:
        if tup["n"] == POISON:
            raise ValueError(f"cannot handle {POISON}")
        collector.emit([tup["n"]])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("n"))
        declare_dead_letter(declarer)


class Tally(StatefulBolt):
    """How often each first value reached it, in its checkpointed state."""

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: Any) -> None:
        self.state = state

    def execute(self, tup: Any) -> None:
        key = repr(tup.values[1]) if tup.stream == "__dead_letter" else tup.values[0]
        self.state.put(key, self.state.get(key, 0) + 1)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def run(policy: str, steps: int = 400) -> tuple[dict, dict, list[str], list]:
    memory.clear()
    Numbers.DONE, Numbers.TOLD = set(), []
    b = TopologyBuilder()
    b.set_spout("source", Numbers(), 1)
    b.set_bolt("check", Check(), 2).shuffle_grouping("source")
    b.set_bolt("count", Tally(), 1).shuffle_grouping("check")
    b.set_bolt("dead", Tally(), 1).shuffle_grouping("check", stream="__dead_letter")
    c = Config()
    c.set_num_workers(2)
    c.update({"topology.guarantee": "exactly_once", "topology.state.checkpoint.interval.ms": 200,
              "topology.state.provider": "squall.state.memory.InMemoryStateProvider",
              "topology.message.timeout.secs": 3, "topology.exactly_once.max.replays": 3,
              "topology.exactly_once.poison": policy})
    records = []
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology(NAME, c, b.create_topology())
        for _ in range(steps):
            cluster.advance_time(STEP, increment=STEP, quiet_timeout=0.2)
            records.append(committed(f"{NAME}/{CHECKPOINT_SPOUT}").get("txstate"))
            if policy == "dead_letter" and len(committed(f"{NAME}/count/0")) == N - 1 \
                    and committed(f"{NAME}/dead/0"):
                break
        errors = [e["message"] for e in cluster.get_topology_info(NAME)["errors"]]
        cluster.kill_topology(NAME)
    return committed(f"{NAME}/count/0"), committed(f"{NAME}/dead/0"), errors, records


def test_a_poison_record_stops_the_topology_with_one_error_naming_it_and_its_position():
    counts, dead, errors, records = run("stop", steps=300)
    stopped = [e for e in errors if "topology stopped" in e]
    assert stopped, errors
    message = stopped[0]
    assert "\n" not in message
    assert f"record [{POISON}] from 'source' task" in message, message
    assert "failed" in message and "3 times" in message and f"cannot handle {POISON}" in message
    # the position the record is read again after: the spout's committed position, at most it
    assert "spout 'source' (task 0: " in message, message
    position = int(message.split("spout 'source' (task 0: ")[1].split(")")[0])
    assert position <= POISON
    assert POISON not in counts and set(counts) <= set(range(N))
    # stopped: nothing commits, nothing rolls back any more (the record stands still)
    assert records[-1] == records[-100], (records[-1], records[-100])


def test_a_poison_record_goes_to_the_dead_letter_stream_and_the_rest_is_counted_once():
    counts, dead, errors, _ = run("dead_letter")
    missing = sorted(set(range(N)) - set(counts))[:5]
    assert counts == {n: 1 for n in range(N) if n != POISON}, (missing, errors)
    assert dead == {f"[{POISON}]": 1}, dead
    assert any("gave up record" in e and "sent to __dead_letter" in e for e in errors), errors


def test_the_poison_settings_are_checked_at_submit():
    from squall.api.errors import InvalidTopologyError

    c = Config()
    c.update({"topology.exactly_once.poison": "skip"})
    with simulated_time(), LocalCluster() as cluster, pytest.raises(InvalidTopologyError) as e:
        b = TopologyBuilder()
        b.set_spout("source", Numbers(), 1)
        cluster.submit_topology(NAME, c, b.create_topology())
    assert "topology.exactly_once.poison" in str(e.value) and "\n" not in str(e.value)
