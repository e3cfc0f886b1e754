"""Collection settings for the whole tree (tests/conftest.py has the fixtures)."""

from pathlib import Path

from squall import _speedups

# The compiled hot-path modules hold no doctests; collecting their .py files for
# --doctest-modules would import them a second time, beside their compiled builds.
collect_ignore = [str(Path(*m.split(".")).with_suffix(".py")) for m in _speedups.MODULES]

# Hypothesis's per-example deadline is wall time: on a machine loaded by the other test stream
# an example descheduled for 200 ms fails as DeadlineExceeded, a flake that says nothing of the
# code. Every property test runs without one (several set it themselves already).
try:
    from hypothesis import settings
except ImportError:  # the plain-Python pass's interpreter may not have it
    pass
else:
    settings.register_profile("squall", deadline=None)
    settings.load_profile("squall")
