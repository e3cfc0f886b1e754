"""Secrets out of what is shown: configuration values hidden by their key and by their value.

One place decides what is a secret, for every reader that must not see one (Nimbus's open
reads, the web UI, ``/metrics``, the multilang handshake, logs). A value is hidden when
its key names a secret (``password``, ``topology.state.key``, ``sasl.jaas.config``,
``ssl.key.pem``, a keystore...), and a value under an innocent key is searched too: a
JSON string (Storm's ``topology.state.provider.config`` form) is parsed and redacted
inside, a JAAS line's ``password="..."``, a PEM block and a URL's ``user:password@``
are hidden in place.
"""

from __future__ import annotations

import json
import re
from typing import Any

REDACTED = "*****"
SECRET_KEY = re.compile(
    r"pass(word|wd|phrase)?|secret|token|credential|private|api[._-]?key|auth|state[._-]?key|jaas"
    r"|pem|keystore|truststore|ssl[._-].*key|sasl[._-].*(password|config)|signing|cookie", re.I)
# password="..." / password='...' / password=... inside a JAAS line or a connection string
_ASSIGNED = re.compile(r"""(?i)\b((?:[a-z_.-]*)(?:pass(?:word|wd)?|secret|token|api[._-]?key|credential)
                           [a-z_.-]*["']?\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s;,&"'}]+)""", re.X)
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/@\s:]*):([^/@\s]*)@")
_PEM = re.compile(r"-----BEGIN [A-Z0-9 ]+-----.*?(-----END [A-Z0-9 ]+-----|$)", re.S)


def secret_key(key: Any) -> bool:
    """True when a configuration key names a secret (``password``, ``topology.state.key``...)."""
    return isinstance(key, str) and SECRET_KEY.search(key) is not None


def redact_text(text: str) -> str:
    """``text`` with the secrets it holds hidden: a JSON object's, JAAS/``k=v`` passwords, URL passwords, PEM.

    >>> redact_text('org.apache.kafka.common.security.plain.PlainLoginModule required '
    ...             'username="u" password="pw";')
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="*****";'
    >>> redact_text("redis://:pw@host:6379/0")
    'redis://:*****@host:6379/0'
    >>> redact_text('{"host": "h", "password": "pw"}')
    '{"host": "h", "password": "*****"}'
    """
    stripped = text.strip()
    if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"):
        try:
            parsed = json.loads(stripped)
        except ValueError:
            pass
        else:
            if isinstance(parsed, (dict, list)):
                return json.dumps(redact(parsed))
    out = _PEM.sub(REDACTED, text)
    out = _URL_USERINFO.sub(lambda m: f"{m.group(1)}{m.group(2)}:{REDACTED}@", out)
    return _ASSIGNED.sub(lambda m: m.group(1) + _quoted(m.group(2)), out)


def _quoted(value: str) -> str:
    return f"{value[0]}{REDACTED}{value[0]}" if value[:1] in ("'", '"') else REDACTED


def redact(conf: Any) -> Any:
    """``conf`` with every secret hidden, at any depth: by key (the whole value), by value (in place).

    >>> redact({"redis": {"host": "h", "password": "p"}, "topology.workers": 2,
    ...         "topology.state.key": "k", "url": "redis://u:p@h"})
    {'redis': {'host': 'h', 'password': '*****'}, 'topology.workers': 2, 'topology.state.key': '*****', \
'url': 'redis://u:*****@h'}
    """
    if isinstance(conf, dict):
        return {k: REDACTED if secret_key(k) and v is not None and v != "" and not isinstance(v, bool)
                else redact(v) for k, v in conf.items()}
    if isinstance(conf, (list, tuple)):
        return [redact(v) for v in conf]
    if isinstance(conf, str):
        return redact_text(conf)
    return conf
