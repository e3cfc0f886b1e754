"""What a read without the token may show: no secrets, no paths, no error texts.

Reads are open so that anyone on the network can see what runs (Storm's UI shows as
much). But errors carry tracebacks, and tracebacks carry tuple values; the cluster view
names the store (its path or ZooKeeper hosts) and the blob directory; records hold the
topology's secret; a topology's configuration can hold passwords inside its values (a
JSON string, a JAAS line, a URL's ``user:password@``). ``public`` strips those from a
response for a caller without the token; the holder of the token sees everything but the
secrets in a configuration (``squall.api.redaction``, applied for everyone).

>>> public({"store": "sqlite:/x", "url": "u", "errors": [{"error": "boom"}],
...         "components": {"c": {"errors": 2}}, "last_error": "Traceback ..."})
{'url': 'u', 'errors': [], 'components': {'c': {'errors': 2}}, 'last_error': '(needs the token)'}
>>> public({"configuration": {"squall.conf.cluster.file": "/etc/s.yaml", "x": "redis://:pw@h"}})
{'configuration': {'squall.conf.cluster.file': '(needs the token)', 'x': 'redis://:*****@h'}}
"""

from __future__ import annotations

import json
import re
from typing import Any

from squall.api.redaction import redact, redact_text

# the store, paths on Nimbus's host, launch details; the ``nimbus.*`` forms are Storm's
# cluster configuration page's
DROPPED = frozenset({"secret", "store", "blob_dir", "log", "log_dir", "launcher", "token", "token_file",
                     "nimbus.store", "nimbus.blob.dir", "nimbus.log.dir", "nimbus.token.file"})
TEXTS = frozenset({"error", "last_error", "reason", "lastError", "lastWorkerError"})  # camelCase: Storm's API
ERRORS = frozenset({"errors", "componentErrors"})
HIDDEN = "(needs the token)"
# a configuration's paths on the hosts (the cluster file, a LocalStateProvider's directory...)
PATH_KEY = re.compile(r"(^|[._-])(path|dir|directory|file|location)s?$", re.I)


def public(body: Any) -> Any:
    """``body`` without what only the token's holder may read (see the module docstring)."""
    if isinstance(body, dict):
        out: dict[str, Any] = {}
        for key, value in body.items():
            if key in DROPPED:
                continue
            if key in TEXTS and isinstance(value, str) and value:
                out[key] = HIDDEN
            elif key in ERRORS and isinstance(value, list):
                out[key] = []  # component errors: their tracebacks hold tuple values
            elif key in ERRORS and isinstance(value, dict):
                out[key] = {}  # a gauge's errors by task: texts too
            elif key == "configuration" and isinstance(value, dict):
                out[key] = _paths_hidden(redact(value))
            else:
                out[key] = public(value)
        return out
    if isinstance(body, list):
        return [public(v) for v in body]
    if isinstance(body, str):
        return redact_text(body)
    return body


def _paths_hidden(conf: Any) -> Any:
    """``conf`` with the values of path-like keys hidden (at any depth, in JSON strings too)."""
    if isinstance(conf, dict):
        return {k: HIDDEN if isinstance(k, str) and PATH_KEY.search(k) and isinstance(v, str) and v
                else _paths_hidden(v) for k, v in conf.items()}
    if isinstance(conf, list):
        return [_paths_hidden(v) for v in conf]
    if isinstance(conf, str) and conf.strip()[:1] == "{":
        try:
            parsed = json.loads(conf)
        except ValueError:
            return conf
        return json.dumps(_paths_hidden(parsed)) if isinstance(parsed, dict) else conf
    return conf
