"""Errors of multilang components."""

from __future__ import annotations


class MultilangError(RuntimeError):
    """The subprocess broke the multilang protocol, or reported an error through it."""


class SubprocessDiedError(MultilangError):
    """The subprocess exited, or stopped heartbeating, and was killed (it is restarted)."""
