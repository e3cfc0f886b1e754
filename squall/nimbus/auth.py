"""Nimbus's token: who may change anything, upload code or read what is private.

The token is made on the first start (32 random bytes, URL-safe) in a file that only its
owner can read (mode 0600, in a 0700 directory). It is written atomically: to a temporary
file in the same directory, flushed to disk (``fsync``), then linked into place, so a
crash or a second Nimbus starting at the same moment never sees a half-written token;
of two creators racing, one link wins and both use its token.

A token file that exists but is empty or cannot be read is an error: Nimbus refuses to
start rather than run with no token (an empty token would let ``Authorization: Bearer``
with nothing after it through, and uploads are unpickled).

Clients send the token as ``Authorization: Bearer <token>``; the command line reads it
from ``$SQUALL_TOKEN`` or the same file, and refuses a file that others can read.
"""

from __future__ import annotations

import hmac
import logging
import os
import secrets
import stat
import tempfile
from pathlib import Path

from squall.nimbus.errors import Forbidden, Unauthorized

log = logging.getLogger("squall.nimbus.auth")
MIN_TOKEN_CHARS = 16


class TokenError(RuntimeError):
    """The token file cannot be used; the message names the file and the fix."""


def private_dir(path: str | os.PathLike) -> Path:
    """``path`` as a directory only its owner can enter (0700), made or tightened."""
    p = Path(path)
    p.mkdir(parents=True, exist_ok=True, mode=0o700)
    if stat.S_IMODE(p.stat().st_mode) != 0o700:
        os.chmod(p, 0o700)  # an existing directory is tightened too: it holds secrets
    return p


def _read(p: Path) -> str:
    try:
        token = p.read_text().strip()
    except (OSError, UnicodeDecodeError) as e:
        raise TokenError(f"cannot read the Nimbus token file {p}: {getattr(e, 'strerror', None) or e}; "
                         f"fix or delete it (a new token is made when it is missing)") from None
    if not token:
        raise TokenError(f"the Nimbus token file {p} is empty, which would disable authentication; "
                         f"delete it to have a new token made, or write a token into it")
    if len(token) < MIN_TOKEN_CHARS:
        raise TokenError(f"the Nimbus token in {p} is too short ({len(token)} characters, at least "
                         f"{MIN_TOKEN_CHARS}); delete the file to have a new token made")
    return token


def load_or_create_token(path: str | os.PathLike) -> str:
    """The token in ``path``, made there first (atomically) if the file does not exist."""
    p = Path(path)
    if os.path.lexists(p):
        return _read(p)
    private_dir(p.parent)
    token = secrets.token_urlsafe(32)
    fd, tmp = tempfile.mkstemp(prefix=".nimbus.token.", dir=p.parent)  # mode 0600
    try:
        with os.fdopen(fd, "w") as f:
            f.write(token + "\n")
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, p)  # never replaces: of two racing creators, one wins
        except FileExistsError:
            return _read(p)
        dfd = os.open(p.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)  # the link itself survives a crash
        finally:
            os.close(dfd)
    finally:
        os.unlink(tmp)
    log.info("Nimbus token written to %s (readable by its owner only)", p)
    return token


def check_token(expected: str, header: str | None, what: str, peer: str) -> None:
    """Raise ``Unauthorized`` or ``Forbidden`` unless ``header`` is ``Bearer <expected>``."""
    if not expected:  # never: Nimbus does not start without a token; defence in depth
        raise Unauthorized(f"{what}: this Nimbus has no token and accepts no changes")
    if not header:
        log.warning("refused %s from %s: no token", what, peer)
        raise Unauthorized(f"{what} needs the Nimbus token (Authorization: Bearer ...; the squall "
                           f"command reads $SQUALL_TOKEN or the token file)")
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), expected.encode()):
        log.warning("refused %s from %s: wrong token", what, peer)
        raise Forbidden(f"{what}: the token is wrong")


def token_matches(expected: str, header: str | None) -> bool:
    """True if ``header`` carries the token (for reads that show more to its holders)."""
    if not expected or not header:
        return False
    scheme, _, given = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), expected.encode())
