"""bytewax's Kafka word count, for the Kafka rows of ``benchmarks.connectors``.

``python -m benchmarks.peers.bytewax_kafka BOOTSTRAP TOPIC OUT_TOPIC`` in ``.bench/venvs/bytewax-kafka``
(``bytewax[kafka]``, which reads with confluent-kafka too): ``KafkaSource`` (``tail=False``: it
stops at each partition's end offset) -> ``flat_map`` split -> ``count_final`` per word ->
``KafkaSink`` of ``word -> count``, under ``run_main`` (one worker, no recovery: no per-record
acking). Prints one JSON line: seconds from the start of ``run_main`` to its end, and the words
counted.
"""

from __future__ import annotations

import json
import sys
import time


def main() -> None:
    import bytewax.operators as op
    from bytewax.connectors.kafka import KafkaSink, KafkaSinkMessage, KafkaSource
    from bytewax.dataflow import Dataflow
    from bytewax.testing import run_main

    bootstrap, topic, out_topic = sys.argv[1:4]
    total = [0]

    def to_message(kv: tuple[str, int]) -> KafkaSinkMessage:
        total[0] += kv[1]
        return KafkaSinkMessage(kv[0].encode(), str(kv[1]).encode())

    flow = Dataflow("kafka_word_count")
    records = op.input("in", flow, KafkaSource([bootstrap], [topic], tail=False,
                                               add_config={"group.id": f"bytewax-{time.time()}"}))
    words = op.flat_map("split", records, lambda m: m.value.decode().split(" "))
    counts = op.count_final("count", words, lambda w: w)
    op.output("out", op.map("message", counts, to_message), KafkaSink([bootstrap], out_topic))
    t0 = time.perf_counter()
    run_main(flow)
    print(json.dumps({"seconds": time.perf_counter() - t0, "words": total[0]}))


if __name__ == "__main__":
    main()
