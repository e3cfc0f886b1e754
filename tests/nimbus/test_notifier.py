"""The topology action notifier: Storm's plugin interface, never blocking Nimbus."""

from __future__ import annotations

import threading
import time

import pytest

from squall.nimbus.notifier import ActionNotifier, NotifierError, load_plugin, takes_who


class Recording:
    def __init__(self):
        self.seen = []
        self.conf = None
        self.cleaned = False

    def prepare(self, conf):
        self.conf = conf

    def notify(self, topology_name, action, who=None):
        self.seen.append((topology_name, action, who))

    def cleanup(self):
        self.cleaned = True


class StormStyle:  # Storm's two-argument notify
    def __init__(self):
        self.seen = []

    def notify(self, topology_name, action):
        self.seen.append((topology_name, action))


class Stuck:
    def __init__(self):
        self.release = threading.Event()
        self.seen = []

    def notify(self, topology_name, action):
        if action == "boom":
            raise RuntimeError("down")
        self.release.wait(10)
        self.seen.append(action)


def wait_until(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_actions_reach_the_plugin_in_order_with_who_then_cleanup():
    plugin = Recording()
    n = ActionNotifier(plugin, {"nimbus.master.timeout.secs": 20.0})
    assert plugin.conf == {"nimbus.master.timeout.secs": 20.0}
    n.notify("wc", "submitTopology", "ann@127.0.0.1")
    n.notify("wc", "killTopology", None)
    n.close()
    assert plugin.seen == [("wc", "submitTopology", "ann@127.0.0.1"), ("wc", "killTopology", None)]
    assert plugin.cleaned


def test_storms_two_argument_notify_is_called_without_who():
    plugin = StormStyle()
    assert not takes_who(plugin) and takes_who(Recording())
    n = ActionNotifier(plugin, {})
    n.notify("wc", "rebalance", "bob@10.0.0.1")
    n.close()
    assert plugin.seen == [("wc", "rebalance")]


def test_a_failing_or_stuck_plugin_never_blocks_the_caller(caplog):
    plugin = Stuck()
    n = ActionNotifier(plugin, {})
    n.notify("wc", "boom", None)
    started = time.monotonic()
    for i in range(5):
        n.notify("wc", f"a{i}", None)  # the plugin is stuck in a0: these queue
    assert time.monotonic() - started < 0.5
    plugin.release.set()
    wait_until(lambda: len(plugin.seen) == 5)
    n.close()
    assert plugin.seen == [f"a{i}" for i in range(5)]
    assert any("notify" in r.getMessage() and "boom" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("path, words", [
    ("nodots", "not an import path"),
    ("no.such.module.Plugin", "cannot be loaded"),
    ("squall.nimbus.notifier.QUEUE_SIZE", "cannot be loaded"),
    ("threading.Event", "has no notify"),
])
def test_a_bad_plugin_class_names_the_key(path, words):
    with pytest.raises(NotifierError) as e:
        load_plugin(path)
    assert "nimbus.topology.action.notifier.plugin.class" in str(e.value) and words in str(e.value)


def test_a_prepare_that_raises_names_the_key():
    class Bad:
        def prepare(self, conf):
            raise ValueError("no endpoint")

        def notify(self, name, action):
            pass

    with pytest.raises(NotifierError, match="plugin.class: Bad.prepare failed: ValueError: no endpoint"):
        ActionNotifier(Bad(), {})
