"""Whether decoding and encoding on threads of their own help a worker under the GIL.

JStorm's documents put deserialize and serialize threads around a task's execution. This
measures the same split on squall's wire format: frames of word-count tuples decoded,
"executed" (a split and a dict update, as the word count's bolts), and the results encoded,
either all on one thread (squall's loop) or as a three-stage pipeline of threads joined by
bounded queues. ``python -m benchmarks.serde_threads [--frames N]`` prints tuples/s of each
and the CPU the process used.
"""

from __future__ import annotations

import argparse
import queue
import resource
import threading
import time

from benchmarks.peers._common import SENTENCES
from squall.runtime.serialization import Encoder, frame, unframe

BATCH = 512


def make_frames(n: int) -> list[bytes]:
    enc = Encoder()
    return [frame([enc.pack([2, 1, "default", [SENTENCES[(f + i) % 5]], {f * BATCH + i: 7}])
                   for i in range(BATCH)]) for f in range(n)]


def execute(messages: list, counts: dict) -> list[list]:
    out = []
    for target, _src, stream, values, ids in messages:
        for word in values[0].split():
            counts[word] = counts.get(word, 0) + 1
            out.append([3, target, stream, [word, counts[word]], ids])
    return out


def encode(enc: Encoder, out: list[list]) -> bytes:
    return frame([enc.pack(m) for m in out])


def inline(frames: list[bytes]) -> int:
    enc, counts, n = Encoder(), {}, 0
    for data in frames:
        messages = list(unframe(data))
        encode(enc, execute(messages, counts))
        n += len(messages)
    return n


def pipelined(frames: list[bytes]) -> int:
    decoded: queue.Queue = queue.Queue(maxsize=4)
    executed: queue.Queue = queue.Queue(maxsize=4)
    done = [0]

    def decoder() -> None:
        for data in frames:
            decoded.put(list(unframe(data)))
        decoded.put(None)

    def encoder() -> None:
        enc = Encoder()
        while (out := executed.get()) is not None:
            encode(enc, out)

    threads = [threading.Thread(target=decoder), threading.Thread(target=encoder)]
    for t in threads:
        t.start()
    counts: dict = {}
    while (messages := decoded.get()) is not None:
        executed.put(execute(messages, counts))
        done[0] += len(messages)
    executed.put(None)
    for t in threads:
        t.join()
    return done[0]


def measure(fn, frames: list[bytes]) -> tuple[float, float]:
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    n = fn(frames)
    wall = time.perf_counter() - t0
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    return n / wall, cpu / wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    frames = make_frames(args.frames)
    ways = (("one thread (squall's loop)", inline), ("decode | execute | encode threads", pipelined))
    for name, fn in ways:
        best = max((measure(fn, frames) for _ in range(args.repeat)), key=lambda r: r[0])
        print(f"{name:36s} {best[0]:>10,.0f} tuples/s   {best[1]:.2f} cores busy")


if __name__ == "__main__":
    main()
