"""One multilang subprocess: launched, read and written on threads of its own.

The task that owns a ``ShellProcess`` never blocks on it: a reader thread decodes what the
subprocess writes and hands each message to ``on_message`` (the task queues it and drains
the queue on its own thread), a writer thread writes what the task sends, and a third
thread keeps the last lines of the subprocess's stderr for error reports.

The reader does not hand over each write of the subprocess as it comes: multilang
libraries flush every message (pystorm writes each emit and ack on its own), and every
hand-over makes the task's worker run a round. After a read that did not fill its buffer
the reader waits ``READ_COALESCE_SECS`` and takes what arrived meanwhile with it. On a
Spark worker, whose rounds each cost ZeroMQ polls and a frame to every peer, one round per
write doubles the worker's CPU per sentence and starves the subprocesses of the cores
(docs/multilang.md, "Performance over Spark").
"""

from __future__ import annotations

import logging
import os
import queue
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from squall.multilang.serializer import Codec

log = logging.getLogger("squall.multilang")
STDERR_TAIL_LINES = 40
READ_BYTES = 65536
READ_COALESCE_SECS = 0.001  # how long the reader lets a subprocess's writes gather
EOF_MESSAGE = object()  # handed to on_message once stdout closes
_STOP = object()


class ShellProcess:
    """A launched subprocess and the threads that talk to it."""

    def __init__(self, command: Sequence[str], *, cwd: str | None, env: dict[str, str] | None,
                 codec: Codec, on_message: Callable[[Any], None], name: str) -> None:
        self.command = list(command)
        self.name = name
        self._codec = codec
        self._on_message = on_message
        self._stderr: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._writes: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.pid_dir = tempfile.mkdtemp(prefix="squall-multilang-pids-")
        full_env = {**os.environ, **(env or {})}
        try:
            self._proc = subprocess.Popen(
                self.command, cwd=cwd, env=full_env, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
            )
        except OSError as e:
            shutil.rmtree(self.pid_dir, ignore_errors=True)
            raise OSError(f"{name}: cannot run {self.command} (in {cwd or os.getcwd()}): {e}") from e
        self.os_pid = self._proc.pid
        self.protocol_pid: int | None = None  # what the subprocess sent in the handshake
        self._threads = [
            threading.Thread(target=self._read, name=f"{name}-reader", daemon=True),
            threading.Thread(target=self._write, name=f"{name}-writer", daemon=True),
            threading.Thread(target=self._read_stderr, name=f"{name}-stderr", daemon=True),
        ]
        for t in self._threads:
            t.start()

    # ---- any thread ------------------------------------------------------------------

    def send(self, message: Any) -> None:
        """Queue ``message`` for the subprocess's stdin (encoded now: errors are the caller's)."""
        self._writes.put(self._codec.encode(message))

    def alive(self) -> bool:
        """True while the process runs."""
        return self._proc.poll() is None

    def exit_info(self) -> str:
        """How it ended: ``exit code N``, ``killed by SIGKILL``, or ``still running``."""
        code = self._proc.poll()
        if code is None:
            return "still running"
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit code {code}"

    def wait_exit(self, timeout: float) -> None:
        """Give a process whose stdout closed ``timeout`` seconds to exit (for its exit code)."""
        try:
            self._proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass

    def stderr_tail(self) -> str:
        """The last lines the subprocess wrote to stderr."""
        return "\n".join(self._stderr)

    def kill(self) -> None:
        """Kill the process (and its process group) and stop the threads."""
        try:
            os.killpg(self._proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            log.warning("%s: pid %d did not die after SIGKILL", self.name, self._proc.pid)
        self._writes.put(_STOP)
        self._threads[2].join(timeout=1.0)  # the stderr tail is complete once the pipe closed
        shutil.rmtree(self.pid_dir, ignore_errors=True)

    # ---- its threads -----------------------------------------------------------------

    def _read(self) -> None:
        stdout = self._proc.stdout
        assert stdout is not None
        fd = stdout.fileno()
        ready = select.poll()
        ready.register(fd, select.POLLIN)
        try:
            while True:
                data = os.read(fd, READ_BYTES)
                if not data:
                    break
                if len(data) < READ_BYTES:
                    _pause(READ_COALESCE_SECS)
                    data += _take_ready(fd, ready)
                for message in self._codec.feed(data):
                    self._on_message(message)
        except (OSError, ValueError) as e:
            self._on_message(e)
        finally:
            self._on_message(EOF_MESSAGE)

    def _write(self) -> None:
        stdin = self._proc.stdin
        assert stdin is not None
        while True:
            data = self._writes.get()
            if data is _STOP:
                break
            try:
                stdin.write(data)
                if self._writes.empty():
                    stdin.flush()
            except (OSError, ValueError):
                break  # it died: the reader sees EOF and the task restarts it
        try:
            stdin.close()
        except OSError:
            pass

    def _read_stderr(self) -> None:
        stderr = self._proc.stderr
        assert stderr is not None
        for raw in stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self._stderr.append(line)
            log.info("%s stderr: %s", self.name, line)


def _pause(seconds: float) -> None:
    """The reader's wait for more writes (a function of its own so tests can watch it)."""
    time.sleep(seconds)


def _take_ready(fd: int, ready: select.poll) -> bytes:
    """What can be read from ``fd`` now, without waiting (EOF is left for the next read)."""
    out = b""
    while ready.poll(0):
        chunk = os.read(fd, READ_BYTES)
        out += chunk
        if len(chunk) < READ_BYTES:
            break
    return out
