"""Components of the Kafka topology of ``test_hosts_cluster``, in a module that imports only
squall: the executors import it from the code squall ships, without the tests' packages."""

from __future__ import annotations

import os
from typing import Any

from squall import Bolt


class RecordValues(Bolt):
    """Appends ``offset value`` of each Kafka record to ``<out>/kafka-<pid>.txt``, then acks.

    ``<out>/kafka-lib-<pid>.txt`` says where its process imports confluent-kafka from.
    """

    def __init__(self, out: str) -> None:
        self.out = out

    def prepare(self, conf: dict, context: Any, collector: Any) -> None:
        self.collector = collector
        self.file = open(os.path.join(self.out, f"kafka-{os.getpid()}.txt"), "a")  # noqa: SIM115
        import confluent_kafka

        with open(os.path.join(self.out, f"kafka-lib-{os.getpid()}.txt"), "w") as f:
            f.write(confluent_kafka.__file__ or "")

    def execute(self, tup: Any) -> None:
        value = tup["value"]
        text = value.decode() if isinstance(value, bytes) else str(value)
        self.file.write(f"{tup['offset']} {text}\n")
        self.file.flush()
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        pass
