"""Whether the spout's broker answers: one error per outage, and the news that it is back."""

from __future__ import annotations

import logging
from typing import Any

from squall.connectors.kafka.client import import_client

log = logging.getLogger("squall.connectors.kafka")


class Health:
    """The broker's state as one spout task sees it; ``down`` is why it is unreachable, or None.

    Called on the task's thread only (the client's callbacks run inside its poll).
    """

    def __init__(self, name: str, bootstrap_servers: str, collector: Any) -> None:
        self.name = name
        self.bootstrap_servers = bootstrap_servers
        self.collector = collector
        self.down: str | None = None

    def on_client_error(self, error: Any) -> None:
        """The client's error callback: an outage, an unknown topic, or a warning."""
        ck = import_client()
        code = error.code() if hasattr(error, "code") else None
        if code in (ck.KafkaError._ALL_BROKERS_DOWN, ck.KafkaError._TRANSPORT, ck.KafkaError._TIMED_OUT,
                    ck.KafkaError._RESOLVE, ck.KafkaError._MSG_TIMED_OUT):
            self.unreachable(str(error))
        elif code == ck.KafkaError.UNKNOWN_TOPIC_OR_PART:
            self.collector.report_error(RuntimeError(f"{self.name}: {error}"))
        elif code in (ck.KafkaError._AUTO_OFFSET_RESET, ck.KafkaError.OFFSET_OUT_OF_RANGE):
            # the fetch position is no longer held (retention): with auto.offset.reset
            # ``error`` the partition stops here; the others moved it, reported either way
            self.collector.report_error(RuntimeError(
                f"{self.name}: a fetch offset is out of range (records deleted?): {error}"))
        else:
            log.warning("%s: %s", self.name, error)

    def unreachable(self, why: str) -> None:
        """Report the broker unreachable, once per outage."""
        if self.down is None:
            self.down = why
            self.collector.report_error(ConnectionError(
                f"{self.name}: Kafka at {self.bootstrap_servers} cannot be reached: {why}"))

    def up(self) -> None:
        """The broker answered: the outage, if any, is over."""
        if self.down is not None:
            log.info("%s: Kafka at %s answers again", self.name, self.bootstrap_servers)
            self.down = None
