"""ReliableSpout on a LocalCluster: replays, backoff on the runtime's clock, dead letters."""

import time

import pytest

import squall
from squall import Config, LocalCluster, TopologyBuilder
from squall.api.components import OutputFieldsDeclarer
from squall.connectors.reliable import DEAD_LETTER_FIELDS, DEAD_LETTER_STREAM
from squall.testing import simulated_time
from tests.connectors.components import (
    RECORD,
    DeadLetterSink,
    DefaultLimitSpout,
    NumberSpout,
    Poison,
)


def wait_for(predicate, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def topology(spout, bolt, sink=None, spout_tasks=2):
    b = TopologyBuilder()
    b.set_spout("source", spout, spout_tasks)
    b.set_bolt("work", bolt, 2).shuffle_grouping("source")
    if sink is not None:
        b.set_bolt("letters", sink).shuffle_grouping("source", stream=DEAD_LETTER_STREAM)
    return b.create_topology()


def conf(**extra):
    c = Config()
    c.set_num_workers(2)
    c.update(extra)
    return c


def test_reliable_spout_is_exported_and_declares_the_dead_letter_stream():
    assert squall.ReliableSpout is NumberSpout.__mro__[1]
    d = OutputFieldsDeclarer()
    NumberSpout(1).declare_output_fields(d)
    assert d.streams[DEAD_LETTER_STREAM].fields == DEAD_LETTER_FIELDS
    assert list(DEAD_LETTER_FIELDS) == ["msg_id", "values", "reason", "error", "component", "task",
                                        "attempts"]
    assert list(d.streams["default"].fields) == ["n"]


def test_a_raising_bolt_sends_the_message_to_dead_letter_with_its_traceback_after_max_retries():
    # E1 with a dead letter: 13 always raises; 2 replays, then __dead_letter; the rest flows
    with LocalCluster() as cluster:
        cluster.submit_topology("t", conf(), topology(NumberSpout(40, max_retries=2), Poison(13),
                                                      DeadLetterSink()))
        assert wait_for(lambda: len(RECORD["source.done"]) >= 40)
        time.sleep(0.2)  # nothing more may come: the poison message is not replayed again
        info = cluster.get_topology_info("t")
    assert sorted(RECORD["source.done"]) == list(range(40))  # each committed exactly once
    assert sorted(RECORD["source.read"]) == list(range(40))  # replays are not re-reads
    assert RECORD["poison.seen"] == [13, 13, 13]
    [letter] = RECORD["letters"]
    assert letter["msg_id"] == 13 and letter["values"] == [13]
    assert letter["reason"] == "error" and letter["attempts"] == 3
    assert letter["error"].startswith("Traceback") and "ValueError: cannot handle 13" in letter["error"]
    assert letter["component"] == "work"
    assert letter["task"] in info["components"]["work"]["tasks"]
    assert any("message 13 failed 3 times (max_retries=2, last reason: error): sent to __dead_letter"
               in e["message"] for e in info["errors"])


def test_an_explicit_fail_is_reason_failed_and_the_topology_key_is_the_default_limit():
    with LocalCluster() as cluster:
        cluster.submit_topology("t", conf(**{"squall.spout.max.retries": 1}),
                                topology(DefaultLimitSpout(10), Poison(4, "fail"), DeadLetterSink()))
        assert wait_for(lambda: len(RECORD["source.done"]) >= 10)
    assert RECORD["poison.seen"] == [4, 4]
    [letter] = RECORD["letters"]
    assert (letter["reason"], letter["error"], letter["attempts"]) == ("failed", None, 2)
    assert letter["component"] == "work"


def test_a_timed_out_message_is_reason_timeout_with_no_component():
    c = conf(**{"topology.message.timeout.secs": 1})
    with LocalCluster() as cluster:
        cluster.submit_topology("t", c, topology(NumberSpout(4, max_retries=0), Poison(2, "hold"),
                                                 DeadLetterSink(), spout_tasks=1))
        assert wait_for(lambda: len(RECORD["source.done"]) >= 4)
    [letter] = RECORD["letters"]
    assert (letter["msg_id"], letter["reason"], letter["component"], letter["task"],
            letter["attempts"]) == (2, "timeout", None, None, 1)


def test_without_a_dead_letter_subscriber_a_given_up_message_is_still_committed():
    with LocalCluster() as cluster:
        cluster.submit_topology("t", conf(), topology(NumberSpout(10, max_retries=1), Poison(3)))
        assert wait_for(lambda: len(RECORD["source.done"]) >= 10)
    assert sorted(RECORD["source.done"]) == list(range(10))
    assert RECORD["poison.seen"] == [3, 3]


def test_a_failed_dead_letter_is_emitted_again_and_commits_only_once_acked():
    with LocalCluster() as cluster:
        cluster.submit_topology("t", conf(), topology(NumberSpout(6, max_retries=0), Poison(5),
                                                      DeadLetterSink(fail_first=2), spout_tasks=1))
        assert wait_for(lambda: len(RECORD["source.done"]) >= 6)
        time.sleep(0.1)
    assert RECORD["letters.failed"] == [5, 5]
    assert [x["msg_id"] for x in RECORD["letters"]] == [5]
    assert sorted(RECORD["source.done"]) == list(range(6))


def test_no_limit_anywhere_replays_forever():
    with LocalCluster() as cluster:
        cluster.submit_topology("t", conf(), topology(DefaultLimitSpout(3), Poison(1, "fail"),
                                                      DeadLetterSink(), spout_tasks=1))
        assert wait_for(lambda: len(RECORD["poison.seen"]) >= 50)
    assert RECORD["letters"] == [] and 1 not in RECORD["source.done"]


def test_replays_wait_for_their_backoff_on_simulated_time():
    # backoff 10 s doubling, capped at 15: nothing is replayed until the clock gets there
    with simulated_time(), LocalCluster() as cluster:
        spout = NumberSpout(3, max_retries=2, retry_backoff_secs=10.0, retry_backoff_max_secs=15.0)
        cluster.submit_topology("t", conf(), topology(spout, Poison(1, "fail"), DeadLetterSink(),
                                                      spout_tasks=1))
        assert cluster.wait_quiet(trees=True)
        assert RECORD["poison.seen"] == [1] and sorted(RECORD["source.done"]) == [0, 2]
        cluster.advance_time(9, increment=3)
        assert RECORD["poison.seen"] == [1]
        cluster.advance_time(1)
        assert RECORD["poison.seen"] == [1, 1]  # the first replay after 10 s
        cluster.advance_time(14)
        assert RECORD["poison.seen"] == [1, 1]  # the second wait: 20 s, capped at 15
        cluster.advance_time(1)
        assert RECORD["poison.seen"] == [1, 1, 1]
        assert [x["attempts"] for x in RECORD["letters"]] == [3]
    assert sorted(RECORD["source.done"]) == [0, 1, 2]


def test_a_timeout_on_simulated_time_dead_letters_with_reason_timeout():
    c = conf(**{"topology.message.timeout.secs": 30})
    with simulated_time(), LocalCluster() as cluster:
        cluster.submit_topology("t", c, topology(NumberSpout(3, max_retries=0), Poison(1, "hold"),
                                                 DeadLetterSink(), spout_tasks=1))
        assert cluster.wait_quiet()
        cluster.advance_time(29)
        assert RECORD["letters"] == []  # not yet timed out
        cluster.advance_time(17)  # expiry comes within [T, 1.5 T] with 3 buckets (A7)
        assert [(x["msg_id"], x["reason"]) for x in RECORD["letters"]] == [(1, "timeout")]
    assert sorted(RECORD["source.done"]) == [0, 1, 2]


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True])
def test_a_bad_max_retries_is_a_clear_error_naming_the_spout(bad):
    spout = NumberSpout(1, max_retries=bad)
    with pytest.raises(ValueError, match=r"NumberSpout: max_retries must be a non-negative integer"):
        spout.open({}, _Context(), None)


def test_a_bad_topology_limit_names_the_key():
    with pytest.raises(ValueError, match=r"squall.spout.max.retries must be a non-negative integer.*'x'"):
        DefaultLimitSpout(1).open({"squall.spout.max.retries": "x"}, _Context(), None)


class _Context:
    component_id = "source"

    def get_this_task_index(self):
        return 0

    def get_this_component_tasks(self):
        return [1]
