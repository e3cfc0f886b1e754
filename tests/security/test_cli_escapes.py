"""Security second pass, findings 11 and 12: what the command line shows and opens.

11: ``squall ui --open`` opened the leader URL read from the store (whoever writes the
leader record chooses it) without the trusted-URL check the client applies before sending
the token. 12: ``squall errors`` and ``squall logs`` printed error texts and log lines raw,
so tuple data with escape sequences (OSC 52 writes the clipboard) reached the operator's
terminal. The commands run as processes against an in-process Nimbus.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time

from squall.store import keys as K
from squall.store.taskrecords import errors_record
from tests.nimbus import harness
from tests.security.inproc import TOKEN, InProcNimbus

OSC52 = "\x1b]52;c;cm0gLXJmIH4=\x07"
TITLE = "\x1b]0;pwned\x07"


def squall(home, url: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {**harness.base_env(home), "SQUALL_NIMBUS": url, "SQUALL_TOKEN": TOKEN, **(env or {})}
    return subprocess.run([sys.executable, "-m", "squall.cli.main", *args], env=full, capture_output=True,
                          text=True, timeout=120)


def test_errors_and_logs_print_escape_sequences_escaped(tmp_path):
    log = tmp_path / "master.log"
    log.write_text(f"INFO tuple ('{OSC52}hello',)\nINFO \x1b[2J\x1b[Hcleared\tscreen\n")
    with InProcNimbus(tmp_path / "n") as n:
        n.add_topology("wc", {"topology.workers": 1})
        rec = n.store.get(K.topology_key("wc"))
        n.store.put(K.topology_key("wc"), {**rec, "launcher": {"log": str(log), "pid": 4194301}})
        n.store.put(K.task_errors_key("wc"), errors_record(1, [{
            "component": "count", "task": 3, "time": time.time(),
            "message": f"ValueError: bad record {TITLE}{OSC52}", "traceback": f"Traceback ...\n{OSC52}"}]))
        url = f"http://127.0.0.1:{n.port}"
        errors = squall(tmp_path, url, "errors", "wc", "--traceback")
        logs = squall(tmp_path, url, "logs", "wc")
    assert errors.returncode == 0, errors.stderr
    assert logs.returncode == 0, logs.stderr
    for out in (errors.stdout, logs.stdout):
        assert "\x1b" not in out and "\x07" not in out, repr(out)
    assert "\\x1b]52;c;cm0gLXJmIH4=\\x07" in errors.stdout and "\\x1b]0;pwned\\x07" in errors.stdout
    assert "\\x1b[2J\\x1b[Hcleared\tscreen\n" in logs.stdout  # tab and newline stay


def browser(tmp_path):
    """A $BROWSER that records the URL it is asked to open."""
    opened = tmp_path / "opened.txt"
    script = tmp_path / "browser.sh"
    script.write_text(f'#!/bin/sh\necho "$1" >> {opened}\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return {"BROWSER": str(script), "DISPLAY": ""}, opened


def test_ui_open_refuses_a_leader_url_outside_the_configured_ones(tmp_path):
    env, opened = browser(tmp_path)
    # the leader record names a look-alike page (whoever writes the store chooses it)
    with InProcNimbus(tmp_path / "n", url="http://nimbus-look-alike.example:6627") as n:
        out = squall(tmp_path, f"http://127.0.0.1:{n.port}", "ui", "--open", env=env)
    assert out.returncode == 3, (out.returncode, out.stdout, out.stderr)
    assert "nimbus-look-alike.example" in out.stderr and "not one of the configured" in out.stderr
    assert not opened.exists(), opened.read_text()


def test_ui_open_opens_a_configured_url(tmp_path):
    env, opened = browser(tmp_path)
    with InProcNimbus(tmp_path / "n") as n:
        url = f"http://127.0.0.1:{n.port}"
        out = squall(tmp_path, url, "ui", "--open", env=env)
    assert out.returncode == 0, out.stderr
    deadline = time.monotonic() + 10  # webbrowser may run the browser in the background
    while not opened.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert opened.read_text().strip() == f"{url}/"


def test_printable_escapes_c1_and_bidi_controls():
    from squall.cli.terminal import printable

    assert printable("a\x9b31mb\u202ec\td\n") == "a\\x9b31mb\\u202ec\td\n"
    assert os.linesep not in printable("\r")
