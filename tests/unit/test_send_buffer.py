"""The send buffer's pressure word between workers (``transfer.Transfer``), driven by hand."""

from __future__ import annotations

from squall import Config, Fields, TopologyBuilder
from squall.runtime.plan import make_plan
from squall.runtime.serialization import messages_of
from squall.runtime.submission import prepare_conf, prepare_topology
from squall.runtime.transfer import PRESSURE_STREAM, PRESSURE_TARGET, send_bound
from squall.runtime.transport import InProcessHub, InProcessTransport
from squall.runtime.worker import Worker
from tests.integration.components import CountBolt, ListSpout


class RelaunchingTransport(InProcessTransport):
    """An in-process end that, as ``ZmqTransport``, says when a peer's process changed."""

    on_peer_reset = None


def three_workers():
    b = TopologyBuilder()
    b.set_spout("spout", ListSpout([]), 1)
    b.set_bolt("count", CountBolt(), 1).fields_grouping("spout", Fields("value"))
    conf = Config()
    conf.set_num_workers(3)
    merged = prepare_conf(conf, b.create_topology())
    topology = prepare_topology(b.create_topology())
    plan = make_plan(topology, merged)
    hub = InProcessHub(3, 2)
    workers = [Worker(topology_name="t", topology=topology, conf=merged, plan=plan, index=i,
                      transport=RelaunchingTransport(hub, i)) for i in range(3)]
    for w in workers:
        w.build()
    return workers, hub


def test_the_bound_is_the_send_buffer_in_frames_and_at_least_four():
    assert send_bound({}) == 32768 // 512
    assert send_bound({"topology.executor.send.buffer.size": 40,
                       "squall.transfer.batch.size": 10}) == 4
    assert send_bound({"topology.executor.send.buffer.size": 10,
                       "squall.transfer.batch.size": 10}) == 4


def test_a_held_peer_stops_the_spouts_until_it_says_off_or_a_new_process_replaces_it():
    (w0, w1, _w2), hub = three_workers()
    w1.send_bound = 1
    hub.queues[2].extend([b"full", b"full"])  # worker 2 takes nothing
    w1._unsent[2].append(b"a frame for worker 2")
    assert w1.send() and w1.held  # at its bound for worker 2: it says so to worker 0
    assert len(w1._unsent[2]) == 1  # not to worker 2, which it waits on
    hub.queues[2].clear()  # worker 2 took its frames
    assert not w1.send() and not w1.held  # nothing waits: "off" follows "on"
    on, off = (messages_of(f)[0] for f in hub.queues[0])
    assert on[:4] == [PRESSURE_TARGET, 1, PRESSURE_STREAM, [[1]]]
    assert off[:4] == [PRESSURE_TARGET, 1, PRESSURE_STREAM, [[0]]]
    w0._take_batch(on, w0.tasks, w0._sources)
    assert w0.pressured() == [1]
    assert w0.send()  # the spouts of worker 0 wait
    w0._take_batch(off, w0.tasks, w0._sources)
    assert w0.pressured() == [] and not w0.send()
    w0._take_batch(on, w0.tasks, w0._sources)
    w0.transport.on_peer_reset(1)  # worker 1's process was replaced: its "on" is void
    assert w0.pressured() == []
    w0._take_batch(on, w0.tasks, w0._sources)
    w0.lost_frames("a frame sent to worker 0 was lost")  # perhaps an "off": never wait for it
    assert w0.pressured() == []
    assert w0.misrouted == 0


def test_waiting_retries_the_frames_that_wait_and_leaves_the_rounds_batches_open():
    # the round asks ``waiting`` instead of sending when its spouts run next: the bolts'
    # output then shares the spouts' frames (one frame a peer a round)
    (w0, w1, _w2), hub = three_workers()
    spout = w1.tasks[2]
    hub.queues[2].extend([b"full", b"full"])  # worker 2 takes nothing
    w1._unsent[2].append(b"waits for worker 2")
    w1.deliver(1, spout, "default", ["x"], None)  # batched for the counter, on worker 0
    assert w1.waiting()  # worker 2 is still full
    assert list(w1._unsent[2]) == [b"waits for worker 2"] and not hub.queues[0]
    hub.queues[2].clear()
    assert not w1.waiting()
    assert list(hub.queues[2]) == [b"waits for worker 2"] and not hub.queues[0]
    assert not w1.send()  # the round's send takes the batch
    [frame] = hub.queues[0]
    assert [m[:4] for m in messages_of(frame)] == [[1, 2, "default", [["x"]]]]
    w0._take_batch([PRESSURE_TARGET, 1, PRESSURE_STREAM, [[1]], None, None], w0.tasks, w0._sources)
    assert w0.waiting()  # a peer said it is held: the spouts wait
