"""The in-process cluster."""

from squall.local.cluster import LocalCluster

__all__ = ["LocalCluster"]
