"""Security item 8: reads without the token show no secrets, store paths or tracebacks.

Anyone who reaches Nimbus can GET; errors carry tracebacks with tuple values and the
cluster view named the store and blob directory. Those now need the token.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

from squall.store import open_store
from tests.nimbus.harness import NimbusProcess

TRACE = "Traceback (most recent call last): ValueError: bad tuple ('4111-1111-1111-1111', 3)"


def get(url: str, token: str | None = None) -> tuple[int, dict]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    req = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def record(name: str) -> dict:
    return {"name": name, "id": f"{name}-1700000000-abcdef", "secret": "ab" * 32, "status": "ACTIVE",
            "active": True, "version": 1, "versions": [1], "workers": None, "num_workers": 1,
            "parallelism": {}, "epoch": 1, "upgrade": None, "spark_master": "local[2]",
            "submitted": time.time(), "state": "RUNNING", "restarts": 1, "last_error": TRACE,
            "message_timeout_secs": 30.0}


def test_sec8_unauthenticated_reads_hide_secrets_paths_and_tracebacks(tmp_path):
    home = tmp_path / "home"
    nimbus = NimbusProcess(home, tmp_path / "w").start()
    try:
        nimbus.wait_leader()
        token = (home / "nimbus.token").read_text().strip()
        store = open_store(f"sqlite:{home / 'nimbus.sqlite3'}")
        store.put("topologies/wc", record("wc"))
        store.put("masters/wc", {"epoch": 1, "state": "STOPPED", "error": TRACE, "pid": 1})
        store.close()
        api = f"{nimbus.url}/api/v1"
        for path in ("/health", "/cluster", "/topologies", "/topologies/wc", "/openapi.json"):
            status, body = get(api + path)
            text = json.dumps(body)
            assert status == 200, (path, body)
            for leak in (str(home), "ab" * 32, "4111-1111", "Traceback", token):
                assert leak not in text, (path, leak, text[:500])
        status, body = get(api + "/topologies/wc/errors")
        assert status == 401, body
        # the token holder sees it all
        status, body = get(api + "/cluster", token)
        assert status == 200 and str(home) in json.dumps(body)
        status, body = get(api + "/topologies/wc", token)
        assert status == 200 and "4111-1111" in json.dumps(body)
        assert get(api + "/topologies/wc/errors", token)[0] == 200
    finally:
        nimbus.stop()
