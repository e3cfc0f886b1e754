"""The web UI in a real headless Chromium against a real Nimbus running the UI topology.

Each page is loaded, its figures checked against ``squall info``, the graph's nodes and
edges against the topology, deactivate is clicked (the page asks for the token) and the
state change seen both on the page and through ``squall info``; no page may raise a
JavaScript error. Screenshots go to the artifacts folder (see conftest).
"""

from __future__ import annotations

import json

import pytest

from tests.nimbus.harness import wait_for
from tests.ui.browser import Browser, chromium_path
from tests.ui.conftest import NAME, artifacts_dir
from tests.ui.topology_source import COMPONENTS, SECRET_VALUE, STREAMS

CHROMIUM = chromium_path()
pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.browser,
              pytest.mark.skipif(CHROMIUM is None,
                                 reason="needs Debian's chromium (scripts/setup-chromium.sh)")]
PRETTY_WINDOWS = ["10m 0s", "3h 0m 0s", "1d 0h 0m 0s", "All time"]


@pytest.fixture(scope="module")
def browser():
    assert CHROMIUM is not None
    b = Browser(CHROMIUM, artifacts_dir())
    try:
        yield b
    finally:
        b.close()


def cells(browser, table: str, key: str) -> list[str]:
    return browser.evaluate(f"[...document.querySelectorAll('#{table} td[data-key=\"{key}\"]')]"
                            f".map(td => td.textContent)")


def number(text: str) -> int:
    return int(text.replace(",", ""))


def test_cluster_page(world, browser):
    browser.goto(f"{world.url}/")
    browser.wait_selector("#topology-summary")
    info = world.info()
    assert browser.evaluate("[...document.querySelectorAll('#topology-summary .topology-link')]"
                            ".map(a => a.textContent)") == [NAME]
    assert cells(browser, "topology-summary", "id") == [info["id"]]
    assert cells(browser, "topology-summary", "workersTotal") == [str(info["num_workers"])]
    assert cells(browser, "topology-summary", "tasksTotal") == [str(info["num_tasks"])]
    assert browser.text("#topology-summary [data-status]") == "ACTIVE"
    assert cells(browser, "nimbus-summary", "status") == ["Leader"]
    assert cells(browser, "cluster-summary", "leaderUrl") == [world.url]
    assert number(cells(browser, "cluster-summary", "slotsUsed")[0]) == 2
    assert browser.text("#token-state") == "no token (read only)"
    browser.screenshot("cluster")
    assert browser.errors == []


def test_topology_page_figures_graph_and_errors(world, browser):
    browser.goto(f"{world.url}/#/topology/{NAME}")
    browser.wait_selector("#topology-graph")
    before = world.info()
    # errors and tracebacks are shown only with the token (they can hold tuple values)
    browser.evaluate(f"sessionStorage.setItem('squall.token', {json.dumps(world.token)})")
    browser.evaluate("render(false)")  # a fresh render between two infos: figures in between
    browser.wait_selector("#bolts")
    after = world.info()
    assert browser.text("#topology-name") == NAME
    ids = browser.evaluate("[...document.querySelectorAll('#bolts .component-link')].map(a => a.textContent)")
    assert sorted(ids) == ["count", "report", "split", "total"]
    executed = dict(zip(ids, map(number, cells(browser, "bolts", "executed")), strict=True))
    for bolt, n in executed.items():
        assert before["components"][bolt]["executed"] <= n <= after["components"][bolt]["executed"], bolt
    emitted = number(cells(browser, "spouts", "emitted")[0])
    spout0, spout1 = before["components"]["sentences"], after["components"]["sentences"]
    assert spout0["emitted"] <= emitted <= spout1["emitted"]
    assert cells(browser, "topology-stats", "windowPretty") == PRETTY_WINDOWS
    # the graph: every component a node, every subscription an edge with its stream and grouping
    nodes = browser.evaluate("Object.fromEntries([...document.querySelectorAll('#topology-graph .node')]"
                             ".map(n => [n.dataset.component, n.dataset.kind]))")
    assert nodes == COMPONENTS
    edges = browser.evaluate("[...document.querySelectorAll('#topology-graph .edge')].map(e => "
                             "[e.dataset.source, e.dataset.target, e.dataset.stream, e.dataset.grouping, "
                             "e.querySelector('text').textContent])")
    assert {(s, t): (stream, grouping) for s, t, stream, grouping, _ in edges} == STREAMS
    for _, _, stream, grouping, label in edges:
        assert label.startswith(f"{stream} [{grouping}")
    # charts from the history, workers, errors with tracebacks, configuration without secrets
    browser.wait_selector("#chart-throughput polyline")
    lines = browser.evaluate("document.querySelectorAll('#chart-throughput polyline').length")
    assert lines == len(COMPONENTS)
    assert sorted(cells(browser, "workers", "pid")) == sorted(str(w["pid"]) for w in after["workers"])
    assert "refused on purpose" in browser.text("#errors summary")
    assert "Traceback" in browser.text("#errors pre")
    config = browser.text("#configuration")
    assert "topology.message.timeout.secs" in config and SECRET_VALUE not in config
    browser.screenshot("topology")
    assert browser.errors == []


