"""The round trace (squall/runtime/round_trace.py): what a round records, the ring, the file."""

from __future__ import annotations

import pytest

from squall.runtime import round_trace
from squall.runtime.round_trace import RoundTrace, load
from tests.unit.test_round import Bolt, Clock, Exchange, Spout, core


def test_a_round_records_when_each_part_ended_and_the_tuples_of_each(tmp_path):
    clock, ex = Clock(), Exchange()
    count = Bolt(clock, 3, "count", cost=0.001)
    spout = Spout(clock, 1, out=ex, cost=0.0005, limit=4)
    r = core(clock, ex, bolts=[count], spouts=[spout])
    r.trace = RoundTrace(str(tmp_path), worker=1, capacity=8)
    ex.arriving.append((count, 3))
    start = clock.now
    r.run(active=True)
    (rec,) = r.trace.records()
    # 3 tuples taken (no time on the fake clock), 3 ms of bolts, then 4 emits and a fifth
    # call that emits nothing, 0.5 ms each
    assert (rec.begun, rec.received_at) == (start, start)
    assert rec.bolts_at == pytest.approx(start + 0.003)
    assert rec.ended == pytest.approx(start + 0.0055)
    assert (rec.received, rec.bolt_work, rec.work, rec.throttled) == (3, 3, 10, False)
    assert rec.cpu_ended >= rec.cpu_begun > 0


def test_the_ring_keeps_the_last_rounds_and_the_file_holds_them_oldest_first(tmp_path):
    trace = RoundTrace(str(tmp_path), worker=0, capacity=3)
    for i in range(5):
        trace.begin(float(i), early_sends=0)
        trace.received(i + 0.1, work=i)
        trace.bolts_done(i + 0.2, work=i)
        trace.end(i + 0.5, work=i, early_sends=i % 2, throttled=i == 4)
    kept = trace.records()
    assert [r.begun for r in kept] == [2.0, 3.0, 4.0]
    assert [r.early_sends for r in kept] == [0, 1, 0] and kept[-1].throttled
    assert load(trace.write()) == kept


def test_the_worker_traces_only_when_the_environment_names_a_directory(tmp_path, monkeypatch):
    monkeypatch.delenv(round_trace.ENV, raising=False)
    assert round_trace.from_environment(0) is None
    monkeypatch.setenv(round_trace.ENV, str(tmp_path / "rounds"))
    trace = round_trace.from_environment(2)
    assert trace is not None and trace.worker == 2 and (tmp_path / "rounds").is_dir()


def test_a_file_cut_short_is_refused(tmp_path):
    path = tmp_path / "rounds-1-0.bin"
    path.write_bytes(b"\0" * 100)
    with pytest.raises(ValueError, match="not a whole number of rounds"):
        load(path)
