"""``KafkaSpoutConfig`` and its enums: storm-kafka-client's settings, in snake_case.

Plain data checked at construction, so a wrong setting is an error where the topology is
built, not in a worker. Importing this module does not import the Kafka client.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable
from typing import Any

from squall.api.fields import Fields
from squall.connectors.kafka.retry import RetryExponentialBackoff

DEFAULT_FIELDS = Fields("topic", "partition", "offset", "key", "value")


class FirstPollOffsetStrategy(enum.Enum):
    """Where a partition is first read from (Storm's ``FirstPollOffsetStrategy``).

    EARLIEST / LATEST: the log's start / end whenever the topology is deployed, ignoring a
    commit by an earlier deployment; UNCOMMITTED_EARLIEST / UNCOMMITTED_LATEST: the group's
    committed offset if there is one, else the start / end.
    """

    EARLIEST = "EARLIEST"
    LATEST = "LATEST"
    UNCOMMITTED_EARLIEST = "UNCOMMITTED_EARLIEST"
    UNCOMMITTED_LATEST = "UNCOMMITTED_LATEST"


class ProcessingGuarantee(enum.Enum):
    """Storm's ``ProcessingGuarantee``.

    AT_LEAST_ONCE: tuples carry msg ids, failed ones are retried, offsets committed as acked;
    AT_MOST_ONCE: offsets committed right after each poll, tuples untracked;
    NO_GUARANTEE: tuples untracked, fetched offsets committed every commit period.
    """

    AT_LEAST_ONCE = "AT_LEAST_ONCE"
    AT_MOST_ONCE = "AT_MOST_ONCE"
    NO_GUARANTEE = "NO_GUARANTEE"


def default_translator(record: Any) -> list:
    """Storm's ``DefaultRecordTranslator``: topic, partition, offset, key, value."""
    return [record.topic(), record.partition(), record.offset(), record.key(), record.value()]


def _positive(owner: str, name: str, value: Any, allow_zero: bool = False) -> Any:
    low_ok = value >= 0 if allow_zero else value > 0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low_ok:
        kind = "non-negative" if allow_zero else "positive"
        raise ValueError(f"{owner}: {name} must be a {kind} number, got {value!r}")
    return value


class KafkaSpoutConfig:
    """What a ``KafkaSpout`` reads and how (storm-kafka-client's ``KafkaSpoutConfig``).

    ``bootstrap_servers``: "host:port[,host:port]"; ``topics`` (a list) or ``topic_pattern``
    (a regular expression matched against every topic's whole name); ``group_id``: the
    consumer group offsets are committed under. ``record_translator``: a callable
    ``record -> list`` or ``-> (stream, list)`` (None: skip the record, unless
    ``emit_null_tuples``), with ``declare(declarer)`` for its streams; ``record_fields``
    instead names the default stream's fields for a plain callable. ``consumer_props`` are
    passed to the consumer as they are (librdkafka's property names).
    ``metrics_time_bucket_size_in_secs``: how often the earliest and latest offsets are read
    for the lag figures. ``offset_recommit_period_ms``: how often every partition read has its
    committed offset and owner mark committed again (the groups have no members, so the broker
    expires each offset ``offsets.retention.minutes`` after its last commit: keep this well
    below it; the default, one day, is a seventh of Kafka's default seven days).
    ``max_records_per_next_tuple``: the most records one ``next_tuple`` emits (fetched
    records are at hand, and a call costs the task more than a record); a task's
    ``topology.max.spout.pending`` is checked between calls, so it may be passed by up to
    this many less one.
    """

    def __init__(self, bootstrap_servers: str, topics: Iterable[str] | None = None, *,
                 topic_pattern: str | None = None, group_id: str | None = None,
                 first_poll_offset_strategy: FirstPollOffsetStrategy =
                 FirstPollOffsetStrategy.UNCOMMITTED_EARLIEST,
                 processing_guarantee: ProcessingGuarantee = ProcessingGuarantee.AT_LEAST_ONCE,
                 offset_commit_period_ms: float = 30_000, max_uncommitted_offsets: int = 10_000_000,
                 partition_refresh_period_ms: float = 2_000, poll_timeout_ms: float = 200,
                 retry: RetryExponentialBackoff | None = None,
                 record_translator: Callable[[Any], Any] | None = None,
                 record_fields: Fields | Iterable[str] | None = None,
                 emit_null_tuples: bool = False, tuple_tracking: bool = False,
                 metrics_time_bucket_size_in_secs: float = 60,
                 offset_recommit_period_ms: float = 86_400_000,
                 consumer_props: dict[str, Any] | None = None,
                 max_records_per_next_tuple: int = 100) -> None:
        owner = "KafkaSpoutConfig"
        if not isinstance(bootstrap_servers, str) or not bootstrap_servers.strip():
            raise ValueError(f"{owner}: bootstrap_servers must be 'host:port[,host:port]', "
                             f"got {bootstrap_servers!r}")
        if (topics is None) == (topic_pattern is None):
            raise ValueError(f"{owner}: give either topics (a list) or topic_pattern, not "
                             f"{'both' if topics is not None else 'neither'}")
        self.topics = None if topics is None else [str(t) for t in ([topics] if isinstance(topics, str)
                                                                    else topics)]
        if self.topics is not None and not self.topics:
            raise ValueError(f"{owner}: topics is empty")
        self.topic_pattern = topic_pattern
        self._pattern = re.compile(topic_pattern) if topic_pattern is not None else None
        self.bootstrap_servers = bootstrap_servers
        self.group_id = group_id or f"squall-{'-'.join(self.topics or [str(topic_pattern)])}"
        if not isinstance(first_poll_offset_strategy, FirstPollOffsetStrategy):
            raise ValueError(f"{owner}: first_poll_offset_strategy must be a FirstPollOffsetStrategy, "
                             f"got {first_poll_offset_strategy!r}")
        if not isinstance(processing_guarantee, ProcessingGuarantee):
            raise ValueError(f"{owner}: processing_guarantee must be a ProcessingGuarantee, "
                             f"got {processing_guarantee!r}")
        self.first_poll_offset_strategy = first_poll_offset_strategy
        self.processing_guarantee = processing_guarantee
        self.offset_commit_period_ms = _positive(owner, "offset_commit_period_ms", offset_commit_period_ms)
        if isinstance(max_uncommitted_offsets, bool) or not isinstance(max_uncommitted_offsets, int) \
                or max_uncommitted_offsets < 1:
            raise ValueError(f"{owner}: max_uncommitted_offsets must be a positive integer, "
                             f"got {max_uncommitted_offsets!r}")
        self.max_uncommitted_offsets = max_uncommitted_offsets
        self.partition_refresh_period_ms = _positive(owner, "partition_refresh_period_ms",
                                                     partition_refresh_period_ms)
        self.poll_timeout_ms = _positive(owner, "poll_timeout_ms", poll_timeout_ms, allow_zero=True)
        self.retry = retry if retry is not None else RetryExponentialBackoff()
        if not isinstance(self.retry, RetryExponentialBackoff):
            raise ValueError(f"{owner}: retry must be a RetryExponentialBackoff, got {retry!r}")
        if record_translator is not None and not callable(record_translator):
            raise ValueError(f"{owner}: record_translator must be callable, got {record_translator!r}")
        self.record_translator = record_translator or default_translator
        if record_fields is not None:
            self.record_fields: Fields | None = (record_fields if isinstance(record_fields, Fields)
                                                 else Fields(*record_fields))
        else:
            self.record_fields = DEFAULT_FIELDS if record_translator is None else None
        if self.record_fields is None and not callable(getattr(self.record_translator, "declare", None)):
            raise ValueError(f"{owner}: a record_translator needs a declare(declarer) method or "
                             f"record_fields naming its fields")
        self.emit_null_tuples = bool(emit_null_tuples)
        self.tuple_tracking = bool(tuple_tracking)
        self.metrics_time_bucket_size_in_secs = _positive(owner, "metrics_time_bucket_size_in_secs",
                                                          metrics_time_bucket_size_in_secs)
        self.offset_recommit_period_ms = _positive(owner, "offset_recommit_period_ms",
                                                   offset_recommit_period_ms)
        self.consumer_props = dict(consumer_props or {})
        if isinstance(max_records_per_next_tuple, bool) or not isinstance(max_records_per_next_tuple, int) \
                or max_records_per_next_tuple < 1:
            raise ValueError(f"{owner}: max_records_per_next_tuple must be a positive integer, "
                             f"got {max_records_per_next_tuple!r}")
        self.max_records_per_next_tuple = max_records_per_next_tuple

    def subscribes(self, topic: str) -> bool:
        """Whether ``topic`` is read (internal topics starting with "__" never match a pattern)."""
        if self.topics is not None:
            return topic in self.topics
        assert self._pattern is not None
        return not topic.startswith("__") and self._pattern.fullmatch(topic) is not None

    def topics_string(self) -> str:
        """The topics, or the pattern, for messages."""
        return ",".join(self.topics) if self.topics is not None else f"pattern {self.topic_pattern!r}"

    def is_at_least_once(self) -> bool:
        """Whether commits follow acks."""
        return self.processing_guarantee is ProcessingGuarantee.AT_LEAST_ONCE

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_pattern", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state.setdefault("offset_recommit_period_ms", 86_400_000)  # pickled before it existed
        state.setdefault("max_records_per_next_tuple", 100)
        self.__dict__.update(state)
        self._pattern = re.compile(self.topic_pattern) if self.topic_pattern is not None else None
