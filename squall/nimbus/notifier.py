"""The topology action notifier: tells the operator's own systems what Nimbus did.

Storm's and JStorm's ``nimbus.topology.action.notifier.plugin.class``: an import path of a
class built with no arguments, with Storm's ``ITopologyActionNotifierPlugin`` methods::

    class Notifier:
        def prepare(self, conf): ...                       # Nimbus's settings, once
        def notify(self, topology_name, action, who=None): ...   # who: optional third argument
        def cleanup(self): ...                             # when Nimbus stops

Actions, named as JStorm names them: ``submitTopology``, ``killTopology``, ``activate``,
``deactivate``, ``rebalance``, ``upgrade`` (a hot deploy), ``grayUpgrade`` (each batch),
``completeUpgrade``, ``rollback``. ``who`` is the requester as Nimbus saw them
(``user@address``; the user is what the client says). A plugin that cannot be loaded is an
error when Nimbus starts; a plugin that raises or hangs is logged and never holds Nimbus
up: calls run one at a time on a thread of its own, from a bounded queue (when it is full,
the notification is dropped and logged).
"""

from __future__ import annotations

import importlib
import inspect
import logging
import queue
import threading
from typing import Any

log = logging.getLogger("squall.nimbus.notifier")
KEY = "nimbus.topology.action.notifier.plugin.class"
QUEUE_SIZE = 1000


class NotifierError(ValueError):
    """The plugin class cannot be loaded or prepared; the message names the key and path."""


def load_plugin(path: str) -> Any:
    """An instance of the class at ``path``; ``NotifierError`` naming the key otherwise."""
    module_name, _, class_name = path.rpartition(".")
    if not module_name:
        raise NotifierError(f"{KEY} = {path!r} is not an import path (package.module.ClassName)")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
        plugin = cls()
    except Exception as e:  # noqa: BLE001 - the operator's code can raise anything
        raise NotifierError(f"{KEY} = {path!r} cannot be loaded: {type(e).__name__}: {e}") from None
    if not callable(getattr(plugin, "notify", None)):
        raise NotifierError(f"{KEY} = {path!r} has no notify(topology_name, action) method")
    return plugin


def takes_who(plugin: Any) -> bool:
    """Whether the plugin's ``notify`` accepts a third argument."""
    try:
        params = list(inspect.signature(plugin.notify).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 3 or any(p.kind == p.VAR_POSITIONAL for p in params)


class ActionNotifier:
    """Delivers notifications to one plugin on a thread of its own (see the module docstring)."""

    def __init__(self, plugin: Any, conf: dict[str, Any]) -> None:
        self.plugin = plugin
        self._who = takes_who(plugin)
        prepare = getattr(plugin, "prepare", None)
        if callable(prepare):
            try:
                prepare(conf)
            except Exception as e:  # noqa: BLE001 - the operator's code can raise anything
                raise NotifierError(f"{KEY}: {type(plugin).__name__}.prepare failed: "
                                    f"{type(e).__name__}: {e}") from None
        self._queue: queue.Queue[tuple[str, str, str | None] | None] = queue.Queue(QUEUE_SIZE)
        self._thread = threading.Thread(target=self._run, name="squall-nimbus-notifier", daemon=True)
        self._thread.start()

    def notify(self, name: str, action: str, who: str | None) -> None:
        """Queue one notification; never blocks."""
        try:
            self._queue.put_nowait((name, action, who))
        except queue.Full:
            log.warning("notifier: queue full, dropped %s of topology %r", action, name)

    def close(self, timeout: float = 5.0) -> None:
        """Deliver what is queued (up to ``timeout``), then call the plugin's ``cleanup``."""
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            pass
        self._thread.join(timeout)
        cleanup = getattr(self.plugin, "cleanup", None)
        if callable(cleanup):
            try:
                cleanup()
            except Exception:  # noqa: BLE001 - logged, never fatal
                log.exception("notifier: %s.cleanup failed", type(self.plugin).__name__)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            name, action, who = item
            try:
                if self._who:
                    self.plugin.notify(name, action, who)
                else:
                    self.plugin.notify(name, action)
            except Exception:  # noqa: BLE001 - the operator's code must not harm Nimbus
                log.exception("notifier: %s.notify(%r, %r) failed", type(self.plugin).__name__, name, action)
