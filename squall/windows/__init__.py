"""Windowed bolts: sliding, tumbling and session windows over tuples (Storm's and JStorm's).

A ``WindowedBolt`` is what users subclass; the builder runs it inside a
``WindowedBoltExecutor`` that keeps the window. The window logic itself (window manager,
eviction and trigger policies, watermarks, sessions) is pure code over
``squall.runtime.clock``, driven in a topology by tick tuples.
"""

from squall.windows.bolt import WindowedBolt
from squall.windows.shapes import Count, Duration
from squall.windows.stateful import StatefulWindowedBolt
from squall.windows.window import TupleWindow

__all__ = ["Count", "Duration", "StatefulWindowedBolt", "TupleWindow", "WindowedBolt"]
