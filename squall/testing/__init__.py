"""Helpers for testing topologies: run one to completion and see what each part emitted."""

from squall.testing.complete import CompleteTopologyResult, MockedSources, complete_topology

__all__ = ["CompleteTopologyResult", "MockedSources", "complete_topology"]
