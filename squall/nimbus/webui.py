"""The web UI's files, shipped in the package (``squall/nimbus/ui/``), and non-JSON answers.

Nimbus serves the page at ``/`` and its assets at ``/ui/<file>``; nothing is loaded from
elsewhere (the Content-Security-Policy says so to the browser too). ``Raw`` is an answer
that is not JSON (the page, an asset, the Prometheus text, a log).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources

from squall.nimbus.errors import NotFound

TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
         ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml", ".ico": "image/x-icon"}
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")


@dataclass(frozen=True)
class Raw:
    """A non-JSON answer."""

    body: bytes
    content_type: str
    headers: dict[str, str] = field(default_factory=dict)


def asset(name: str) -> Raw:
    """The packaged UI file ``name`` (a plain file name), or ``NotFound``."""
    if not name or "/" in name or "\\" in name or name.startswith("."):
        raise NotFound(f"no UI file {name!r}")
    suffix = name[name.rfind("."):] if "." in name else ""
    if suffix not in TYPES:
        raise NotFound(f"no UI file {name!r}")
    path = resources.files("squall.nimbus").joinpath("ui", name)
    if not path.is_file():
        raise NotFound(f"no UI file {name!r}")
    return Raw(path.read_bytes(), TYPES[suffix], {
        "Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY", "Cache-Control": "no-cache"})


def page() -> Raw:
    """The UI's single page."""
    return asset("index.html")
