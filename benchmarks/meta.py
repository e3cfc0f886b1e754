"""What ``latest-meta.json`` records besides the rows: machine, versions, configuration."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from typing import Any

from benchmarks.envs import REQUIREMENTS, ROOT


def _first_line(cmd: list[str]) -> str | None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20, cwd=ROOT)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if text else None


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _memory_gib() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def machine() -> dict[str, Any]:
    """CPU, cores, memory, OS, Python and Java of this machine."""
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "java": _first_line(["java", "-version"]),
    }


def squall_version() -> dict[str, Any]:
    """The squall version and commit benchmarked, dirty or not, and how the hot path ran."""
    import squall

    commit = _first_line(["git", "rev-parse", "HEAD"])
    dirty = bool(_first_line(["git", "status", "--porcelain", "--untracked-files=no"]))
    from squall import _speedups

    # "compiled" (the Cython build of the hot path), or "pure", "stale", "forced" (its sources)
    return {"squall": squall.__version__, "commit": commit, "dirty": dirty,
            "hot_path": _speedups.STATE}


def system_versions(rows: list[dict]) -> dict[str, dict]:
    """The package versions each system's runner reported (first row that has them)."""
    out: dict[str, dict] = {}
    for row in rows:
        if row.get("versions") and row["system"] not in out:
            out[row["system"]] = row["versions"]
    return out


def build(*, rows: list[dict], args: dict[str, Any], profile: Any, envs: dict[str, Any],
          started_at: str, wall_s: float, systems: dict[str, Any]) -> dict[str, Any]:
    """The metadata object."""
    return {
        "started_at": started_at,
        "wall_s": round(wall_s, 1),
        "command": args,
        "profile": {"name": profile.name, "warmup_s": profile.warmup_s, "duration_s": profile.duration_s},
        "machine": machine(),
        "squall": squall_version(),
        "versions": system_versions(rows),
        "systems": {name: s.what for name, s in systems.items()},
        "envs": {name: {"requirements": REQUIREMENTS.get(name), "ready": e.python is not None,
                        "installed_this_run": e.installed_now, "install_s": round(e.install_s, 1),
                        "reason": e.reason or None}
                 for name, e in envs.items()},
    }
