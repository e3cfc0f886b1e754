"""What every benchmark runner shares: the input, the steps, the case protocol, the window.

Standard library only: runners import it inside their own virtualenvs. The figures are in
``_measure``.

Time is ``time.perf_counter()`` everywhere. On Linux it is ``CLOCK_MONOTONIC``, one clock
for every process of the machine, so an emit stamped in one process and a completion seen
in another give a true latency.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

# storm-starter's RandomSentenceSpout sentences, cycled in this order by every source
SENTENCES = (
    "the cow jumped over the moon",
    "an apple a day keeps the doctor away",
    "four score and seven years ago",
    "snow white and the seven dwarfs",
    "i am at two with nature",
)
WORDS_PER_SENTENCE = sum(len(s.split(" ")) for s in SENTENCES) / len(SENTENCES)  # 6.4
ROW_PREFIX = "@@ROW "


def sentence(i: int) -> str:
    """The ``i``-th sentence of the cycled input."""
    return SENTENCES[i % len(SENTENCES)]


def split(text: str) -> list[str]:
    """The word count's split step."""
    return text.split(" ")


# The pipeline workload's three cheap map steps, in order.
def step_upper(text: str) -> str:
    return text.upper()


def step_exclaim(text: str) -> str:
    return text + "!"


def step_length(text: str) -> int:
    return len(text)


PIPELINE_STEPS = (step_upper, step_exclaim, step_length)


# ---- the case protocol -------------------------------------------------------------------

def read_spec(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """The spec the harness passes as the first argument: ``{"cases": [case, ...]}``.

    A case has ``id``, ``workload``, ``variant``, ``acking`` (bool), ``workers``,
    ``warmup_s``, ``duration_s``, ``rate_tps`` (None: as fast as it goes) and ``params``.
    """
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        raise SystemExit("usage: python -m benchmarks.peers.<peer> SPEC_JSON")
    return json.loads(argv[0])


def emit_row(row: dict[str, Any]) -> None:
    """Print one result row for the harness (libraries may print too: rows are prefixed)."""
    sys.stdout.write(ROW_PREFIX + json.dumps(row) + "\n")
    sys.stdout.flush()


def log(message: str) -> None:
    """A progress line on stderr (the harness keeps it in the run's log file)."""
    sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] {message}\n")
    sys.stderr.flush()


def error_row(case: dict[str, Any], system: str, error: BaseException | str) -> dict[str, Any]:
    """The row of a case that could not be measured."""
    return {**base_row(case, system), "error": str(error)[:500]}


def base_row(case: dict[str, Any], system: str) -> dict[str, Any]:
    """The fields every row of ``case`` has, before any figure."""
    return {
        "id": case["id"], "workload": case["workload"], "variant": case["variant"],
        "system": system, "acking": case.get("acking"), "workers": case.get("workers"),
        "rate_tps": case.get("rate_tps"), "warmup_s": case["warmup_s"],
        "duration_s": case["duration_s"], "params": case.get("params") or {},
    }


class Skip(Exception):
    """Raised by a runner for a case its system cannot run at all (it did not start)."""


def pace(case: dict[str, Any], rows: Sequence[dict[str, Any]]) -> str | None:
    """Give a latency case (``params["share"]``, no ``rate_tps`` yet) its rate; or say why not.

    The rate is ``share`` times the sentences/s of the system's ``wordcount`` row among
    ``rows`` (measured earlier in the same run), with the same acking as the case.
    """
    share = (case.get("params") or {}).get("share")
    if case.get("rate_tps") or not share:
        return None
    for row in rows:
        if (row.get("workload") == "wordcount" and row.get("system") == case.get("system")
                and bool(row.get("acking")) == bool(case.get("acking")) and row.get("throughput_tps")):
            case["rate_tps"] = round(row["throughput_tps"] * share, 1)
            case["params"]["max_tps"] = round(row["throughput_tps"], 1)
            return None
    return "skipped: no wordcount maximum to pace at (wordcount failed or was not run)"


def serve(system: str, run_case: Callable[[dict[str, Any]], dict[str, Any]],
          argv: Sequence[str] | None = None) -> int:
    """A runner's main loop: every case of the spec, in order, one result row each.

    A case that raises gets an error row and the next case runs. Latency cases are paced
    from the wordcount rows this runner produced before them (``pace``).
    """
    rows: list[dict[str, Any]] = []
    for case in read_spec(argv)["cases"]:
        case.setdefault("system", system)
        log(f"{system}: {case['id']}")
        started = time.monotonic()
        problem = pace(case, rows)
        if problem:
            row = error_row(case, system, problem)
        else:
            try:
                row = run_case(case)
            except Skip as e:
                row = error_row(case, system, f"skipped: {e}")
            except Exception as e:  # noqa: BLE001 - report the case, go on with the next
                log(f"{case['id']} failed: {type(e).__name__}: {e}")
                row = error_row(case, system, f"{type(e).__name__}: {e}")
        row["wall_s"] = round(time.monotonic() - started, 1)
        emit_row(row)
        rows.append(row)
    return 0


class Window:
    """The measured window of a run: ``warmup_s`` after ``start``, ``duration_s`` long."""

    def __init__(self, warmup_s: float, duration_s: float, start: float | None = None) -> None:
        self.start = time.perf_counter() if start is None else start
        self.t0 = self.start + warmup_s
        self.t1 = self.t0 + duration_s

    @staticmethod
    def sleep_until(t: float) -> None:
        """Sleep until ``perf_counter()`` reaches ``t``."""
        while (left := t - time.perf_counter()) > 0:
            time.sleep(min(left, 0.5))


def versions(*packages: str) -> dict[str, str]:
    """Python's version and the installed version of each of ``packages``."""
    from importlib import metadata

    out = {"python": sys.version.split()[0]}
    for name in packages:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out
