"""Issue 43 part 3: every ``squall submit|local|upgrade`` command the README, docs/ and the
examples show runs as written, from the checkout's root, through a launcher that imports
squall the way the ``squall`` console script does (the checkout itself is not on the path).

Without a Nimbus to talk to, ``submit`` and ``upgrade FILE`` get ``--dry-run`` added: the
file is loaded, its parameters passed, its configuration checked and its plan printed, which
is everything the client does before it uploads. ``local`` runs as written. Commands with
no FILE (``upgrade NAME --worker-num 1``) need a running topology and are not run here.
Synopsis lines (with ``[optional]`` parts) and placeholder file names are skipped.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLACEHOLDERS = {"topology.py", "topology.yaml"}  # "your file" in docs/deploy.md and docs/flux.md
LAUNCHER = """\
import sys
sys.path.insert(0, {root!r})
from squall.cli.main import main
sys.path.remove({root!r})  # as the console script: squall importable, the checkout not
sys.exit(main())
"""
ASSIGNMENT = re.compile(r"[A-Z_][A-Z0-9_]*=\S*")


EXPORT = re.compile(r"^[#\s]*export ([A-Z_][A-Z0-9_]*=\S+)")


def documented() -> list[tuple[str, str]]:
    """(where, command) for each squall submit/local/upgrade line of the docs and examples.

    An ``export NAME=VALUE`` line shown before a command in the same file is put in front of it.
    """
    out = []
    for md in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        fenced, exports = False, []
        for i, line in enumerate(md.read_text().splitlines(), 1):
            if line.startswith("```"):
                fenced = not fenced
                continue
            if fenced and EXPORT.match(line):
                exports.append(EXPORT.match(line).group(1))  # type: ignore[union-attr]
            words = line.split(" #")[0].split()
            while words and ASSIGNMENT.fullmatch(words[0]):
                words = words[1:]
            if fenced and words[:1] == ["squall"] and words[1:2] in (["submit"], ["local"], ["upgrade"]):
                out.append((f"{md.relative_to(ROOT)}:{i}", " ".join([*exports, line.split(" #")[0].strip()])))
    for f in sorted((ROOT / "examples").glob("*")):
        if f.suffix not in (".py", ".yaml"):
            continue
        exports = []
        for i, line in enumerate(f.read_text().splitlines(), 1):
            if EXPORT.match(line):
                exports.append(EXPORT.match(line).group(1))  # type: ignore[union-attr]
            m = re.match(r"^[#\s]*((?:[A-Z_]+=\S+ )*squall (?:submit|local|upgrade) .*?)(\s+#.*)?$", line)
            if m:
                out.append((f"{f.relative_to(ROOT)}:{i}", " ".join([*exports, m.group(1).strip()])))
    return out


COMMANDS = documented()


def test_the_docs_show_commands():
    assert len(COMMANDS) >= 8, COMMANDS


def _file_of(args: list[str]) -> str | None:
    files = [a for a in args if a.endswith((".py", ".yaml", ".yml"))]
    return files[0] if files else None


@pytest.mark.slow
@pytest.mark.parametrize("where, command", COMMANDS, ids=[w for w, _ in COMMANDS])
def test_documented_command_runs_as_written(where, command, tmp_path):
    words = shlex.split(command)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(SQUALL_HOME=str(tmp_path / "home"), SQUALL_PURE_PYTHON="1")
    while ASSIGNMENT.fullmatch(words[0]):
        key, _, value = words.pop(0).partition("=")
        env[key] = str(tmp_path / Path(value).name) if value.startswith("/tmp/") else value
    assert words[0] == "squall"
    args = words[1:]
    if "[" in command:
        pytest.skip("a synopsis, not a command")
    file = _file_of(args)
    if file is None:
        pytest.skip("needs a running topology")
    if Path(file).name in PLACEHOLDERS:
        pytest.skip(f"{file} stands for the reader's file")
    assert (ROOT / file).is_file(), f"{where}: {file} does not exist (run from the checkout's root)"
    if args[0] in ("submit", "upgrade") and "--dry-run" not in args:
        args.append("--dry-run")
    launcher = tmp_path / "squall_launcher.py"
    launcher.write_text(LAUNCHER.format(root=str(ROOT)))
    run = subprocess.run([sys.executable, str(launcher), *args], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, f"{where}: {command}\n{run.stderr[-2000:]}"
