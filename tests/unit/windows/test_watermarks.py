"""Storm's WaterMarkEventGeneratorTest, ported."""

from __future__ import annotations

from squall.windows.watermarks import WaterMarkEventGenerator


class Sink:
    def __init__(self) -> None:
        self.events: list = []

    def add_event(self, event) -> None:
        self.events.append(event)


def generator(streams=(("s1", "default"),)):
    sink = Sink()
    return sink, WaterMarkEventGenerator(sink, 5, streams)


S1, S2 = ("s1", "default"), ("s2", "default")


def test_track_single_stream():
    sink, gen = generator()
    gen.track(S1, 100)
    gen.track(S1, 110)
    gen.run()
    assert sink.events[0].is_watermark and sink.events[0].timestamp == 105


def test_track_single_stream_out_of_order():
    sink, gen = generator()
    for ts in (100, 110, 104):
        gen.track(S1, ts)
    gen.run()
    assert sink.events[0].timestamp == 105


def test_track_two_streams():
    sink, gen = generator((S1, S2))
    gen.track(S1, 100)
    gen.track(S1, 110)
    gen.run()
    assert sink.events == []  # nothing until every stream delivered
    gen.track(S2, 95)
    gen.track(S2, 98)
    gen.run()
    assert sink.events[0].timestamp == 93


def test_no_events():
    sink, gen = generator()
    gen.run()
    assert sink.events == []


def test_late_event():
    sink, gen = generator()
    assert gen.track(S1, 100)
    assert gen.track(S1, 110)
    gen.run()
    assert sink.events[0].timestamp == 105
    sink.events.clear()
    assert gen.track(S1, 105)
    assert gen.track(S1, 106)
    assert gen.track(S1, 115)
    assert not gen.track(S1, 104)
    gen.run()
    assert sink.events[0].timestamp == 110
