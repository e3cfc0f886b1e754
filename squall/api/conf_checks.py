"""The type and range of every configuration key squall knows, checked one value at a time.

One table, used by every door a configuration comes in by: ``prepare_conf`` (every submit,
``LocalCluster`` and Nimbus alike) checks the merged configuration with it, and a Flux file's
``config:`` is checked with it key by key at load, so that the error names the line of the
value (``squall.flux``).

Keys are checked too (``check_key``), against every key squall declares
(``squall.api.config``: ``SETTINGS``, ``MORE_SETTINGS``, ``OTHER_TABLES``, and Storm's keys
squall does not use, ``STORM_UNUSED``):

- an unknown ``squall.*`` key is refused: the namespace is squall's, so it is a typo;
- an unknown ``topology.*`` key close to a known one (``topology.guarantees``) is refused with
  the key it likely meant: it would otherwise be ignored without a word;
- any other unknown ``topology.*`` key is kept, with a warning: Storm lets a topology carry
  its own keys, and its components may read them;
- Storm's keys squall does not use pass with a warning; keys outside both namespaces are the
  user's and pass silently.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from squall.api.config import check_key, known_keys
from squall.api.errors import InvalidTopologyError

__all__ = ["CHECKS", "check_key", "check_setting", "check_settings", "known_keys"]


def _number(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float))


def _integer(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, int)


def _hook_paths(v: Any) -> bool:
    return v is None or (isinstance(v, (list, tuple)) and all(
        isinstance(p, str) and "." in p.strip(".") for p in v))


def _json_object(v: Any) -> bool:
    """A mapping, or a JSON object in a string (Storm's ``storm.yaml`` writes provider configs so)."""
    if isinstance(v, str):
        try:
            v = json.loads(v)
        except ValueError:
            return False
    return isinstance(v, dict)


def _optional(test: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: v is None or test(v)


POSITIVE_INT = ("a positive integer", lambda v: _integer(v) and v > 0)
POSITIVE_INT_OR_NONE = ("a positive integer or None", _optional(POSITIVE_INT[1]))
POSITIVE_NUMBER = ("a positive number", lambda v: _number(v) and v > 0)
POSITIVE_NUMBER_OR_NONE = ("a positive number or None", _optional(POSITIVE_NUMBER[1]))
NUMBER_AT_LEAST_0 = ("a number >= 0", lambda v: _number(v) and v >= 0)
INT_AT_LEAST_0 = ("an integer >= 0", lambda v: _integer(v) and v >= 0)
INT_AT_LEAST_0_OR_NONE = ("a non-negative integer or None", _optional(INT_AT_LEAST_0[1]))
FRACTION = ("a number from 0 to 1", lambda v: _number(v) and 0 <= v <= 1)
BOOLEAN = ("true or false", lambda v: isinstance(v, bool))
IMPORT_PATH = ("an import path string ('package.module.Class')",
               lambda v: isinstance(v, str) and "." in v.strip("."))
JSON_OBJECT = ("a mapping or a JSON object in a string", _json_object)
GUARANTEE = ("'at_least_once' or 'exactly_once'", lambda v: v in ("at_least_once", "exactly_once"))
POISON = ("'stop' or 'dead_letter'", lambda v: v in ("stop", "dead_letter"))
HOOK_PATHS = ("a list of hook class import paths ('package.module.Class')", _hook_paths)

# key -> (what a good value is, the test of one value)
CHECKS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "topology.workers": POSITIVE_INT,
    "topology.acker.executors": INT_AT_LEAST_0_OR_NONE,
    "topology.message.timeout.secs": POSITIVE_NUMBER,
    "topology.enable.message.timeouts": BOOLEAN,
    "topology.max.spout.pending": POSITIVE_INT_OR_NONE,
    "topology.max.error.report.per.interval": POSITIVE_INT,
    "topology.error.throttle.interval.secs": POSITIVE_NUMBER,
    "squall.exactly_once.max.spout.pending": POSITIVE_INT,
    "topology.exactly_once.max.replays": POSITIVE_INT,
    "topology.exactly_once.poison": POISON,
    "topology.tick.tuple.freq.secs": POSITIVE_NUMBER_OR_NONE,
    "topology.debug": BOOLEAN,
    "topology.tasks": POSITIVE_INT_OR_NONE,
    "topology.max.task.parallelism": POSITIVE_INT_OR_NONE,
    "topology.disable.loadaware.messaging": BOOLEAN,
    "squall.chaining": BOOLEAN,
    "topology.localityaware.higher.bound": NUMBER_AT_LEAST_0,
    "topology.localityaware.lower.bound": NUMBER_AT_LEAST_0,
    "topology.state.checkpoint.interval.ms": POSITIVE_NUMBER,
    "topology.guarantee": GUARANTEE,
    "topology.state.provider": IMPORT_PATH,
    "topology.state.provider.config": JSON_OBJECT,
    "topology.key.groups": POSITIVE_INT,
    "topology.executor.receive.buffer.size": POSITIVE_INT,
    "topology.shellbolt.max.pending": POSITIVE_INT,
    "topology.executor.send.buffer.size": POSITIVE_INT,
    "topology.stats.sample.rate": FRACTION,
    "topology.backpressure.water.mark.high": FRACTION,
    "topology.backpressure.water.mark.low": FRACTION,
    "squall.transfer.batch.size": POSITIVE_INT,
    "squall.transfer.batch.time.ms": NUMBER_AT_LEAST_0,
    "squall.metrics.window.secs": POSITIVE_NUMBER,
    "topology.auto.task.hooks": HOOK_PATHS,
    "topology.spout.wait.progressive.level1.count": INT_AT_LEAST_0,
    "topology.spout.wait.progressive.level2.count": INT_AT_LEAST_0,
    "topology.spout.wait.progressive.level3.sleep.millis": NUMBER_AT_LEAST_0,
    "squall.spout.round.budget.ms": POSITIVE_NUMBER,
    "squall.max.tuple.bytes": POSITIVE_INT,
    "squall.task.stuck.secs": NUMBER_AT_LEAST_0,
    "squall.backpressure.cycle.secs": POSITIVE_NUMBER,
    "squall.spout.max.retries": INT_AT_LEAST_0_OR_NONE,
    "topology.autoscale": BOOLEAN,
    "topology.autoscale.mode": ("'apply' or 'recommend'", lambda v: v in ("apply", "recommend")),
    "topology.autoscale.target.utilization": ("a number above 0, at most 1",
                                              lambda v: _number(v) and 0 < v <= 1),
    "topology.autoscale.interval.secs": POSITIVE_NUMBER,
    "topology.autoscale.max.factor": ("a number above 1", lambda v: _number(v) and v > 1),
    "topology.autoscale.min.parallelism": POSITIVE_INT,
    "topology.autoscale.max.parallelism": POSITIVE_INT_OR_NONE,
    "topology.worker.max.heap.size.mb": POSITIVE_NUMBER_OR_NONE,
    "squall.spark.worker.memory.base.mb": NUMBER_AT_LEAST_0,
    "squall.spark.worker.cpu.pin": BOOLEAN,
}


def check_setting(key: str, value: Any, where: str = "config") -> None:
    """Raise ``InvalidTopologyError`` if ``value`` is not a good value of ``key``.

    >>> check_setting("topology.workers", "3")
    Traceback (most recent call last):
    ...
    squall.api.errors.InvalidTopologyError: config topology.workers must be a positive integer, got '3'
    >>> check_setting("my.own.key", object())  # keys squall does not know are the user's
    """
    check_key(key, where)
    check = CHECKS.get(key)
    if check is not None and not check[1](value):
        raise InvalidTopologyError(f"{where} {key} must be {check[0]}, got {value!r}")


def check_settings(conf: dict, where: str = "config") -> None:
    """``check_setting`` on every key of ``conf`` that squall knows."""
    for key, value in conf.items():
        check_setting(key, value, where)
