"""How a subprocess's reader hands its writes over: gathered, not one hand-over per write."""

from __future__ import annotations

import fcntl
import select
import struct
import termios
import threading

from squall.multilang import process
from squall.multilang.process import EOF_MESSAGE, READ_COALESCE_SECS, ShellProcess
from squall.multilang.serializer import JsonCodec


def test_after_a_short_read_the_reader_waits_and_takes_what_arrived_with_it(monkeypatch):
    # ``cat`` writes back each message as it gets it, so each is a write of its own, as
    # pystorm's flushed messages are. While the reader pauses after the first, two more
    # arrive; they must reach the task in the same hand-over, before the reader reads again.
    events: list = []
    got = threading.Event()
    proc: ShellProcess | None = None

    def on_message(message):
        events.append(message)
        if message is not EOF_MESSAGE and message.get("n") == 3:
            got.set()

    def pause(seconds):
        events.append(("pause", seconds))
        if len([e for e in events if isinstance(e, tuple)]) == 1:
            assert proc is not None
            proc.send({"n": 2})
            proc.send({"n": 3})
            stdout = proc._proc.stdout
            poller = select.poll()
            poller.register(stdout.fileno(), select.POLLIN)
            written = len(JsonCodec().encode({"n": 2})) * 2
            # both echoed (a pipe holds them whole: far below PIPE_BUF each)
            while poller.poll(5000) and _waiting_bytes(proc) < written:
                pass

    monkeypatch.setattr(process, "_pause", pause)
    proc = ShellProcess(["cat"], cwd=None, env=None, codec=JsonCodec(), on_message=on_message,
                        name="cat[1]")
    try:
        proc.send({"n": 1})
        assert got.wait(10), events
        assert events[0] == ("pause", READ_COALESCE_SECS)
        assert events[1:4] == [{"n": 1}, {"n": 2}, {"n": 3}]  # all three before the next pause
    finally:
        proc.kill()


def _waiting_bytes(proc: ShellProcess) -> int:
    """How many bytes wait in the subprocess's stdout pipe (FIONREAD), none of them read."""
    buf = fcntl.ioctl(proc._proc.stdout.fileno(), termios.FIONREAD, b"\0\0\0\0")
    return int(struct.unpack("i", buf)[0])
