"""The documentation site: ``mkdocs build --strict`` of docs/ passes, and fails on a broken
link or a page left out of mkdocs.yml's nav.

Builds run offline into temporary directories (``make docs`` writes site/ the same way).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import squall

ROOT = Path(squall.__file__).resolve().parent.parent


def build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of ``root``'s mkdocs.yml into ``site``."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict",
         "--config-file", str(root / "mkdocs.yml"), "--site-dir", str(site)],
        cwd=root, env=env, capture_output=True, text=True, timeout=300)


def warnings(result: subprocess.CompletedProcess[str]) -> str:
    """mkdocs's log without its banners: the warnings, each with the lines that follow it."""
    lines = (result.stdout + result.stderr).splitlines()
    first = next((i for i, line in enumerate(lines) if "WARNING" in line or "Error" in line), len(lines))
    return "\n".join(lines[first:])


def copy_docs(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "docs", root / "docs")
    shutil.copy(ROOT / "mkdocs.yml", root / "mkdocs.yml")
    return root


def test_docs_site_builds_strict_with_every_page_in_the_nav(tmp_path: Path) -> None:
    result = build(ROOT, tmp_path / "site")
    assert result.returncode == 0, warnings(result) or result.stderr[-2000:]
    site = tmp_path / "site"
    assert (site / "index.html").is_file()
    assert (site / "search" / "search_index.json").is_file()
    pages = sorted(p.relative_to(ROOT / "docs").with_suffix("").as_posix()
                   for p in (ROOT / "docs").rglob("*.md"))
    built = [page for page in pages
             if (site / ("index.html" if page == "index" else f"{page}/index.html")).is_file()]
    assert built == pages


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    root = copy_docs(tmp_path)
    page = root / "docs" / "testing.md"
    page.write_text(page.read_text() + "\nSee [a page that is not there](no-such-page.md).\n")
    result = build(root, tmp_path / "site")
    assert result.returncode != 0
    assert "no-such-page.md" in warnings(result)


def test_a_page_left_out_of_the_nav_fails_the_build(tmp_path: Path) -> None:
    root = copy_docs(tmp_path)
    (root / "docs" / "orphan.md").write_text("# Orphan\n\nIn no nav.\n")
    result = build(root, tmp_path / "site")
    assert result.returncode != 0
    assert "not included in the \"nav\"" in warnings(result)
    assert "orphan.md" in warnings(result)
