"""Multilang: spouts and bolts written in any language, run as subprocesses.

``ShellBolt`` and ``ShellSpout`` speak Storm's multilang protocol to a subprocess over its
stdin and stdout (JSON by default, msgpack as pystorm's ``MsgpackSerializer`` with
``topology.multilang.serializer: "msgpack"``), so components written for Storm with
pystorm, storm.py, storm.js or any other multilang library run unchanged. See
docs/multilang.md.
"""

from __future__ import annotations

from squall.multilang.bolt import ShellBolt
from squall.multilang.errors import MultilangError, SubprocessDiedError
from squall.multilang.spout import ShellSpout

__all__ = ["MultilangError", "ShellBolt", "ShellSpout", "SubprocessDiedError"]
