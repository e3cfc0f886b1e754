"""What keeping a task's state by key group costs: per-task state against ``KeyGroupedState``.

    python -m benchmarks.keygroups_cost [--words 2000] [--checkpoints 20] [--redis HOST:PORT]

One counting task of four (K = 4096, so it owns 1,024 key groups) counts ``--words`` words
of its own (a vocabulary of 20,000, each routed to it by the fields grouping) between two
checkpoints (``prepare_commit`` and ``commit``), ``--checkpoints`` times, on the same
provider: once in one per-task namespace (squall before key groups) and once by key group
(every checkpoint touches the key groups of the words counted since the last). The two
layouts alternate in one process, so the machine's load affects both alike; the figures are
microseconds per word, checkpoints included, best of three.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
import uuid
from types import SimpleNamespace
from typing import Any

from squall.runtime.keygroups import default_table, key_group
from squall.runtime.stateful import open_keyed_state

TASKS, K = 4, 4096


def context(topology: str) -> SimpleNamespace:
    return SimpleNamespace(topology_name=topology, component_id="count", task_id=1,
                           get_this_component_tasks=lambda: list(range(TASKS)),
                           get_this_task_index=lambda: 0)


def words_of_task(n: int, seed: int = 7) -> list[str]:
    table = default_table(TASKS, K)
    vocabulary = [w for w in (f"word{i}" for i in range(80_000)) if table[key_group(w, K)] == 0]
    rng = random.Random(seed)
    return [rng.choice(vocabulary) for _ in range(n)]


def run(state: Any, batches: list[list[str]]) -> float:
    get, put = state.get, state.put
    start = time.perf_counter()
    for txid, words in enumerate(batches, 1):
        for w in words:
            put(w, get(w, 0) + 1)
        state.prepare_commit(txid)
        state.commit(txid)
    return time.perf_counter() - start


def providers(redis: str | None) -> dict[str, tuple[Any, dict]]:
    from squall.state.local import LocalStateProvider
    from squall.state.memory import InMemoryStateProvider

    out: dict[str, tuple[Any, dict]] = {
        "memory": (InMemoryStateProvider(), {}),
        "local": (LocalStateProvider(), {"topology.state.provider.config": {"path": tempfile.mkdtemp()}}),
    }
    if redis:
        from squall.state.redis import RedisStateProvider

        host, port = redis.rsplit(":", 1)
        out["redis"] = (RedisStateProvider(), {"topology.state.provider.config":
                                               {"host": host, "port": int(port)}})
    return out


def main(argv: list[str] | None = None) -> int:
    """Print microseconds per word, per-task against by key group, for each provider."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=2000, help="words counted per checkpoint")
    parser.add_argument("--checkpoints", type=int, default=20)
    parser.add_argument("--redis", help="HOST:PORT of a Redis to measure too")
    args = parser.parse_args(argv)
    all_words = words_of_task(args.words * args.checkpoints)
    batches = [all_words[i:i + args.words] for i in range(0, len(all_words), args.words)]
    groups = sum(len({key_group(w, K) for w in b}) for b in batches) / len(batches)
    print(f"{args.words} words per checkpoint over {groups:.0f} key groups of the task's 1024 "
          f"(mean), {args.checkpoints} checkpoints; us per word, best of 3")
    for name, (provider, conf) in providers(args.redis).items():
        best = {"per-task": float("inf"), "key groups": float("inf")}
        for _ in range(3):
            t = f"kgcost-{uuid.uuid4().hex[:8]}"
            per_task = provider.new_state(f"{t}/count/0", conf, context(t))
            best["per-task"] = min(best["per-task"], run(per_task, batches))
            keyed = open_keyed_state(provider, conf, context(t))
            best["key groups"] = min(best["key groups"], run(keyed, batches))
            per_task.close()
            keyed.close()
        n = len(all_words)
        a, b = best["per-task"] * 1e6 / n, best["key groups"] * 1e6 / n
        print(f"{name:8s} per-task {a:7.2f}  key groups {b:7.2f}  ({b / a:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
