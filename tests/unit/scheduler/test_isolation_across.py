"""Isolated hosts and reserved workers across topologies (issue 41 item 9).

A topology whose ``squall.scheduler.isolation`` reserves hosts for it does not get a host
another topology's workers use, and another topology does not get a host it isolates; a
refusal names the host and the other topology. ``squall.scheduler.reserved.workers`` counts
the other topologies' workers on the Spark cluster. The other topologies come from the
store as Nimbus keeps it (``topologies/<name>``, ``assignments/<name>``, each version's blobs).
"""

from __future__ import annotations

import pytest

from squall.scheduler import HostOffer, OtherTopology, SchedulingError
from squall.spark.placement import check_reserved, other_topologies
from squall.store import BlobStore, open_store
from squall.store import keys as K
from squall.store.taskrecords import assignment_record
from tests.unit.scheduler.helpers import run, wordcount

GOLD = frozenset({"gold"})
ISOLATE_H1 = {"squall.scheduler.isolation": {"h1": ["gold"]}}


def test_isolated_topology_does_not_get_a_host_another_topology_uses():
    offers = [HostOffer("h1", 2, isolated_for=GOLD), HostOffer("h2", 2)]
    silver = OtherTopology("silver", frozenset({"h1"}))
    with pytest.raises(SchedulingError, match=r"host h1, isolated for 'gold' \(squall.scheduler.isolation\), "
                                              r"runs workers of topology 'silver'"):
        run(wordcount(), offers, {"topology.workers": 1}, name="gold", others=[silver])
    # a topology the isolation names may share the host
    friend = OtherTopology("friend", frozenset({"h1"}))
    offers = [HostOffer("h1", 2, isolated_for=frozenset({"gold", "friend"})), HostOffer("h2", 2)]
    a = run(wordcount(), offers, {"topology.workers": 1}, name="gold", others=[friend])
    assert {w.host for w in a.workers} == {"h1"}


def test_hosts_another_topology_isolates_are_not_offered():
    gold = OtherTopology("gold", frozenset({"h1"}), {"h1": GOLD})
    offers = [HostOffer("h1", 2), HostOffer("h2", 2)]
    a = run(wordcount(), offers, {"topology.workers": 2}, name="silver", others=[gold])
    assert {w.host for w in a.workers} == {"h2"}
    assert a.notes == ("host h1 is isolated for topology 'gold' (squall.scheduler.isolation): not used",)
    with pytest.raises(SchedulingError, match=r"asks for 3 workers .* 2 free worker slots on 1 hosts "
                                              r"\(h2: 2\); host h1 is isolated for topology 'gold'"):
        run(wordcount(), offers, {"topology.workers": 3}, name="silver", others=[gold])
    # an isolation that names this topology too lets it in
    shared = OtherTopology("gold", frozenset({"h1"}), {"h1": frozenset({"gold", "silver"})})
    a = run(wordcount(), offers, {"topology.workers": 4}, name="silver", others=[shared])
    assert {w.host for w in a.workers} == {"h1", "h2"}


def test_the_other_topologies_are_read_from_the_store(tmp_path):
    store = open_store(f"sqlite:{tmp_path / 'nimbus.sqlite3'}")
    blobs = BlobStore(tmp_path / "blobs")
    try:
        for name, master, conf, hosts in (
            ("gold", "spark://m:7077", ISOLATE_H1, ["h1", "h1"]),
            ("silver", "spark://m:7077", {}, ["h2"]),
            ("elsewhere", "spark://other:7077", ISOLATE_H1, ["h1"]),
            ("self", "spark://m:7077", {}, ["h3"]),
        ):
            topology_id = f"{name}-1-abcdef"
            blobs.write(topology_id, 1, code=b"", topology=b"", conf=conf)
            store.put(K.topology_key(name), {"id": topology_id, "version": 1, "spark_master": master})
            workers = [{"host": h, "tasks": {"1": "count"}} for h in hosts]
            store.put(K.assignment_key(name), assignment_record(1, workers, 0.0))
        store.put(K.topology_key("starting"), {"id": "starting-1-abcdef", "version": 1,
                                               "spark_master": "spark://m:7077"})  # no blobs, no assignment
        others = other_topologies(store, blobs, "self", "spark://m:7077")
    finally:
        store.close()
    assert others == [
        OtherTopology("gold", frozenset({"h1"}), {"h1": GOLD}, workers=2),
        OtherTopology("silver", frozenset({"h2"}), {}, workers=1),
        OtherTopology("starting", frozenset(), {}, workers=0),
    ]
    offers = [HostOffer("h1", 2), HostOffer("h2", 2)]
    a = run(wordcount(), offers, {"topology.workers": 2}, name="self", others=others)
    assert {w.host for w in a.workers} == {"h2"}
    with pytest.raises(SchedulingError, match=r"host h2, isolated for 'self' .* runs workers of "
                                              r"topology 'silver'"):
        run(wordcount(), [HostOffer("h1", 2), HostOffer("h2", 2, isolated_for=frozenset({"self"}))],
            {"topology.workers": 1}, name="self", others=others)


def test_reserved_workers_count_the_other_topologies_workers():
    others = [OtherTopology("gold", workers=2), OtherTopology("silver", workers=1), OtherTopology("idle")]
    check_reserved("t", "spark://m:7077", 2, 6, others, 1)  # 2 + 3 held + 1 reserved = 6 slots
    with pytest.raises(SchedulingError, match=r"^topology 't' asks for 3 workers \(topology.workers\); the "
                                              r"Spark cluster \(spark://m:7077\) has 6 worker slots, 3 held "
                                              r"by other topologies \(gold: 2, silver: 1\), and 1 must stay "
                                              r"free \(squall.scheduler.reserved.workers\)$"):
        check_reserved("t", "spark://m:7077", 3, 6, others, 1)
    check_reserved("t", "spark://m:7077", 3, 6, others, 0)  # nothing reserved: not this check's business
    check_reserved("t", "yarn", 30, None, others, 1)  # the cluster's size unknown: nothing checked
