"""Security item 3: the CLI follows a standby's ``leader`` only to a configured Nimbus.

A standby answers changes with 503 naming the leader it read from the store. Whoever can
write that record (or answers in the standby's place) must not be able to send the
client, with its token, anywhere else.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

from squall.store import open_store
from tests.nimbus.harness import Cli, NimbusProcess, wait_for


class Trap:
    """An HTTP server that records every request it gets."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str | None]] = []
        trap = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):  # noqa: N802
                trap.requests.append((self.path, self.headers.get("Authorization")))
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            do_GET = do_POST  # noqa: N815

        self.httpd = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_sec3_cli_does_not_follow_a_redirect_outside_its_nimbus_set(tmp_path):
    home = tmp_path / "home"
    leader = NimbusProcess(home, tmp_path / "w", name="leader").start()
    standby = None
    trap = Trap()
    try:
        leader.wait_leader()
        standby = NimbusProcess(home, tmp_path / "w", name="standby").start()
        assert standby.health()["leader"] is False
        store = open_store(f"sqlite:{home / 'nimbus.sqlite3'}")
        store.put("nimbus/leader", {"url": trap.url})  # a forged (or stale) leader record
        store.close()
        wait_for(lambda: standby.health()["leader_url"] == trap.url, 10, "the forged record")
        cli = Cli(standby.url, home, tmp_path)
        proc = cli("kill", "wc", "--wait", "0")
        assert trap.requests == [], "the token went to a URL outside the configured Nimbus set"
        assert proc.returncode == 3, proc.stderr
        assert trap.url in proc.stderr and "not one of" in proc.stderr, proc.stderr
        # a leader that is configured is followed
        proc = Cli(f"{standby.url},{leader.url}", home, tmp_path)("kill", "wc", "--wait", "0")
        assert proc.returncode == 4, proc.stderr  # the leader answered: no such topology
    finally:
        trap.close()
        if standby is not None:
            standby.stop()
        leader.stop()
