"""The gray upgrade's bookkeeping (squall.nimbus.gray): the topology.upgrade.* keys, batches, expiry."""

from __future__ import annotations

import random

import pytest

from squall.nimbus import gray
from squall.nimbus.errors import InvalidRequest
from squall.runtime import clock

WORKERS = [{"worker": i, "address": f"tcp://127.0.0.1:{4000 + i}", "tasks": [i + 1, i + 5]} for i in range(4)]
TASKS = {"count": [1, 2], "split": [3], "sentences": [4], "__acker": [5, 6, 7, 8]}


@pytest.mark.parametrize("conf, want", [
    ({}, {}),
    ({"topology.upgrade.worker.num": 0}, {}),  # JStorm's 0: not set
    ({"topology.upgrade.worker.num": 2}, {"worker_num": 2}),
    ({"topology.upgrade.component": "count", "topology.upgrade.worker.num": 1},
     {"component": "count", "worker_num": 1}),
    ({"topology.upgrade.workers": ["127.0.0.1:4001", 2], "topology.upgrade.component": "count"},
     {"workers": ["127.0.0.1:4001", "2"], "component": "count"}),
    ({"topology.upgrade.workers": "127.0.0.1:4001,127.0.0.1:4002"},
     {"workers": ["127.0.0.1:4001", "127.0.0.1:4002"]}),
])
def test_selector_from_the_configuration(conf, want):
    assert gray.selector_from_conf(conf) == want


@pytest.mark.parametrize("conf, key", [
    ({"topology.upgrade.worker.num": -1}, "topology.upgrade.worker.num"),
    ({"topology.upgrade.worker.num": "2"}, "topology.upgrade.worker.num"),
    ({"topology.upgrade.worker.num": True}, "topology.upgrade.worker.num"),
    ({"topology.upgrade.component": 3}, "topology.upgrade.component"),
    ({"topology.upgrade.workers": {"a": 1}}, "topology.upgrade.workers"),
])
def test_bad_upgrade_keys_name_the_key(conf, key):
    with pytest.raises(InvalidRequest, match=key.replace(".", r"\.")):
        gray.selector_from_conf(conf)


@pytest.mark.parametrize("value", [0, -5, "60", True])
def test_bad_expiry_names_the_key(value):
    with pytest.raises(InvalidRequest, match=r"topology\.upgrade\.expire\.secs"):
        gray.expire_secs({"topology.upgrade.expire.secs": value})


def test_expiry_default():
    assert gray.expire_secs({}) == gray.DEFAULT_EXPIRE_SECS == 1800.0


def test_precedence_listed_workers_then_component_then_random_count():
    conf = {"topology.upgrade.workers": ["127.0.0.1:4003"], "topology.upgrade.component": "count",
            "topology.upgrade.worker.num": 1}
    assert gray.select_workers(WORKERS, TASKS, gray.selector_from_conf(conf), set()) == [3]
    del conf["topology.upgrade.workers"]
    assert gray.select_workers(WORKERS, TASKS, gray.selector_from_conf(conf), set()) == [0]
    del conf["topology.upgrade.component"]
    picked = gray.select_workers(WORKERS, TASKS, gray.selector_from_conf(conf), set(), random.Random(1))
    assert len(picked) == 1


def test_a_count_picks_workers_at_random_among_those_not_upgraded():
    seen = set()
    for seed in range(60):
        picked = gray.select_workers(WORKERS, TASKS, {"worker_num": 2}, {0}, random.Random(seed))
        assert len(picked) == 2 and 0 not in picked and picked == sorted(picked)
        seen.add(tuple(picked))
    assert seen == {(1, 2), (1, 3), (2, 3)}  # every choice happens: random, not the lowest


def test_no_worker_left_names_those_not_yet_upgraded():
    with pytest.raises(InvalidRequest, match=r"not yet upgraded: none"):
        gray.select_workers(WORKERS, TASKS, {"worker_num": 1}, {0, 1, 2, 3})


def idle(up):
    """Seconds since the upgrade's last progress, on the (simulated) clock."""
    return clock.time_ms() / 1000 - up["updated"]


def test_three_batches_keep_each_workers_since():
    with clock.simulation() as sim:
        now = clock.time_ms() / 1000
        up = gray.begin(1, 2, {"worker_num": 1}, 60.0, now)
        assert gray.state_of(up) == gray.IN_PROGRESS
        up = gray.finish_batch(gray.ask_batch(up, [2], {"worker_num": 1}, now), [2], now)
        assert gray.state_of(up) == gray.BATCH_FINISHED
        first = now
        sim.advance(10)
        now = clock.time_ms() / 1000
        up = gray.ask_batch(up, [0], {}, now)
        assert up["selector"] == {"worker_num": 1}  # a continuation without a selector reuses the count
        up = gray.finish_batch(up, [0, 2], now)
        sim.advance(10)
        now = clock.time_ms() / 1000
        up = gray.finish_batch(gray.ask_batch(up, [3], {"workers": ["3"]}, now), [0, 2, 3], now)
        view = gray.describe(up, 4, now)
        assert view["workers"] == [0, 2, 3] and view["old_workers"] == [1]
        assert view["since"] == {2: first, 0: first + 10, 3: first + 20}
        assert [b["workers"] for b in view["batches"]] == [[2], [0], [3]]
        assert up["selector"] == {"worker_num": 1}  # a list of workers is not reused (JStorm clears it)
        assert gray.versions_text(up, 4) == "workers [0, 2, 3] on version 2, [1] on version 1"


def test_an_upgrade_without_progress_expires_and_stops_blocking():
    with clock.simulation() as sim:
        start = clock.time_ms() / 1000
        up = gray.finish_batch(gray.ask_batch(gray.begin(1, 2, {"worker_num": 1}, 30.0, start), [0],
                                              {}, start), [0], start)
        sim.advance(30)
        assert not gray.is_expired(up, idle(up)) and gray.is_open(up)
        assert gray.describe(up, 2, clock.time_ms() / 1000)["expires_at"] == start + 30
        sim.advance(0.5)
        assert gray.is_expired(up, idle(up))
        # a batch is progress: the clock starts again
        now = clock.time_ms() / 1000
        up = gray.finish_batch(gray.ask_batch(up, [1], {}, now), [0, 1], now)
        sim.advance(29)
        assert not gray.is_expired(up, idle(up))
        sim.advance(2)
        assert gray.is_expired(up, idle(up))
        up = gray.expire(up, clock.time_ms() / 1000)
        assert gray.state_of(up) == gray.EXPIRED and not gray.is_open(up)
        assert not gray.is_expired(up, 10_000.0)  # once expired, it is no longer open
        assert "expires_at" not in gray.describe(up, 2, clock.time_ms() / 1000)


def test_ended_upgrades_are_not_open_whatever_the_time():
    up = gray.ended(gray.begin(1, 2, {}, 30.0, 0.0), gray.COMPLETED, 5.0)
    assert gray.state_of(up) == gray.COMPLETED
    assert not gray.is_open(up) and not gray.is_expired(up, 10_000.0)
    assert gray.state_of(None) is None and not gray.is_expired(None, 10_000.0)
