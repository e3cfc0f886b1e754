"""RedisStreamSpout as a seekable spout (exactly-once) against a real redis-server: position
(the last entry id emitted), seek back, seek after a restart, no claims in exactly-once mode,
and a seek past entries trimmed from the stream."""

import pytest

from squall import SeekableSpout
from squall.connectors.redis import RedisStreamSpout, SourceTrimmedError, entry_key
from squall.runtime import clock
from tests.connectors.seeking import opened, pump, quiet, seek_back

EXACTLY_ONCE = {"topology.guarantee": "exactly_once"}


@pytest.fixture
def sim():
    with clock.simulation() as c:
        yield c


def fill(client, n, start=0):
    return [client.xadd("in", {"n": str(i)}) for i in range(start, start + n)]


def spout(server, **kwargs):
    return RedisStreamSpout("in", "g", ("n",), port=server.port, batch=4, **kwargs)


def numbers(records):
    return [int(v[0]) for v, _ in records]


def test_the_position_is_the_id_of_the_last_entry_emitted(redis_server, redis_client, sim):
    ids = fill(redis_client, 10)
    s = spout(redis_server)
    out = opened(s, EXACTLY_ONCE)
    assert isinstance(s, SeekableSpout)
    assert s.position() == "0-0"
    assert pump(s, out, 3, sim)
    assert s.position() == ids[2]  # 4 were read (batch), 3 emitted


@pytest.mark.parametrize("first", [0, 1, 3, 4, 5, 20])
def test_after_a_seek_exactly_the_entries_after_the_position_come_again_in_order(
        redis_server, redis_client, sim, first):
    ids = fill(redis_client, 20)
    s = spout(redis_server)
    out = opened(s, EXACTLY_ONCE)
    position, after = seek_back(s, out, sim, first, 20)
    assert position == (ids[first - 1] if first else "0-0")
    start = len(out.emitted)
    assert pump(s, out, 20 + len(after), sim)
    again = out.records(start)
    assert again == after
    assert [m for _, m in again] == ids[first:]  # not one entry early or late
    assert quiet(s, out, sim) == []
    fill(redis_client, 2, start=20)  # then new entries, as before the seek
    assert pump(s, out, 20 + len(after) + 2, sim)
    assert numbers(out.records(start + len(after))) == [20, 21]
    assert out.letters() == []


def test_seek_acks_the_pending_entries_up_to_the_position(redis_server, redis_client, sim):
    fill(redis_client, 10)
    s = spout(redis_server)
    out = opened(s, EXACTLY_ONCE)
    assert pump(s, out, 6, sim)
    position = s.position()
    assert pump(s, out, 10, sim)
    s.seek(position)
    # entries 0-5 are under a committed checkpoint: acked at the seek, 6-9 stay pending
    assert redis_client.xpending("in", "g")["pending"] == 4
    start = len(out.emitted)
    assert pump(s, out, 14, sim)
    for _, m in out.records(start):
        s.ack(m)
    assert pump(s, out, 14, sim) and quiet(s, out, sim, calls=5) == []
    assert redis_client.xpending("in", "g")["pending"] == 0


def test_seek_after_a_restart_reads_from_the_old_instances_position(redis_server, redis_client, sim):
    ids = fill(redis_client, 12)
    old = spout(redis_server)
    out = opened(old, EXACTLY_ONCE)
    assert pump(old, out, 9, sim)
    for _, m in out.records()[:3]:
        old.ack(m)
    position = old.position()
    # the old task dies without closing; a new instance of the same task opens and seeks
    new = spout(redis_server)
    out2 = opened(new, EXACTLY_ONCE)
    new.seek(position)
    assert pump(new, out2, 3, sim)
    assert [m for _, m in out2.records()] == ids[9:]
    assert quiet(new, out2, sim) == []
    assert redis_client.xpending("in", "g")["pending"] == 3


