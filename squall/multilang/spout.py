"""``ShellSpout``: a spout whose ``next_tuple`` runs in a subprocess (Storm's multilang spout)."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from squall.api.components import Spout
from squall.api.context import TopologyContext
from squall.multilang.errors import MultilangError
from squall.multilang.shell import ShellComponent


def _key(msg_id: Any) -> Any:
    return tuple(msg_id) if isinstance(msg_id, list) else msg_id


class ShellSpout(ShellComponent, Spout):
    """A spout run by ``command`` over multilang; arguments as ``ShellBolt``'s.

    The protocol is synchronous: one command (``next``, ``ack``, ``fail``, ``activate``,
    ``deactivate``) at a time, each answered by emits and logs closed by ``sync``. Unlike
    Storm's, ``next_tuple`` does not wait for the ``sync``: it sends ``next`` when the
    subprocess owes nothing, and the tuples it emits are taken as they arrive, so the
    worker is never blocked by a slow subprocess. A subprocess that owes a ``sync`` for
    longer than ``topology.subprocess.timeout.secs`` is killed and restarted; acks and
    fails of tuples emitted by a subprocess that died are not passed to its successor.
    """

    def __init__(self, command: str | Sequence[str], resources: str | None = None,
                 outputs: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
                 ) -> None:
        ShellComponent.__init__(self, command, resources=resources, outputs=outputs, env=env)

    def open(self, conf: dict, context: TopologyContext, collector: Any) -> None:
        """Launch the subprocess and complete the handshake."""
        self._collector = collector
        self._commands: deque[dict] = deque()
        self._waiting: dict | None = None  # the command whose sync is owed
        self._live: set[Any] = set()  # msg ids emitted by the current subprocess
        self._active = False
        self._asked: tuple[float, int, float] | None = None
        self._start_shell(conf, context, collector)

    def close(self) -> None:
        """Kill the subprocess."""
        self._stop_shell()

    def activate(self) -> None:
        """Tell the subprocess (``activate`` command)."""
        self._active = True
        self._command({"command": "activate"})

    def deactivate(self) -> None:
        """Tell the subprocess (``deactivate`` command)."""
        self._active = False
        self._command({"command": "deactivate"})

    def next_tuple(self) -> None:
        """Take what the subprocess emitted; ask for more if it owes nothing."""
        self._drain()
        self._pump(want_next=True)

    def ack(self, msg_id: Any) -> None:
        """Pass the ack on (unless the tuple came from a subprocess that died since)."""
        if self._forget(msg_id):
            self._command({"command": "ack", "id": msg_id})

    def fail(self, msg_id: Any) -> None:
        """Pass the fail on (unless the tuple came from a subprocess that died since)."""
        if self._forget(msg_id):
            self._command({"command": "fail", "id": msg_id})

    def _forget(self, msg_id: Any) -> bool:
        try:
            key = _key(msg_id)
            if key in self._live:
                self._live.discard(key)
                return True
        except TypeError:
            return True  # an id we cannot remember is passed on
        return False

    def _command(self, command: dict) -> None:
        self._commands.append(command)
        self._drain()
        self._pump(want_next=False)

    def _pump(self, want_next: bool) -> None:
        if self._state != "running" or self._waiting is not None:
            return
        if self._commands:
            command = self._commands.popleft()
        elif want_next:
            command = {"command": "next"}
        else:
            return
        assert self._proc is not None
        self._proc.send(command)
        self._waiting = command
        self._asked = self._mark()  # the timeout counts from the question

    def _on_running(self) -> None:
        self._pump(want_next=False)

    def _on_died(self) -> None:
        self._waiting = None
        self._live.clear()
        self._commands.clear()
        if self._active:
            self._commands.append({"command": "activate"})

    def _check_heartbeat(self, now: float) -> None:
        if self._waiting is None:
            return
        silent = self._silent_since(self._asked, now)
        if silent > self._timeout:
            self._die(f"owes a sync for {self._waiting['command']!r} and sent nothing for "
                      f"{silent:g} s (topology.subprocess.timeout.secs={self._timeout:g})")

    def _handle(self, message: Any) -> None:
        if not isinstance(message, dict) or not isinstance(message.get("command"), str):
            raise MultilangError(f"expected a command, got {message!r:.200}")
        command = message["command"]
        if self._waiting is not None:  # any message shows it is alive (Storm's setHeartbeat)
            self._asked = self._mark()
        if command == "sync":
            self._waiting = None
            self._pump(want_next=False)
        elif command == "emit":
            self._emit(message)
        elif not self._handle_common(command, message):
            raise MultilangError(f"unknown command {command!r}")

    def _emit(self, message: dict) -> None:
        values = message.get("tuple")
        stream = message.get("stream") or "default"
        msg_id = message.get("id")
        task = message.get("task")
        if msg_id is not None:
            try:
                self._live.add(_key(msg_id))
            except TypeError:
                pass
        if task:
            self._collector.emit_direct(int(task), values, stream=stream, msg_id=msg_id)
            return
        targets = self._collector.emit(values, stream=stream, msg_id=msg_id)
        if message.get("need_task_ids", True):
            assert self._proc is not None
            self._proc.send(targets)
