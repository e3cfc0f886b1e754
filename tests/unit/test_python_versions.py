"""The Python versions squall is tested on are the ones pyproject.toml declares (issue 41, item 14).

``make test`` runs every test on the main venv's Python (3.11) and the unit and integration
tests on a second one (3.13) when ``scripts/setup-python-second.sh`` finds it (the Makefile's
``test-second-python``, which ``scripts/run-tests.sh`` runs). pyproject.toml's classifiers must
name exactly those, and this run's Python must be one of them.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    prefix = "Programming Language :: Python :: "
    return {c.removeprefix(prefix) for c in project.get("classifiers", [])
            if c.startswith(prefix) and re.fullmatch(r"3\.\d+", c.removeprefix(prefix))}


def test_pyproject_declares_the_two_versions_the_tests_run_on():
    makefile = (ROOT / "Makefile").read_text()
    second = re.search(r"^VENV2 := \.venv-(3\.\d+)$", makefile, re.M)
    assert second, "the Makefile names no second Python's venv"
    script = (ROOT / "scripts" / "setup-python-second.sh").read_text()
    assert f"SQUALL_SECOND_PYTHON_VERSION:-{second.group(1)}" in script
    recipe = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    runner = (ROOT / "scripts" / "run-tests.sh").read_text()
    assert "scripts/run-tests.sh" in recipe and "test-second-python" in runner, \
        "make test no longer runs the plain-Python pass (test-second-python)"
    assert declared() == {"3.11", second.group(1)}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == ">=3.11"


def test_this_run_is_on_a_declared_version():
    assert f"{sys.version_info[0]}.{sys.version_info[1]}" in declared()
