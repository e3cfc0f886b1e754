"""Collection settings for the whole tree (tests/conftest.py has the fixtures)."""

from pathlib import Path

from squall import _speedups

# The compiled hot-path modules hold no doctests; collecting their .py files for
# --doctest-modules would import them a second time, beside their compiled builds.
collect_ignore = [str(Path(*m.split(".")).with_suffix(".py")) for m in _speedups.MODULES]
