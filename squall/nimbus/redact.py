"""What a read without the token may show: no secrets, no paths, no error texts.

Reads are open so that anyone on the network can see what runs (Storm's UI shows as
much). But errors carry tracebacks, and tracebacks carry tuple values; the cluster view
names the store (its path or ZooKeeper hosts) and the blob directory; records hold the
topology's secret. ``public`` strips those from a response for a caller without the
token; the holder of the token sees everything.

>>> public({"store": "sqlite:/x", "url": "u", "errors": [{"error": "boom"}],
...         "components": {"c": {"errors": 2}}, "last_error": "Traceback ..."})
{'url': 'u', 'errors': [], 'components': {'c': {'errors': 2}}, 'last_error': '(needs the token)'}
"""

from __future__ import annotations

from typing import Any

DROPPED = frozenset({"secret", "store", "blob_dir", "log", "log_dir", "launcher", "token", "token_file"})
TEXTS = frozenset({"error", "last_error", "reason", "lastError"})  # lastError: Storm's API
HIDDEN = "(needs the token)"


def public(body: Any) -> Any:
    """``body`` without what only the token's holder may read (see the module docstring)."""
    if isinstance(body, dict):
        out: dict[str, Any] = {}
        for key, value in body.items():
            if key in DROPPED:
                continue
            if key in TEXTS and isinstance(value, str) and value:
                out[key] = HIDDEN
            elif key in ("errors", "componentErrors") and isinstance(value, list):
                out[key] = []  # component errors: their tracebacks hold tuple values
            else:
                out[key] = public(value)
        return out
    if isinstance(body, list):
        return [public(v) for v in body]
    return body
