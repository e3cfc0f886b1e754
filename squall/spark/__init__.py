"""squall on Apache Spark: the topology master on the driver, workers as Spark tasks.

Importing this package imports pyzmq; pyspark is imported when a SparkContext starts.
"""

from squall.spark.cluster import SparkCluster
from squall.spark.errors import InsufficientSlotsError, SparkSetupError

__all__ = ["InsufficientSlotsError", "SparkCluster", "SparkSetupError"]
