"""A real headless Chromium driven over the Chrome DevTools protocol (CDP), from Python.

The browser is Debian's ``chromium`` (installed by scripts/setup-chromium.sh; never
downloaded), started with a fresh profile and the flags this machine needs. The test talks
to one page over its DevTools WebSocket (the ``websockets`` package's sync client):
navigate, evaluate JavaScript, wait for a condition, click, type, take screenshots. Page
exceptions and console errors are collected, so a test can assert the page raised none.
"""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1400,1000", "--remote-debugging-address=127.0.0.1",
         "--remote-debugging-port=0"]


def chromium_path() -> str | None:
    """Debian's chromium, if installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """One headless Chromium process with one page (see the module docstring)."""

    def __init__(self, executable: str, artifacts: Path) -> None:
        self.profile = Path(tempfile.mkdtemp(prefix="squall-chromium-"))
        self.artifacts = artifacts
        artifacts.mkdir(parents=True, exist_ok=True)
        self.log = open(artifacts / "chromium.log", "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen([executable, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
                                     stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.port = self._devtools_port()
        self.ws = self._page_socket()
        self._ids = itertools.count(1)
        self.errors: list[str] = []
        self.call("Page.enable")
        self.call("Runtime.enable")

    def _devtools_port(self, timeout: float = 30.0) -> int:
        active = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited with {self.proc.returncode}; "
                                   f"see {self.artifacts}/chromium.log")
            if active.exists():
                text = active.read_text().split()
                if text:
                    return int(text[0])
            time.sleep(0.1)
        raise RuntimeError(f"chromium did not open its DevTools port within {timeout}s")

    def _page_socket(self) -> ClientConnection:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/list", timeout=10) as resp:
            targets = json.load(resp)
        page = next(t for t in targets if t.get("type") == "page")
        # entered by hand: newer websockets want connect() used as a context manager
        return connect(page["webSocketDebuggerUrl"], max_size=64 << 20, open_timeout=10).__enter__()

    # ---- the protocol ------------------------------------------------------------------

    def call(self, method: str, params: dict | None = None, timeout: float = 30.0) -> dict:
        """One CDP command; its result (events that arrive meanwhile are noted)."""
        msg_id = next(self._ids)
        self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params or {}}))
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"CDP {method} did not answer within {timeout}s")
            msg = json.loads(self.ws.recv(timeout=left))
            if msg.get("id") == msg_id:
                if "error" in msg:
                    raise RuntimeError(f"CDP {method}: {msg['error']}")
                return msg.get("result", {})
            self._event(msg)

    def _event(self, msg: dict) -> None:
        method = msg.get("method")
        params = msg.get("params") or {}
        if method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails") or {}
            text = (details.get("exception") or {}).get("description") or details.get("text")
            self.errors.append(f"exception: {text}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
            self.errors.append("console.error: " + " ".join(str(a.get("value", a.get("description")))
                                                            for a in params.get("args") or []))

    def evaluate(self, expression: str, timeout: float = 30.0) -> Any:
        """The value of a JavaScript expression (promises awaited)."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True}, timeout)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = (details.get("exception") or {}).get("description") or details
            raise RuntimeError(f"JavaScript failed: {text}")
        return result.get("result", {}).get("value")

    # ---- what tests do -----------------------------------------------------------------

    def goto(self, url: str) -> None:
        """Load ``url`` and wait for the document."""
        self.call("Page.navigate", {"url": url})
        self.wait_for("document.readyState === 'complete'", what=f"{url} to load")

    def wait_for(self, expression: str, timeout: float = 30.0, what: str | None = None) -> Any:
        """Poll a JavaScript expression until it is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {what or expression}")
            time.sleep(0.2)

    def wait_selector(self, selector: str, timeout: float = 30.0) -> None:
        """Wait until an element matches ``selector``."""
        self.wait_for(f"!!document.querySelector({json.dumps(selector)})", timeout, what=selector)

    def text(self, selector: str) -> str:
        """The text of the first element matching ``selector`` ('' if none)."""
        return self.evaluate(f"(document.querySelector({json.dumps(selector)}) || {{}}).textContent || ''")

    def click(self, selector: str) -> None:
        """Click the first element matching ``selector`` (which must exist)."""
        found = self.evaluate(f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
                              f" if (!e) return false; e.click(); return true; }})()")
        assert found, f"nothing matches {selector!r}"

    def type(self, selector: str, text: str) -> None:
        """Set the value of the input matching ``selector``."""
        found = self.evaluate(f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
                              f" if (!e) return false; e.value = {json.dumps(text)};"
                              f" e.dispatchEvent(new Event('input')); return true; }})()")
        assert found, f"nothing matches {selector!r}"

    def screenshot(self, name: str) -> Path:
        """Save a full-page PNG under the artifacts folder."""
        metrics = self.call("Page.getLayoutMetrics")
        size = metrics.get("cssContentSize") or metrics.get("contentSize") or {}
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": True}
        if size:
            params["clip"] = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 6000),
                              "scale": 1}
        data = self.call("Page.captureScreenshot", params)["data"]
        path = self.artifacts / f"{name}.png"
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        """Stop the browser and remove its profile."""
        try:
            self.ws.close()
        except Exception:  # noqa: BLE001 - closing a socket of a dying browser may fail
            pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)