def test_in_exactly_once_mode_no_other_consumers_entries_are_claimed(redis_server, redis_client, sim):
    fill(redis_client, 4)
    redis_client.xgroup_create("in", "g", id="0")
    redis_client.xreadgroup("g", "gone", {"in": ">"}, count=2)  # pending in a consumer gone
    s = spout(redis_server, claim_idle_secs=0, claim_interval_secs=0)
    out = opened(s, EXACTLY_ONCE)
    assert pump(s, out, 2, sim)
    assert quiet(s, out, sim) == []
    assert numbers(out.records()) == [2, 3]
    at_least_once = spout(redis_server, claim_idle_secs=0, claim_interval_secs=0, consumer="other")
    out2 = opened(at_least_once)
    assert pump(at_least_once, out2, 2, sim)  # the default mode takes them over
    assert numbers(out2.records()) == [0, 1]


def test_seek_past_entries_trimmed_from_the_stream_is_refused_in_one_line(redis_server, redis_client, sim):
    ids = fill(redis_client, 10)
    s = spout(redis_server)
    out = opened(s, EXACTLY_ONCE)
    assert pump(s, out, 3, sim)
    position = s.position()
    assert pump(s, out, 10, sim)
    redis_client.xtrim("in", maxlen=2, approximate=False)  # entries 0-7 gone, 3-7 still pending here
    with pytest.raises(SourceTrimmedError) as e:
        s.seek(position)
    message = str(e.value)
    assert "\n" not in message
    assert message == (f"RedisStreamSpout 'src-0': cannot seek to {ids[2]}: entry {ids[3]} after "
                       f"it was trimmed from stream 'in'")


def test_a_position_that_is_not_an_entry_id_is_refused(redis_server, redis_client, sim):
    s = spout(redis_server)
    opened(s, EXACTLY_ONCE)
    with pytest.raises(ValueError, match=r"RedisStreamSpout 'src-0': cannot seek to \[1, 2\]"):
        s.seek([1, 2])


def test_entry_ids_order_as_redis_orders_them():
    assert entry_key("10-2") < entry_key("10-10") < entry_key("11-0") == entry_key(b"11-0")


def test_an_entry_deleted_after_the_position_is_refused_at_every_read_and_the_later_ones_stay_pending(
        redis_server, redis_client, sim):
    # pending e1..e5 after the position; e2 deleted (XDEL): the refusal must repeat, and
    # e3..e5 must neither be skipped nor acked (the next seek past them would lose them)
    ids = fill(redis_client, 6)
    s = spout(redis_server)
    out = opened(s, EXACTLY_ONCE)
    assert pump(s, out, 1, sim)
    position = s.position()
    assert pump(s, out, 6, sim)
    redis_client.xdel("in", ids[2])
    s.seek(position)
    start = len(out.emitted)
    refusals = []
    for _ in range(20):
        try:
            s.next_tuple()
        except SourceTrimmedError as e:
            refusals.append(str(e))
        sim.advance(0.05)
    assert [m for _, m in out.records(start)] == [ids[1]]
    assert len(refusals) >= 10 and set(refusals) == {
        f"RedisStreamSpout 'src-0': cannot seek to {ids[0]}: entry {ids[2]} after it was trimmed "
        f"from stream 'in'"}
    pending = {e["message_id"] for e in redis_client.xpending_range("in", "g", min="-", max="+", count=10)}
    assert {ids[3], ids[4], ids[5]} <= pending


def test_committed_acks_the_pending_entries_up_to_the_position(redis_server, redis_client, sim):
    # issue 41 item 3c: entries emitted by a task that died before its COMMIT stay pending
    fill(redis_client, 10)
    old = spout(redis_server)
    out = opened(old, EXACTLY_ONCE)
    assert pump(old, out, 6, sim)
    position = old.position()
    new = spout(redis_server)
    opened(new, EXACTLY_ONCE)
    new.committed(position)
    # 8 were read (batches of 4): the 6 emitted up to the position are acked, 2 stay pending
    assert redis_client.xpending("in", "g")["pending"] == 2
