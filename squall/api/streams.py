"""Names of streams: ``GlobalStreamId`` and ``StreamDef``, plain data below every other API module.

Components, contexts, groupings and the built topology all name streams; keeping these two
here lets each of them import this module alone, never one another in a circle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from squall.api.fields import Fields


class GlobalStreamId(NamedTuple):
    """A stream of the topology: the component that emits it and its name (Storm's)."""

    component_id: str
    stream_id: str


@dataclass(frozen=True)
class StreamDef:
    """A declared output stream."""

    fields: Fields
    direct: bool = False
