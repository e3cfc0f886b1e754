"""State that stateful bolts keep across failures, saved by the checkpoint protocol.

``topology.state.provider`` names a ``StateProvider`` by import path; ``load_provider``
builds it. The providers: ``squall.state.memory.InMemoryStateProvider`` (the default,
process-wide), ``squall.state.local.LocalStateProvider`` (SQLite, durable on one machine)
and ``squall.state.redis.RedisStateProvider``; Storm's Java names of the in-memory and Redis
providers name them too. Importing this package imports none of them.

>>> provider = load_provider({})
>>> type(provider).__name__
'InMemoryStateProvider'
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from squall.state.base import (
    DEFAULT_PROVIDER,
    PROVIDER_KEY,
    InvalidTxidError,
    KeyValueState,
    State,
    StateConfigError,
    StateProvider,
    StateUnavailableError,
)
from squall.state.codec import StateSerializationError

__all__ = [
    "InvalidTxidError",
    "KeyValueState",
    "State",
    "StateConfigError",
    "StateProvider",
    "StateSerializationError",
    "StateUnavailableError",
    "load_provider",
]


# Storm's providers by their Java names, so a Storm topology's configuration works as it is
STORM_PROVIDERS = {
    "org.apache.storm.state.InMemoryKeyValueStateProvider": "squall.state.memory.InMemoryStateProvider",
    "org.apache.storm.redis.state.RedisKeyValueStateProvider": "squall.state.redis.RedisStateProvider",
}


def load_provider(conf: Mapping[str, Any]) -> StateProvider:
    """A new instance of the provider class named by ``conf["topology.state.provider"]``.

    Raises ``StateConfigError`` naming the key and the path if the class cannot be imported,
    is not a ``StateProvider`` or cannot be built without arguments.
    """
    path = conf.get(PROVIDER_KEY) or DEFAULT_PROVIDER
    if isinstance(path, str) and path.startswith(("org.apache.storm.", "com.alibaba.jstorm.")):
        if path not in STORM_PROVIDERS:
            ours = ", ".join(sorted(set(STORM_PROVIDERS.values())))
            raise StateConfigError(f"{PROVIDER_KEY} = {path!r} is a Java provider with no squall "
                                   f"counterpart; use one of {ours}, "
                                   f"squall.state.local.LocalStateProvider or your own StateProvider")
        path = STORM_PROVIDERS[path]
    if not isinstance(path, str):
        raise StateConfigError(f"{PROVIDER_KEY} must be an import path string such as "
                               f"'{DEFAULT_PROVIDER}', got {type(path).__name__}")
    module_name, _, class_name = path.rpartition(".")
    if not module_name:
        raise StateConfigError(f"{PROVIDER_KEY} = {path!r} is not an import path "
                               f"(expected 'package.module.ClassName')")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except Exception as e:  # noqa: BLE001 - importing user code can raise anything
        raise StateConfigError(f"{PROVIDER_KEY} = {path!r} cannot be imported: "
                               f"{type(e).__name__}: {e}") from e
    if not (isinstance(cls, type) and issubclass(cls, StateProvider)):
        raise StateConfigError(f"{PROVIDER_KEY} = {path!r} is not a squall.state.StateProvider subclass")
    try:
        return cls()
    except Exception as e:  # noqa: BLE001 - a provider's constructor can raise anything
        raise StateConfigError(f"{PROVIDER_KEY} = {path!r} cannot be built without arguments: "
                               f"{type(e).__name__}: {e}") from e
