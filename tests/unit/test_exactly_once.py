"""The alignment of exactly-once mode on fake tuples: what runs, what waits, what is dropped."""

from __future__ import annotations

from squall.runtime.checkpoint import CHECKPOINT_SPOUT, CHECKPOINT_STREAM
from squall.runtime.checkpoint_spout import add_checkpointing
from squall.runtime.exactly_once import Alignment

P1 = (1, "PREPARE", (11,))
P2 = (2, "PREPARE", (12,))
R1 = (1, "ROLLBACK", (13,))
R1_AGAIN = (1, "ROLLBACK", (14,))
C1 = (1, "COMMIT", (15,))
I0 = (0, "INITSTATE", (16,))


def recovered() -> Alignment:
    """A task past its first recovery barrier (upstream tasks 1 and 2)."""
    a = Alignment()
    a.arrive(I0, "INITSTATE", 1)
    a.arrive(I0, "INITSTATE", 2)
    assert a.complete(True) == []
    return a


def test_a_fresh_task_drops_data_until_a_recovery_barrier_passed():
    a = Alignment()
    assert not a.admit(1, "x") and not a.admit(2, "y")
    assert a.dropped == 2
    a.arrive(I0, "INITSTATE", 1)
    assert not a.admit(1, "after-init-1")  # held: behind the barrier
    assert not a.admit(2, "before-init-2")  # dropped: from before source 2's recovery
    a.arrive(I0, "INITSTATE", 2)
    assert a.complete(True) == ["after-init-1"]
    assert a.dropped == 3
    assert a.admit(2, "z") and not a.recovering


def test_prepare_holds_data_behind_the_barrier_until_every_input_sent_it():
    a = recovered()
    assert a.admit(1, "a1") and a.admit(2, "b1")
    a.arrive(P1, "PREPARE", 1)
    assert not a.admit(1, "a2")  # after the barrier on input 1: waits
    assert a.admit(2, "b2")  # before the barrier on input 2: part of transaction 1
    a.arrive(P1, "PREPARE", 2)
    assert a.complete(True) == ["a2"]
    assert a.admit(1, "a3") and a.dropped == 0


def test_a_failed_prepare_drops_what_it_held_and_everything_until_the_rollback():
    a = recovered()
    a.arrive(P1, "PREPARE", 1)
    assert not a.admit(1, "a2")
    a.arrive(P1, "PREPARE", 2)
    assert a.complete(False) == []
    assert a.recovering and not a.admit(1, "a3") and a.dropped == 2


def test_a_rollback_cancels_a_pending_prepare_and_drops_pre_rollback_data():
    a = recovered()
    a.arrive(P1, "PREPARE", 1)
    assert not a.admit(1, "held-before-rollback")
    a.arrive(R1, "ROLLBACK", 1)  # the PREPARE never completes here
    assert not a.admit(1, "after-rollback-1")  # held: comes after source 1 rolled back
    assert not a.admit(2, "before-rollback-2")  # dropped: source 2 has not rolled back yet
    a.arrive(R1, "ROLLBACK", 2)
    assert a.complete(True) == ["after-rollback-1"]
    assert a.dropped == 2 and not a.recovering


def test_a_retried_rollback_drops_what_the_first_one_held():
    a = recovered()
    a.arrive(R1, "ROLLBACK", 1)
    assert not a.admit(1, "between-rollbacks")
    a.arrive(R1_AGAIN, "ROLLBACK", 2)  # a new emission: the spouts seek again
    assert not a.admit(1, "before-second-1") and not a.admit(2, "after-second-2")
    a.arrive(R1_AGAIN, "ROLLBACK", 1)
    assert a.complete(True) == ["after-second-2"]


def test_a_failed_data_tuple_fails_the_next_prepare_until_a_rollback():
    a = recovered()
    a.fail_data()
    assert a.recovering and not a.admit(1, "x")
    a.arrive(R1, "ROLLBACK", 1)
    a.arrive(R1, "ROLLBACK", 2)
    a.complete(True)
    assert not a.recovering and a.admit(1, "y")


def test_commit_holds_nothing():
    a = recovered()
    a.arrive(C1, "COMMIT", 1)
    assert a.admit(1, "x") and a.admit(2, "y")
    a.arrive(C1, "COMMIT", 2)
    assert a.complete(True) == []


def test_exactly_once_wiring_sends_the_barrier_through_the_spouts():
    from squall import TopologyBuilder
    from tests.integration.eo_components import Count, ListSpout, Split

    b = TopologyBuilder()
    b.set_spout("source", ListSpout([], "t"), 2)
    b.set_bolt("split", Split(), 2).shuffle_grouping("source")
    b.set_bolt("count", Count(), 2).shuffle_grouping("split")
    t = add_checkpointing(b.create_topology(), exactly_once=True)
    checkpoint_inputs = {cid: [i.component for i in spec.inputs if i.stream == CHECKPOINT_STREAM]
                         for cid, spec in t.components.items()}
    assert checkpoint_inputs == {"source": [CHECKPOINT_SPOUT], "split": ["source"],
                                 "count": ["split"], CHECKPOINT_SPOUT: []}
    assert CHECKPOINT_STREAM in t.components["source"].streams
    plain = add_checkpointing(b.create_topology())
    assert [i.component for i in plain.components["split"].inputs
            if i.stream == CHECKPOINT_STREAM] == [CHECKPOINT_SPOUT]
