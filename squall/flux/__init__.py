"""YAML topologies in Storm's Flux format, with Python import paths for ``className``.

>>> import inspect
>>> list(inspect.signature(load_yaml).parameters)
['path', 'properties', 'env', 'params']
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from squall.api.config import Config
from squall.api.topology import StormTopology
from squall.flux.errors import FluxError

__all__ = ["FluxError", "TopologySpec", "load_yaml"]


@dataclass
class TopologySpec:
    """A loaded YAML topology: ready for ``submit_topology(spec.name, spec.conf, spec.topology)``."""

    name: str
    conf: Config
    topology: StormTopology
    file: str
    objects: dict[str, Any] = field(default_factory=dict)  # built components by id

    def describe(self) -> str:
        """The plan: components, tasks, workers and streams (``squall submit --dry-run``)."""
        from squall.flux.plan import describe
        from squall.runtime.submission import prepare_conf

        return describe(self.name, prepare_conf(self.conf, self.topology), self.topology)


def load_yaml(path: str, properties: str | None = None, env: bool = False,
              params: Mapping[str, str] | None = None) -> TopologySpec:
    """Build the topology that the Flux file ``path`` describes.

    ``properties`` names a properties file whose values replace ``${name}``; ``params``
    (``squall submit --param name=value``) are more such values, and win over the file's;
    ``env=True`` replaces ``${ENV-NAME}`` with environment variables. Every mistake is a
    ``FluxError`` (an ``InvalidTopologyError``) whose message starts with ``file:line:``.
    """
    from squall.flux.build import build
    from squall.flux.document import load_document
    from squall.flux.substitution import read_properties

    props = read_properties(properties) if properties is not None else None
    if params:
        props = {**(props or {}), **params}
    doc = load_document(str(path), props, env)
    built = build(doc)
    return TopologySpec(built.name, built.conf, built.topology, str(path), built.objects)
