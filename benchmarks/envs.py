"""The peers' own virtualenvs under ``.bench/venvs/<env>``, made with pip on first use.

squall's environment never gets a peer's packages: each peer runs in a virtualenv of its
own, created by ``python -m venv`` and filled by ``pip install`` with a time limit. A
virtualenv is reused while its stamp (``.bench-requirements``) matches the requirements;
a failed or timed-out install leaves no stamp, so the next run tries again (pip's cache
makes the second try faster). Installs of several envs run side by side, before any
measurement, so that they never compete with one for the CPU.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENVS = ROOT / ".bench" / "venvs"
LOGS = ROOT / ".bench" / "logs"
STAMP = ".bench-requirements"

# what each env needs; pins keep runs comparable (and pip's cache useful)
REQUIREMENTS: dict[str, list[str]] = {
    "raw": ["msgpack==1.2.4", "pyzmq==27.3.0"],
    # with its Kafka connectors: the kafka-wordcount workload reads with KafkaSource
    "bytewax": ["bytewax[kafka]==0.21.1"],
    # bytewax's KafkaSource and KafkaSink (the Kafka rows of benchmarks.connectors)
    "bytewax-kafka": ["bytewax[kafka]==0.21.1"],
    "spark-ss": ["pyspark==4.3.0"],
    "pyflink": ["apache-flink==2.3.0"],
    "charts": ["matplotlib>=3.8,<4"],
}
INSTALL_TIMEOUT_S = {"pyflink": 420.0, "spark-ss": 300.0}
DEFAULT_TIMEOUT_S = 180.0


@dataclass
class Env:
    """A ready virtualenv (``python`` set) or the reason there is none."""

    name: str
    python: Path | None
    reason: str = ""
    install_s: float = 0.0
    installed_now: bool = False


def env_dir(name: str) -> Path:
    return VENVS / name


def python_of(name: str) -> Path:
    return env_dir(name) / "bin" / "python"


def is_ready(name: str) -> bool:
    """True when the env exists with the current requirements."""
    stamp = env_dir(name) / STAMP
    return python_of(name).exists() and stamp.exists() and stamp.read_text() == _stamp(name)


def _stamp(name: str) -> str:
    return "\n".join(REQUIREMENTS[name]) + "\n"


def _run(cmd: list[str], log: Path, deadline: float) -> str | None:
    """Run ``cmd`` with output to ``log``; None on success, else a one-line reason."""
    with log.open("a") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return "install timed out"
    if code:
        return f"{Path(cmd[0]).name} {' '.join(cmd[1:3])} exited {code}: {_last_error(log)}"
    return None


def _last_error(log: Path) -> str:
    lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("ERROR") or "error" in ln.lower()]
    return (errors or lines or ["no output"])[-1][:200]


def ensure(name: str, timeout_s: float | None = None) -> Env:
    """The env ``name``, created and filled first if needed (blocking, bounded by the timeout)."""
    if is_ready(name):
        return Env(name, python_of(name))
    started = time.monotonic()
    timeout_s = timeout_s or INSTALL_TIMEOUT_S.get(name, DEFAULT_TIMEOUT_S)
    deadline = started + timeout_s
    LOGS.mkdir(parents=True, exist_ok=True)
    log = LOGS / f"install-{name}.log"
    log.write_text("")
    directory = env_dir(name)
    directory.parent.mkdir(parents=True, exist_ok=True)
    (directory / STAMP).unlink(missing_ok=True)
    reason = None
    if not python_of(name).exists():
        reason = _run([sys.executable, "-m", "venv", str(directory)], log, deadline)
    if reason is None:
        # --no-compile: byte-compiling apache-flink's tree took most of its install time;
        # modules compile on first import instead, before any measurement
        reason = _run([str(python_of(name)), "-m", "pip", "install", "--disable-pip-version-check",
                       "--progress-bar", "off", "--no-compile", *REQUIREMENTS[name]], log, deadline)
    spent = time.monotonic() - started
    if reason is not None:
        return Env(name, None, f"{reason} (after {spent:.0f}s; log {log.relative_to(ROOT)})", spent, True)
    (directory / STAMP).write_text(_stamp(name))
    return Env(name, python_of(name), "", spent, True)


def ensure_all(names: list[str], progress: bool = True) -> dict[str, Env]:
    """Every env of ``names``, the missing ones installed side by side."""
    results: dict[str, Env] = {}
    missing = [n for n in names if not is_ready(n)]
    for n in names:
        if n not in missing:
            results[n] = Env(n, python_of(n))
    if missing and progress:
        print(f"installing peer envs (first use): {', '.join(missing)} ...", file=sys.stderr, flush=True)

    def work(n: str) -> None:
        results[n] = ensure(n)
        if progress:
            env = results[n]
            state = "ready" if env.python else f"FAILED: {env.reason}"
            print(f"  {n}: {state} ({env.install_s:.0f}s)", file=sys.stderr, flush=True)

    threads = [threading.Thread(target=work, args=(n,)) for n in missing]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if missing:
        os.sync()  # write the new files out now, not under the first measurements
    return results


def remove(name: str) -> None:
    """Delete an env (``--reinstall``)."""
    shutil.rmtree(env_dir(name), ignore_errors=True)