def test_topology_page_shows_the_autoscale_decisions(world, browser):
    wait_for(lambda: (world.info().get("autoscale") or {}).get("windows"), timeout=60,
             what="an autoscale window")
    # The page may still show the render of an earlier test (the same address is only a
    # fragment change, and it redraws every 10 s), and a decision may come between its fetch
    # and ours: after a fresh render it must show every decision made before that render,
    # and none the master had not made once it was done.
    browser.goto(f"{world.url}/#/topology/{NAME}")
    browser.wait_selector("#autoscale")
    before = len(world.info()["autoscale"]["decisions"])
    browser.evaluate("render(false)")
    browser.wait_selector("#autoscale")
    after = len(world.info()["autoscale"]["decisions"])
    assert "Autoscale (recommend)" in browser.text("body")
    states = cells(browser, "autoscale", "state")
    assert before <= len(states) <= after
    if states:
        assert set(states) == {"recommended"}
    else:
        assert "No change decided in" in browser.text("#autoscale")
    assert browser.errors == []


def test_component_page(world, browser):
    browser.goto(f"{world.url}/#/topology/{NAME}/component/count")
    browser.wait_selector("#executor-stats")
    info = world.info()
    assert browser.text("#component-name") == "count"
    tasks = [int(t) for t in cells(browser, "executor-stats", "task")]
    assert tasks == info["components"]["count"]["tasks"]
    assert cells(browser, "input-stats", "grouping") == ["fields"]
    assert cells(browser, "input-stats", "stream") == ["words"]
    assert cells(browser, "component-stats", "windowPretty") == PRETTY_WINDOWS
    browser.wait_selector("#chart-capacity polyline")
    browser.screenshot("component")
    browser.goto(f"{world.url}/#/topology/{NAME}/component/total")
    browser.wait_selector("#errors")
    assert "refused on purpose" in browser.text("#errors")
    assert browser.errors == []


def test_deactivate_asks_for_the_token_and_changes_the_state(world, browser):
    browser.goto(f"{world.url}/#/topology/{NAME}")
    browser.wait_selector("#deactivate")
    browser.evaluate("sessionStorage.clear()")
    browser.click("#deactivate")
    browser.wait_for("document.getElementById('token-dialog').open", what="the token dialog")
    browser.type("#token-input", "not-the-token")
    browser.click("#token-ok")
    browser.wait_selector("#flash-error")
    assert "token is wrong" in browser.text("#flash-error")
    assert world.info()["status"] == "ACTIVE"  # nothing changed without the right token

    browser.click("#deactivate")
    browser.wait_for("document.getElementById('token-dialog').open", what="the token dialog")
    browser.type("#token-input", world.token)
    browser.click("#token-ok")
    browser.wait_selector("#flash-ok")
    assert world.info()["status"] == "INACTIVE"
    browser.wait_for("document.querySelector('#topology-info [data-status]').textContent === 'INACTIVE'",
                     what="the page to show INACTIVE")
    browser.screenshot("topology-deactivated")

    browser.click("#activate")  # the token is remembered in this tab
    wait_for(lambda: world.info()["status"] == "ACTIVE", 30, "the topology to be active again")
    browser.wait_for("document.querySelector('#topology-info [data-status]').textContent === 'ACTIVE'",
                     what="the page to show ACTIVE")
    assert browser.errors == []


def test_sampling_from_the_component_page(world, browser):
    browser.goto(f"{world.url}/#/topology/{NAME}/component/split")
    # the hash changed in the same document: wait for this page, not the last one's buttons
    browser.wait_for("(document.querySelector('#component-name') || {}).textContent === 'split'",
                     what="the component page")
    browser.wait_selector("#debug-on")
    if not browser.evaluate("sessionStorage.getItem('squall.token')"):
        browser.evaluate(f"sessionStorage.setItem('squall.token', {world.token!r})")
    assert browser.text("#debug-state") == "Sampling is off."
    assert "counter" in browser.text("#user-metrics")  # split's user metric "words"
    browser.type("#debug-pct", "100")
    browser.click("#debug-on")
    browser.wait_for("document.querySelector('#debug-state').textContent.startsWith('Sampling 100%')",
                     what="sampling to be on")
    browser.click("#show-samples")
    wait_for(lambda: (browser.click("#show-samples") or True) and browser.evaluate(
        "document.querySelectorAll('#samples tbody tr').length") > 0, 20, "samples on the page")
    components = browser.evaluate("[...document.querySelectorAll('#samples tbody tr td:nth-child(2)')]"
                                  ".map(td => td.textContent)")
    assert set(components) == {"split"}
    split_tasks = {str(t) for t in world.info()["components"]["split"]["tasks"]}
    assert set(cells(browser, "samples", "task")) <= split_tasks  # each names its emitting task
    # split emits on two streams: each has its own row and counts (issue 31)
    assert sorted(cells(browser, "output-stats", "stream")) == ["lengths", "words"]
    assert all(number(e) > 0 for e in cells(browser, "output-stats", "emitted"))
    page = world.get(f"/api/v1/topology/{NAME}")
    assert page["debug"] is True and page["samplingPct"] == 100.0
    assert world.get(f"/api/v1/topology/{NAME}/component/count")["debug"] is False  # split's only
    browser.screenshot("component-samples")
    browser.click("#debug-off")
    browser.wait_for("document.querySelector('#debug-state').textContent === 'Sampling is off.'",
                     what="sampling to be off")
    assert world.get(f"/api/v1/topology/{NAME}")["debug"] is False
    assert browser.errors == []


def test_page_loads_nothing_from_elsewhere(world, browser):
    status, headers, body = world.raw("/")
    assert status == 200 and "default-src 'self'" in headers["Content-Security-Policy"]
    page = body.decode()
    assert "http://" not in page and "https://" not in page
    for asset in ("app.js", "style.css"):
        status, _, body = world.raw(f"/ui/{asset}")
        assert status == 200
        assert b"https://" not in body and b"cdn" not in body.lower()
    assert world.raw("/ui/..%2Fserver.py")[0] == 404
    assert world.raw("/ui/nope.js")[0] == 404
