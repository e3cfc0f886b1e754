"""Nimbus's token: who may change anything or upload code.

The token is made on the first start (32 random bytes, URL-safe) in a file that only its
owner can read (mode 0600, in a 0700 directory). Clients send it as
``Authorization: Bearer <token>``; the command line reads it from ``$SQUALL_TOKEN`` or the
same file. Reads (list, info, errors, the OpenAPI document) need no token.
"""

from __future__ import annotations

import hmac
import logging
import os
import secrets
from pathlib import Path

from squall.nimbus.errors import Forbidden, Unauthorized

log = logging.getLogger("squall.nimbus.auth")


def load_or_create_token(path: str | os.PathLike) -> str:
    """The token in ``path``, made there first if the file does not exist."""
    p = Path(path)
    if p.exists():
        token = p.read_text().strip()
        if token:
            return token
    p.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    token = secrets.token_urlsafe(32)
    # O_EXCL: two Nimbus processes starting together on a shared directory make one token
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return p.read_text().strip()
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    log.info("Nimbus token written to %s (readable by its owner only)", p)
    return token


def check_token(expected: str, header: str | None, what: str, peer: str) -> None:
    """Raise ``Unauthorized`` or ``Forbidden`` unless ``header`` is ``Bearer <expected>``."""
    if not header:
        log.warning("refused %s from %s: no token", what, peer)
        raise Unauthorized(f"{what} needs the Nimbus token (Authorization: Bearer ...; the squall "
                           f"command reads $SQUALL_TOKEN or the token file)")
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), expected.encode()):
        log.warning("refused %s from %s: wrong token", what, peer)
        raise Forbidden(f"{what}: the token is wrong")
