"""Newcomer finding 13: docs/api.md, the API reference generated from the docstrings, is
current (``python scripts/gen_api.py`` rewrites it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_docs_api_md_is_generated_from_the_docstrings():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_api.py"), "--check"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_reference_has_the_signatures_a_storm_user_needs():
    text = (ROOT / "docs" / "api.md").read_text()
    emit = "emit(self, values: list, anchors: Tuple | list[Tuple] | None = None, stream: str = 'default')"
    assert emit in text
    assert "timeout: float = 900.0" in text  # submit_topology's bound
    assert "### `squall.api.context.TopologyContext(" in text
