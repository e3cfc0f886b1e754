"""Two Nimbus processes on one store: the UI's Nimbus list, and a standby serving the UI."""

from __future__ import annotations

import json
import urllib.request

import pytest

from tests.nimbus import harness
from tests.nimbus.harness import NimbusProcess, wait_for
from tests.ui.conftest import _env_with_this_squall

pytestmark = [pytest.mark.slow]


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.load(resp)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("ui-standby")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(harness, "base_env", _env_with_this_squall)
        a = NimbusProcess(root / "home", root, name="nimbus-a").start()
        a.wait_leader()
        b = NimbusProcess(root / "home", root, name="nimbus-b").start()
        try:
            yield a, b
        finally:
            a.stop()
            b.stop()


def statuses(url: str) -> dict:
    return {n["url"]: n["status"] for n in get(f"{url}/api/v1/nimbus/summary")["nimbuses"]}


def test_both_nimbuses_are_listed_by_either(pair):
    a, b = pair
    for n in (a, b):
        assert wait_for(lambda n=n: statuses(n.url) == {a.url: "Leader", b.url: "Not a Leader"}, 20,
                        "both Nimbuses registered")
    cluster = get(f"{b.url}/api/v1/cluster/summary")
    assert cluster["leader"] is False and cluster["leaderUrl"] == a.url and cluster["standbys"] == [b.url]
    with urllib.request.urlopen(f"{b.url}/", timeout=10) as resp:  # a standby serves the UI too
        assert resp.status == 200 and b"/ui/app.js" in resp.read()


def test_a_stopped_nimbus_leaves_the_list_and_the_standby_leads(pair):
    a, b = pair
    a.stop()
    b.wait_leader()
    wait_for(lambda: statuses(b.url) == {b.url: "Leader"}, 20, "the list to show the new leader alone")
