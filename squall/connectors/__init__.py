"""Sources and sinks whose commits at the source follow acking.

``squall.connectors.reliable.ReliableSpout`` (also ``squall.ReliableSpout``) is the replay
policy every spout here is built on: a retry limit, backoff between replays, and the
``__dead_letter`` stream. Sources: ``files.FileSpout``, ``redis.RedisStreamSpout``,
``spark.DataFrameSpout``, ``spark.StreamingDataFrameSpout``; sinks: ``redis.RedisStreamBolt``,
``spark.DataFrameWriterBolt`` (defined in ``dataframe_writer``). In a stateful topology the
sinks' writes follow the checkpoints (``staging`` for files, ``redis_txn`` for streams).
``FileSpout``, ``RedisStreamSpout``, ``DataFrameSpout`` and ``kafka.KafkaSpout`` are also
``SeekableSpout``s (exactly-once); ``kafka.KafkaBolt`` does not follow checkpoints.
The Spark connectors read and write with Spark or, inside Spark executors, with pyarrow
(``engines``, ``arrow_io``). Each module imports its client library (redis, pyspark,
pyarrow) only when it is imported itself, or when a task first needs it.
"""
