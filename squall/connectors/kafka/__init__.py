"""Kafka in and out, as storm-kafka-client does it (extra ``squall[kafka]``: confluent-kafka).

``KafkaSpout(KafkaSpoutConfig(...))`` reads topics with storm-kafka-client's offset
management, retries and manual partitioning; ``KafkaBolt`` writes tuples to a topic and acks
them once the broker confirmed them. The client library is imported when a task opens, so
topologies can be built where it is not installed.
"""

from squall.connectors.kafka.bolt import KafkaBolt, KafkaDeliveryError
from squall.connectors.kafka.config import (
                                            FirstPollOffsetStrategy,
                                            KafkaSpoutConfig,
                                            ProcessingGuarantee,
                                            default_translator,
)
from squall.connectors.kafka.offsets import OffsetManager, TopicPartition
from squall.connectors.kafka.retry import RetryExponentialBackoff
from squall.connectors.kafka.spout import KafkaSpout

__all__ = ["KafkaSpout", "KafkaSpoutConfig", "KafkaBolt", "KafkaDeliveryError", "FirstPollOffsetStrategy",
           "ProcessingGuarantee", "RetryExponentialBackoff", "OffsetManager", "TopicPartition",
           "default_translator"]
