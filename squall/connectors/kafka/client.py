"""The confluent-kafka client, imported when a task opens, and its small conversions."""

from __future__ import annotations

from typing import Any

from squall.connectors.kafka.offsets import TopicPartition


def import_client() -> Any:
    """confluent_kafka, or an error saying how to install it."""
    try:
        import confluent_kafka
    except ImportError as e:
        raise ImportError("squall.connectors.kafka needs confluent-kafka: pip install 'squall[kafka]'") from e
    return confluent_kafka


def ktp(tp: TopicPartition, offset: int | None = None, metadata: str | None = None) -> Any:
    """The client's ``TopicPartition`` of ``tp`` (with an offset and commit metadata, if given)."""
    ck = import_client()
    if offset is None:
        return ck.TopicPartition(tp.topic, tp.partition)
    if metadata is None:
        return ck.TopicPartition(tp.topic, tp.partition, offset)
    return ck.TopicPartition(tp.topic, tp.partition, offset, metadata=metadata)


def commit_key(offsets: Any) -> frozenset:
    """What identifies a commit: its (topic, partition, offset) triples."""
    return frozenset((k.topic, k.partition, k.offset) for k in offsets)
