"""Untrusted text made safe for the operator's terminal.

Error messages, tracebacks and log lines carry tuple values, which anyone who writes to a
source can choose. Printed raw, an escape sequence among them would act on the terminal:
OSC 52 writes the clipboard, others retitle the window, move the cursor, or hide what came
before. ``printable`` shows every such character escaped instead.
"""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides that
# reorder what is shown (Trojan Source)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    r"""``text`` with terminal control characters shown as escapes (tab and newline kept).

    >>> printable("bad \x1b]52;c;aGk=\x07 value\r\n")
    'bad \\x1b]52;c;aGk=\\x07 value\\x0d\n'
    """
    return _CONTROL.sub(_escaped, text)


def _escaped(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
