"""Sources and sinks whose commits at the source follow acking.

``squall.connectors.reliable.ReliableSpout`` (also ``squall.ReliableSpout``) is the replay
policy every spout here is built on: a retry limit, backoff between replays, and the
``__dead_letter`` stream. Sources: ``files.FileSpout``, ``redis.RedisStreamSpout``,
``spark.DataFrameSpout``,
``spark.StreamingDataFrameSpout``; sinks: ``redis.RedisStreamBolt``, ``spark.DataFrameWriterBolt``.
Each module imports its client library (redis, pyspark) only when it is imported itself.
"""
