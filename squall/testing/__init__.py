"""Helpers for testing topologies: Storm's testing kit, in Python.

``complete_topology`` runs a topology on fixed input and returns what each part emitted;
``simulated_time`` and ``LocalCluster.advance_time`` drive every clock of the runtime by
hand; ``FeederSpout`` emits what a test feeds it; ``tracked_topology(...).wait_idle()``
returns when the topology has nothing left to do; ``test_tuple`` unit-tests a bolt.
"""

from squall.testing.complete import CompleteTopologyResult, MockedSources, complete_topology
from squall.testing.kit import FeederSpout, TrackedTopology, simulated_time, test_tuple, tracked_topology

__all__ = ["CompleteTopologyResult", "FeederSpout", "MockedSources", "TrackedTopology",
           "complete_topology", "simulated_time", "test_tuple", "tracked_topology"]
