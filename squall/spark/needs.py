"""The distributions a topology's components need on the executors, beyond squall's own.

squall's connectors import their client libraries (confluent-kafka, redis, pyarrow) only
where they are used, so that ``import squall`` stays light; squall does not require them,
and packing squall's requirements alone would leave a Kafka or Redis topology failing to
import on executors that lack them. ``topology_needs`` finds them from what the topology
holds: each component's classes (squall's connectors by ``CONNECTOR_DISTRIBUTIONS``, a
class of an installed distribution by that distribution) and the state provider.
"""

from __future__ import annotations

import importlib.metadata as md
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from squall.api.topology import StormTopology
from squall.runtime.exactly_once_checks import component_object

# squall's modules whose components import a distribution squall does not require
CONNECTOR_DISTRIBUTIONS = {
    "squall.connectors.kafka": "confluent-kafka",
    "squall.connectors.redis": "redis",
    "squall.connectors.redis_txn": "redis",
    "squall.state.redis": "redis",
    "squall.connectors.arrow_io": "pyarrow",
    "squall.connectors.dataframe_writer": "pyarrow",
    "squall.connectors.spark": "pyarrow",
}
STATE_PROVIDER = "topology.state.provider"
# on every executor already, or not a distribution to ship
NOT_SHIPPED = frozenset({"squall", "pyspark", "py4j"})


@lru_cache(maxsize=1)
def _installed_packages() -> Mapping[str, list[str]]:
    return md.packages_distributions()


def distributions_of(module: str) -> list[str]:
    """The distributions a class of ``module`` needs on an executor.

    None for the standard library's modules, squall's core or the user's own files.
    """
    for prefix, dist in CONNECTOR_DISTRIBUTIONS.items():
        if module == prefix or module.startswith(prefix + "."):
            return [dist]
    top = module.split(".", 1)[0]
    return [d for d in _installed_packages().get(top, []) if d.lower() not in NOT_SHIPPED]


def topology_needs(conf: dict, topology: StormTopology | None) -> dict[str, str]:
    """Distribution -> the first thing in ``topology`` or ``conf`` that needs it (for messages).

    A component that cannot be unpickled here is skipped: its own executor reports it.
    """
    needs: dict[str, str] = {}
    for cid, spec in (topology.components.items() if topology is not None else ()):
        if cid.startswith(("$", "__")):
            continue
        obj: Any = component_object(spec)
        if obj is None:
            continue
        kind = type(obj)
        for cls in kind.__mro__:
            for dist in distributions_of(cls.__module__):
                needs.setdefault(dist, f"component {cid!r} ({kind.__module__}.{kind.__qualname__})")
    provider = conf.get(STATE_PROVIDER)
    if isinstance(provider, str) and "." in provider:
        for dist in distributions_of(provider.rsplit(".", 1)[0]):
            needs.setdefault(dist, f"{STATE_PROVIDER} {provider}")
    return needs
